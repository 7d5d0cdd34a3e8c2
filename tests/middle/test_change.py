"""The unit of work (core/app/change.py) on a real store, both stores: a change writes what
must go with its decision in its own transaction, and only after the commit wakes, pokes,
counts and logs; a change rolled back does none of it; the store decides one winner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.app import asking, reading
from core.app.parts import Parts
from core.app.ports import AskRow
from core.app.tally import Tally
from core.domain import rules
from core.domain.policy import Defaults
from core.domain.responders import OPERATOR
from core.domain.types import AlreadySeen, Seen
from store import events as event_rows
from store.db import Store
from store.outbox import OUTBOX
from store.rates import OPEN

CLOSE_VALUES = {"status": rules.WITHDRAWN, "due_at": None}


class Everywhere:
    """A surface that wants every action on every ask: it shows which rows a change wrote."""

    name = "everywhere"

    def wants(self, ask: AskRow, action: str) -> bool:
        return True

    def reaches(self, responder: Any, work: Any) -> bool:
        return True


class Recorder(Tally):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def created(self, ask: AskRow) -> None:
        self.seen.append(("created", ask.id))

    def closed(self, ask: AskRow, status: str, at: float) -> None:
        self.seen.append((status, ask.id))


@pytest.fixture
async def parts(database_url: str) -> AsyncIterator[Parts]:
    store = Store(database_url)
    await store.open()
    built = Parts.build(store, Defaults())
    built.places.add(Everywhere())  # type: ignore[arg-type]
    try:
        yield built
    finally:
        await built.batcher.close()
        await store.close()


async def new_ask(parts: Parts) -> AskRow:
    now = parts.clock.now()
    values = asking.new_ask_values("a", rules.QUESTION, None, [OPERATOR], now, now + 3600)
    values.update({"question": "Ship?"})
    return await asking.insert(parts, values, {"agent": "a"})


async def outbox_actions(parts: Parts, ask: AskRow) -> list[str]:
    async with parts.store.read() as conn:
        rows = (await conn.execute(
            OUTBOX.select().where(OUTBOX.c.ask_seq == ask.seq).order_by(OUTBOX.c.id)
        )).all()
    return [row.action for row in rows]


async def open_count(parts: Parts, agent: str) -> int:
    async with parts.store.read() as conn:
        found = await conn.scalar(OPEN.select().with_only_columns(OPEN.c.open).where(
            OPEN.c.agent == agent))
    return int(found or 0)


async def event_names(parts: Parts, ask: AskRow) -> list[str]:
    async with parts.store.read() as conn:
        rows = await event_rows.after(conn, 0, ask.agent, 100)
    return [row[1] for row in rows if row[2].seq == ask.seq]


async def test_a_close_writes_what_goes_with_it_and_wakes_only_after_its_commit(
    parts: Parts,
) -> None:
    recorder = Recorder()
    parts.tally.add(recorder)
    ask = await new_ask(parts)
    assert await open_count(parts, "a") == 1
    with parts.signals.waiters.watch(ask.id) as woken:
        parts.signals.events_poke.clear()
        parts.signals.outbox_poke.clear()
        async with parts.change(ask) as ch:
            assert await ch.close_if_open({**CLOSE_VALUES, "closed_at": ch.now})
            ch.history("withdrawn", {"by": "test"})
            # Inside the transaction nothing is told yet: a rollback must leave no trace.
            assert not woken.done() and ("withdrawn", ask.id) not in recorder.seen
            assert not parts.signals.outbox_poke.is_set()
        closed = await asyncio.wait_for(woken, 1)
    assert closed is not None and closed.status == rules.WITHDRAWN
    assert recorder.seen == [("created", ask.id), (rules.WITHDRAWN, ask.id)]
    assert parts.signals.outbox_poke.is_set() and parts.signals.events_poke.is_set()
    assert await outbox_actions(parts, ask) == ["post", "close"]
    assert await open_count(parts, "a") == 0
    assert await event_names(parts, ask) == ["ask.created", "ask.withdrawn"]
    history = await reading.history(parts, ask.seq or 0)
    assert [entry["event"] for entry in history] == ["created", "withdrawn"]


async def test_a_change_rolled_back_writes_and_tells_nothing(parts: Parts) -> None:
    recorder = Recorder()
    parts.tally.add(recorder)
    ask = await new_ask(parts)
    with parts.signals.waiters.watch(ask.id) as woken:
        parts.signals.outbox_poke.clear()
        with pytest.raises(RuntimeError):
            async with parts.change(ask) as ch:
                assert await ch.close_if_open({**CLOSE_VALUES, "closed_at": ch.now})
                ch.history("withdrawn", {"by": "test"})
                raise RuntimeError("the process failed mid-change")
        await asyncio.sleep(0)
        assert not woken.done()
    assert recorder.seen == [("created", ask.id)]
    assert not parts.signals.outbox_poke.is_set()
    found = await reading.by_seq(parts, ask.seq or 0)
    assert found is not None and found.status == rules.OPEN
    assert await outbox_actions(parts, ask) == ["post"]
    assert await open_count(parts, "a") == 1
    assert await event_names(parts, ask) == ["ask.created"]


async def test_the_store_decides_one_winner(parts: Parts) -> None:
    ask = await new_ask(parts)
    wins = []
    for _ in range(2):
        async with parts.change(ask) as ch:
            wins.append(await ch.close_if_open({**CLOSE_VALUES, "closed_at": ch.now}))
    assert wins == [True, False]
    assert await outbox_actions(parts, ask) == ["post", "close"]
    assert await open_count(parts, "a") == 0  # counted down once


async def test_an_event_seen_before_changes_nothing(parts: Parts) -> None:
    ask = await new_ask(parts)
    seen = Seen("comment:1", "test")
    async with parts.change(ask, seen) as ch:
        ch.history("refused", {"by": "test", "why": "ambiguous"})
    with pytest.raises(AlreadySeen):
        async with parts.change(ask, seen) as ch:
            ch.history("refused", {"by": "test", "why": "ambiguous"})
    history = await reading.history(parts, ask.seq or 0)
    assert [entry["event"] for entry in history] == ["created", "refused"]
