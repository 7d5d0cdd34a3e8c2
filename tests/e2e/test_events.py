"""The event stream, GET /v1/events: what each caller sees, resuming with Last-Event-ID
(across a reconnect, a restart, and two processes on one store), heartbeats, and the stop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

import ask_api.sse
from ask_api.tokens import TokenBook
from bot.config import Config
from core.app.timing import ManualClock
from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, OPERATOR_TOKEN, Aye, StartAye

ESCALATING = {"gates": [{"operations": ["db."], "responders": ["operator:local"], "timeout": "1h",
                         "escalate": {"responders": ["operator:local"], "timeout": "1h"}}]}


class Stream:
    """An SSE client over a real socket: its events as (id, name, data)."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp
        self.comments = 0

    async def next(self, timeout: float = 5) -> tuple[int, str, dict[str, Any]]:
        return await asyncio.wait_for(self._next(), timeout)

    async def _next(self) -> tuple[int, str, dict[str, Any]]:
        fields: dict[str, str] = {}
        while True:
            line = (await self.resp.content.readline()).decode().rstrip("\n")
            if line.startswith(":"):
                self.comments += 1
            elif line:
                name, _, value = line.partition(": ")
                fields[name] = value
            elif "data" in fields:
                return int(fields["id"]), fields["event"], json.loads(fields["data"])
            if self.resp.content.at_eof():
                raise EOFError

    async def names(self, count: int) -> list[tuple[str, str]]:
        return [(name, data["ref"]) for _, name, data in [await self.next() for _ in range(count)]]


async def open_stream(aye: Aye, headers: dict[str, str], last: int | None = None) -> Stream:
    extra = {"Last-Event-ID": str(last)} if last is not None else {}
    resp = await aye.client.get("/v1/events", headers={**headers, **extra})
    assert resp.status == 200 and resp.headers["Content-Type"] == "text/event-stream"
    return Stream(resp)


async def test_the_operator_sees_every_change(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_aye(database_url, Config.model_validate(ESCALATING), manual_clock)
    stream = await open_stream(aye, OPERATOR_HEADERS)
    one = await aye.ask(question="Ship?", options=["yes", "no"])
    two = await aye.ask(question="Why?")
    await aye.answer(one["ref"], "yes")
    await aye.client.delete(f"/v1/asks/{two['id']}", headers=AGENT_HEADERS)
    three = await aye.ask(question="Soon?", timeout_s=60)
    resp = await aye.client.post("/v1/calls", json={"operation": "db.drop"}, headers=AGENT_HEADERS)
    approval = (await resp.json())["ask"]
    manual_clock.advance(3600)
    await aye.tick()
    seen = await stream.names(8)
    assert seen == [
        ("ask.created", one["ref"]), ("ask.created", two["ref"]), ("ask.answered", one["ref"]),
        ("ask.withdrawn", two["ref"]), ("ask.created", three["ref"]),
        ("ask.created", approval["ref"]), ("ask.expired", three["ref"]),
        ("ask.escalated", approval["ref"]),
    ]


async def test_event_data_is_the_ask_as_the_caller_sees_it(aye: Aye) -> None:
    operator = await open_stream(aye, OPERATOR_HEADERS)
    agent = await open_stream(aye, AGENT_HEADERS)
    ask = await aye.ask(question="Ship?", options=["yes", "no"])
    await aye.answer(ask["ref"], "no")
    for stream in (operator, agent):
        await stream.next()
        _, name, data = await stream.next()
        assert name == "ask.answered" and data["answer"]["value"] == "no"
    assert "history" not in data and "answered_by" not in data  # the agent's view


async def test_a_sensitive_value_never_reaches_a_stream(aye: Aye) -> None:
    agent = await open_stream(aye, AGENT_HEADERS)
    ask = await aye.ask(question="PIN?", sensitive=True)
    await aye.answer(ask["ref"], "2468")
    await agent.next()
    _, _, data = await agent.next()
    assert data["answer"]["hidden"] is True and "2468" not in json.dumps(data)
    assert (await aye.get(ask["id"]))["answer"]["value"] == "2468"  # the read still has it


async def test_an_agent_sees_its_own_asks_only(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AYE_TOKEN_A", "token-a")
    monkeypatch.setenv("AYE_TOKEN_B", "token-b")
    config = Config.model_validate({"agents": [
        {"name": "a", "token_env": "AYE_TOKEN_A"}, {"name": "b", "token_env": "AYE_TOKEN_B"}]})
    aye = await start_aye(database_url, config, tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    a, b = {"Authorization": "Bearer token-a"}, {"Authorization": "Bearer token-b"}
    stream = await open_stream(aye, b)
    await aye.ask(headers=a, question="a's")
    mine = await aye.ask(headers=b, question="b's")
    _, name, data = await stream.next()
    assert (name, data["id"]) == ("ask.created", mine["id"])


async def test_resume_with_last_event_id_after_a_reconnect_and_a_restart(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url)
    stream = await open_stream(aye, OPERATOR_HEADERS)
    first = await aye.ask(question="one")
    last, _, _ = await stream.next()
    stream.resp.close()
    second = await aye.ask(question="two")
    await aye.answer(first["ref"], "done")
    later = await start_aye(database_url)  # another process on the same store, or a restart
    resumed = await open_stream(later, OPERATOR_HEADERS, last)
    assert await resumed.names(2) == [("ask.created", second["ref"]), ("ask.answered", first["ref"])]
    if "postgresql" in database_url:  # two processes share one store on PostgreSQL only
        third = await aye.ask(question="three")  # made by the first, seen by the second
        assert await resumed.names(1) == [("ask.created", third["ref"])]


async def test_a_fresh_stream_starts_now(aye: Aye) -> None:
    await aye.ask(question="before")
    stream = await open_stream(aye, OPERATOR_HEADERS)
    after = await aye.ask(question="after")
    assert await stream.names(1) == [("ask.created", after["ref"])]


async def test_heartbeats_keep_it_open(aye: Aye, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ask_api.sse, "HEARTBEAT_S", 0.1)
    stream = await open_stream(aye, OPERATOR_HEADERS)
    with pytest.raises(TimeoutError):
        await stream.next(0.5)
    assert stream.comments >= 2


async def test_no_token_is_401_and_stopping_ends_streams(aye: Aye) -> None:
    assert (await aye.client.get("/v1/events")).status == 401
    bad = {"Authorization": "Bearer nope"}
    assert (await aye.client.get("/v1/events", headers=bad)).status == 401
    stream = await open_stream(aye, AGENT_HEADERS)
    await asyncio.sleep(0)  # the handler is subscribed once the response has started
    assert aye.asks.release_waiters() >= 1
    with pytest.raises(EOFError):
        await stream.next()
