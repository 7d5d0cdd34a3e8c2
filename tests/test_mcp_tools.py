"""The MCP tools' own rules: the schemas made from the API's models, the argument limits, how
an approval that ends without approving reads, DNS-rebinding names, and waits that end because
aye stops or time runs out (the real app over `/mcp`, the clock moved by hand)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest

from ask_api.http import ApiError
from ask_api.mcp.arguments import Arguments, checked, input_schema
from ask_api.mcp.http import transport_security
from ask_api.mcp.tools import refusal
from core.app.timing import ManualClock
from tests.test_mcp_http import GATED, Aye, connected, open_asks, parked_ask, result, start_mcp_aye


@pytest.fixture
async def gated(tmp_path: Any) -> AsyncIterator[Aye]:
    aye = await start_mcp_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATED, ManualClock())
    yield aye
    await aye.client.close()


# -- schemas and arguments ------------------------------------------------------------------


def test_the_schemas_are_plain_json_schema_and_describe_every_argument() -> None:
    arguments = Arguments.build()
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


# -- waits that end without an answer -------------------------------------------------------


async def test_a_wait_ends_with_the_ask_open_when_aye_stops(gated: Aye) -> None:
    async with connected(gated) as client:
        call = asyncio.create_task(client.call_tool("ask", {"question": "Q?", "wait_s": 300}))
        ask = await parked_ask(gated)
        gated.asks.release_waiters()  # what SIGTERM does first
        got = result(await asyncio.wait_for(call, 5))
    assert got["status"] == "open" and got["id"] == ask["id"]


async def test_an_approval_nobody_gives_in_time_is_refused_as_timed_out(gated: Aye) -> None:
    assert isinstance(gated.clock, ManualClock)
    async with connected(gated) as client:
        call = asyncio.create_task(client.call_tool(
            "request_approval", {"operation": "deploy.prod", "input": {}, "wait_s": 60}))
        ask = await parked_ask(gated)
        gated.clock.advance(2 * 3600 + 1)
        await gated.tick()
        got = result(await asyncio.wait_for(call, 5))
    assert got["decision"] == "refuse" and got["error"] == "approval_timed_out"
    assert got["approval"] == ask["id"]


async def test_a_withdrawn_approval_is_not_an_allow(gated: Aye) -> None:
    async with connected(gated) as client:
        call = asyncio.create_task(client.call_tool(
            "request_approval", {"operation": "deploy.prod", "input": {"v": 1}, "wait_s": 60}))
        ask = await parked_ask(gated)
        resp = await gated.client.delete(f"/v1/asks/{ask['ref']}", headers={
            "Authorization": "Bearer op-test-token"})
        assert resp.status == 200
        got = result(await asyncio.wait_for(call, 5))
    assert got["decision"] == "refuse" and got["error"] == "approval_withdrawn"
    assert await open_asks(gated) == []


async def test_an_agent_s_limits_hold_over_mcp(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AYE_TOKEN_BUSY", "token-busy")
    config = {**GATED, "agents": [{"name": "busy", "token_env": "AYE_TOKEN_BUSY", "max_open": 1,
                                   "asks_per_minute": 2}]}
    # A clock that stands still: every hit falls in one minute's window.
    aye = await start_mcp_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config, ManualClock())
    try:
        async with connected(aye, token="token-busy") as client:
            assert result(await client.call_tool("ask", {"question": "One?", "wait_s": 0}))
            full = await client.call_tool("ask", {"question": "Two?", "wait_s": 0})
            assert full.is_error and full.content[0].text.startswith("too_many_open_asks: ")
            assert full.content[0].text.endswith("try again in 10 s")
            assert result(await client.call_tool("request_approval", {"operation": "build"}))
            fast = await client.call_tool("request_approval", {"operation": "build"})
            assert fast.is_error and fast.content[0].text.startswith("rate_limited: ")
    finally:
        await aye.client.close()
