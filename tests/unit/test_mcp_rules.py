"""The MCP tools' own rules, as pure functions: the schemas made from the API's models, the
argument limits, how an approval that ends without approving reads, and DNS-rebinding names.
The waits that end because aye stops or time runs out, over the real app's `/mcp`, are
tests/e2e/test_mcp_tools.py's."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from ask_api.http import ApiError
from ask_api.mcp.arguments import Arguments, checked, input_schema
from ask_api.mcp.http import transport_security
from ask_api.mcp.tools import refusal
from bot.surfaces import KINDS

# -- schemas and arguments ------------------------------------------------------------------


def test_the_schemas_are_plain_json_schema_and_describe_every_argument() -> None:
    arguments = Arguments.build(KINDS)
    for model in (arguments.ask, arguments.call, arguments.wait):
        schema = input_schema(model, {})
        jsonschema.Draft202012Validator.check_schema(schema)
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    ask = input_schema(arguments.ask, {"question": "What to ask."})
    assert ask["properties"]["question"]["description"] == "What to ask."
    assert ask["properties"]["sensitive"] == {"default": False, "type": "boolean"}
    # An optional field reads as its own type; the validator still takes null, as the API does.
    assert ask["properties"]["context"] == {"maxLength": 3000, "type": "string"}
    valid = jsonschema.Draft202012Validator(ask)
    assert valid.is_valid({"question": "Go?", "work": {"github": {"repo": "o/r", "number": 4}}})
    assert not valid.is_valid({"question": "Go?", "wait_s": 301})
    assert not valid.is_valid({"question": "Go?", "surprise": 1})


def test_arguments_are_held_to_the_api_s_body_limits() -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = [deep]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"question": "q", "context": "x" * 70_000}, "body_too_large"),
        ({"operation": "op", "input": deep}, "malformed_body"),
        ({"question": "a\ud800"}, "invalid_field"),
        ({"operation": "op", "input": {"n": float("nan")}}, "invalid_field"),
    ]
    for raw, code in cases:
        with pytest.raises(ApiError) as refused:
            checked(raw)
        assert refused.value.code == code
    assert checked(None) == {}
    assert checked({"question": "fine", "input": [1, 2.5, None]}) == {
        "question": "fine", "input": [1, 2.5, None]}


def test_an_approval_that_ends_without_approving_reads_as_a_refusal() -> None:
    base = {"id": "a1id", "kind": "approval"}
    assert refusal({**base, "status": "open"}) is None
    assert refusal({**base, "status": "answered", "outcome": "approved"}) is None
    refused = refusal({**base, "status": "answered", "outcome": "approval_refused",
                       "by": "slack:U1", "answer": {"value": "refuse", "note": "no"}})
    assert refused is not None
    assert (refused["decision"], refused["error"], refused["by"], refused["note"]) == (
        "refuse", "approval_refused", "slack:U1", "no")
    timed_out = refusal({**base, "status": "expired", "outcome": "approval_timed_out"})
    assert timed_out is not None and timed_out["error"] == "approval_timed_out"
    withdrawn = refusal({**base, "status": "withdrawn", "outcome": None})
    assert withdrawn is not None and withdrawn["error"] == "approval_withdrawn"


# -- DNS rebinding ----------------------------------------------------------------------------


def test_aye_s_own_names_pass_the_host_check_at_any_port() -> None:
    local = transport_security("127.0.0.1")
    assert local.enable_dns_rebinding_protection
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "localhost"} <= set(local.allowed_hosts)
    public = transport_security("127.0.0.1", "https://aye.example.com")
    assert {"aye.example.com", "aye.example.com:*"} <= set(public.allowed_hosts)
    assert "https://aye.example.com" in public.allowed_origins
    named = transport_security("10.0.0.5")
    assert "10.0.0.5:*" in named.allowed_hosts
    assert "[::1]:*" in transport_security("::1").allowed_hosts
    # Bound to every address, aye is reached by names it cannot know: no Host check there.
    assert not transport_security("0.0.0.0", "https://aye.example.com").enable_dns_rebinding_protection
    assert not transport_security("::").enable_dns_rebinding_protection
