"""A sensitive answer reaches its agent once, by whatever route the agent reads it, and is erased
from the store by that read: get, wait, list, and a repeated create with the same key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, Aye, eventually

SECRET = "hunter2-correct-horse"
ERASED = {"value": None, "option": None, "note": None, "erased": True}


async def answered_secret(aye: Aye, **body: Any) -> dict[str, Any]:
    ask = await aye.ask(question="Which password?", sensitive=True, **body)
    assert (await aye.answer(ask["ref"], SECRET, note="rotate it monthly"))[0] == 200
    return ask


async def assert_erased_in_store(aye: Aye, ask: dict[str, Any]) -> None:
    async def erased() -> bool:
        row = await aye.asks.find(ask["id"])
        return row is not None and row.erased

    await eventually(erased)  # the read erases once its response is out, a moment after
    row = await aye.asks.find(ask["id"])
    assert row is not None
    assert (row.answer_value, row.answer_option, row.answer_note) == (None, None, None)
    history = (await aye.get(ask["id"], operator=True))["history"]
    assert [e["event"] for e in history] == ["created", "answered", "read"]
    assert history[-1]["erased"] is True
    assert SECRET not in json.dumps(history)


async def listed(aye: Aye, ask_id: str) -> dict[str, Any]:
    resp = await aye.client.get("/v1/asks", headers=AGENT_HEADERS)
    assert resp.status == 200
    page = await resp.json()
    return next(a for a in page["asks"] if a["id"] == ask_id)  # type: ignore[no-any-return]


async def test_listing_reads_and_erases_a_sensitive_answer(aye: Aye) -> None:
    ask = await answered_secret(aye)
    first = await listed(aye, ask["id"])
    assert first["answer"] == {"value": SECRET, "option": None, "note": "rotate it monthly"}
    await assert_erased_in_store(aye, ask)
    assert (await listed(aye, ask["id"]))["answer"] == ERASED
    assert (await aye.get(ask["id"]))["answer"] == ERASED


async def test_operator_listing_erases_nothing(aye: Aye) -> None:
    ask = await answered_secret(aye)
    page = await (await aye.client.get("/v1/asks", headers=OPERATOR_HEADERS)).json()
    assert page["asks"][0]["answer"]["hidden"] is True
    assert SECRET not in json.dumps(page)
    assert (await aye.get(ask["id"]))["answer"]["value"] == SECRET  # the agent's one read


async def test_repeated_create_with_the_key_reads_and_erases(aye: Aye) -> None:
    body = {"key": "password-1"}
    ask = await answered_secret(aye, **body)
    again = await aye.ask(expect=200, question="Which password?", sensitive=True, **body)
    assert again["id"] == ask["id"]
    assert again["answer"] == {"value": SECRET, "option": None, "note": "rotate it monthly"}
    await assert_erased_in_store(aye, ask)
    third = await aye.ask(expect=200, question="Which password?", sensitive=True, **body)
    assert third["answer"] == ERASED
    assert (await listed(aye, ask["id"]))["answer"] == ERASED


async def test_a_get_after_the_list_shows_it_erased(aye: Aye) -> None:
    ask = await answered_secret(aye)
    await listed(aye, ask["id"])
    resp = await aye.client.get(f"/v1/asks/{ask['id']}/wait?timeout=0", headers=AGENT_HEADERS)
    assert (await resp.json())["answer"] == ERASED


async def test_repeated_create_of_an_open_ask_changes_nothing(aye: Aye) -> None:
    ask = await aye.ask(question="Which password?", sensitive=True, key="open-1")
    again = await aye.ask(expect=200, question="Which password?", sensitive=True, key="open-1")
    assert again == ask
    assert (await aye.answer(ask["ref"], SECRET))[0] == 200
    assert (await aye.get(ask["id"]))["answer"]["value"] == SECRET
    assert (await aye.get(ask["id"]))["answer"] == ERASED


async def test_reads_racing_for_a_sensitive_answer_show_it_once(aye: Aye) -> None:
    """Two reads that both found the value before either erased it: only the read that erased
    it shows it; the store decides which."""
    ask = await aye.ask(question="The code?", sensitive=True)
    assert (await aye.answer(ask["id"], "4242"))[0] == 200
    reads = await asyncio.gather(
        *(aye.client.get(f"/v1/asks/{ask['id']}", headers=AGENT_HEADERS) for _ in range(10)),
        aye.client.get("/v1/asks", headers=AGENT_HEADERS),
    )
    bodies = [await r.json() for r in reads]
    shown = [b for b in bodies[:-1] if b["answer"]["value"] == "4242"]
    listed = [a for a in bodies[-1]["asks"] if a["id"] == ask["id"] and a["answer"]["value"]]
    assert len(shown) + len(listed) == 1
