"""An external ask is bound to its request: its schema pins a required property with `const`
(or a one-value `enum`), so that a signed delivery meant for one ask cannot answer another.
Through the real API and door, on both stores."""

from __future__ import annotations

from typing import Any

import pytest

from core.domain.payloads import pinned
from tests.conftest import StartAye
from tests.e2e.test_external import door_path, post, started

BASE = {"question": "Wait for the contract to be signed", "format": "external",
        "verifier": "docsign"}


def pin(reference: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"reference": reference, "status": {"type": "string"}},
            "required": ["reference", "status"], **extra}


UNPINNED = {
    "any payload at all": {},
    "an object, nothing required": {"type": "object"},
    "required, not fixed": pin({"type": "string"}),
    "fixed, not required": {"type": "object", "properties": {"reference": {"const": "inv-42"}}},
    "two values": pin({"enum": ["inv-42", "inv-43"]}),
    "no type: a string fits it": {"properties": {"reference": {"const": "inv-42"}},
                                  "required": ["reference"]},
    "the pin in one branch only": {"type": "object", "anyOf": [
        {"properties": {"reference": {"const": "inv-42"}}, "required": ["reference"]}, {}]},
    "the pin one level down": {"type": "object", "required": ["doc"], "properties": {
        "doc": {"type": "object", "properties": {"reference": {"const": "inv-42"}}}}},
}


@pytest.mark.parametrize("schema", list(UNPINNED.values()), ids=list(UNPINNED))
def test_only_a_required_top_level_property_fixed_to_one_value_pins(schema: dict[str, Any]) -> None:
    assert not pinned(schema)


async def test_an_unpinned_schema_is_422_saying_to_pin_with_const(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    for why, schema in UNPINNED.items():
        err = await aye.ask(422, **BASE, schema=schema)
        assert (err["error"], err["field"]) == ("invalid_field", "schema"), (why, err)
        assert "pin the request with `const`" in err["message"], err
    resp = await aye.client.get("/v1/asks", headers=aye.headers)
    assert (await resp.json())["asks"] == []  # nothing asked, no door opened


async def test_a_const_or_a_one_value_enum_pins(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    by_enum = await aye.ask(**BASE, schema=pin({"enum": ["inv-7"]}))
    by_const = await aye.ask(**BASE, schema=pin({"const": 42}))
    assert by_enum["status"] == by_const["status"] == "open"
    assert await post(aye, door_path(by_enum), {"reference": "inv-7", "status": "x"}) == (
        200, {"outcome": "taken"})


async def test_a_delivery_captured_for_one_ask_does_not_answer_another(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    first = await aye.ask(**BASE, schema=pin({"const": "inv-1"}))
    second = await aye.ask(**BASE, schema=pin({"const": "inv-2"}))
    payload = {"reference": "inv-1", "status": "signed"}
    assert await post(aye, door_path(first), payload) == (200, {"outcome": "taken"})
    # The same signed bytes, replayed at the other ask's door.
    status, body = await post(aye, door_path(second), payload)
    assert (status, body["error"], body["field"]) == (400, "invalid_payload", "payload.reference")
    assert "inv-2" not in body["message"]  # what the ask expects is not told
    view = await aye.get(second["id"], operator=True)
    assert view["status"] == "open" and view["ticket"] == "waiting"
    assert await post(aye, door_path(second), {"reference": "inv-2", "status": "signed"}) == (
        200, {"outcome": "taken"})
    # And no ask that any delivery fits can be opened for the captured one to land in.
    loose = pin({"type": "string"})
    assert (await aye.ask(422, **BASE, schema=loose))["field"] == "schema"
