"""The agents' reads ride on the next change (core/app/reads.py) and the audit chain is appended
from a head each process keeps (store/append.py), on both stores: a read is recorded once, in
its place before the change that carried it, or alone when no change comes; a change rolled
back gives its reads back; two processes appending in turn leave one unbroken chain."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.app import answers, auditing, reading, reads
from core.app.parts import Parts
from core.app.ports import AskRow
from core.domain.answering import Attempt
from core.domain.policy import Defaults
from core.domain.responders import OPERATOR
from store import append
from store.db import Store
from tests.middle.test_change import new_ask


@pytest.fixture
async def two(database_url: str) -> AsyncIterator[tuple[Parts, Parts]]:
    """Two processes' parts on one store (on SQLite, one process may open it twice)."""
    stores = [Store(database_url), Store(database_url)]
    for store in stores:
        await store.open()
    built = (Parts.build(stores[0], Defaults()), Parts.build(stores[1], Defaults()))
    try:
        yield built
    finally:
        for parts, store in zip(built, stores, strict=True):
            await parts.reads.close()
            await parts.batcher.close()
            await store.close()


async def answered(parts: Parts) -> AskRow:
    ask = await new_ask(parts)
    result = await answers.answer(parts, ask, Attempt(OPERATOR), "yes")
    assert result.taken and result.ask is not None
    return result.ask


async def events(parts: Parts, ask: AskRow) -> list[str]:
    return [entry["event"] for entry in await reading.history(parts, ask.seq or 0)]


async def test_a_read_rides_on_the_next_change_once(two: tuple[Parts, Parts]) -> None:
    parts, _ = two
    first = await answered(parts)
    reading.read_later(parts, first)
    reading.read_later(parts, first)  # the same read twice is one
    second = await answered(parts)  # its change carries the read, before its own entries
    assert await events(parts, first) == ["created", "answered", "read"]
    entries = [e async for e in auditing.walk(parts.store)]
    assert [e["event"] for e in entries][-3:] == ["read", "created", "answered"]
    assert entries[-3]["ask"] == first.id and entries[-1]["ask"] == second.id
    assert (await reading.by_seq(parts, first.seq or 0)).read_at is not None  # type: ignore[union-attr]
    reading.read_later(parts, first)  # read already, as this row says: nothing more
    await parts.reads.close()
    assert await events(parts, first) == ["created", "answered", "read"]
    assert (await auditing.verify(parts.store)).broken_at is None


async def test_a_read_no_change_carries_is_written_alone(
    two: tuple[Parts, Parts], monkeypatch: pytest.MonkeyPatch
) -> None:
    parts, _ = two
    monkeypatch.setattr(reads, "LINGER_S", 0.01)
    ask = await answered(parts)
    reading.read_later(parts, ask)
    assert parts.reads._task is not None
    await parts.reads._task
    assert await events(parts, ask) == ["created", "answered", "read"]


async def test_a_change_rolled_back_gives_its_reads_back(two: tuple[Parts, Parts]) -> None:
    parts, _ = two
    ask = await answered(parts)
    reading.read_later(parts, ask)
    with pytest.raises(RuntimeError):
        async with parts.change(ask) as ch:
            ch.history("withdrawn", {"by": "x"})
            ch.carry(parts.reads.take())
            raise RuntimeError("the change fails")
    assert await events(parts, ask) == ["created", "answered"]
    await parts.reads.close()  # written alone
    assert await events(parts, ask) == ["created", "answered", "read"]


async def test_two_processes_appending_in_turn_leave_one_chain(two: tuple[Parts, Parts]) -> None:
    one, other = two
    made = []
    for turn in range(6):  # each append finds the other's head moved past its own
        made.append(await answered(one if turn % 2 else other))
        reading.read_later(one if turn % 3 else other, made[-1])
    for parts in two:
        await parts.reads.close()
    checked = await auditing.verify(one.store)
    assert checked.broken_at is None, checked.why
    assert checked.count == 6 * 3  # created, answered and read of each


async def test_a_head_left_by_an_append_rolled_back_is_not_trusted(two: tuple[Parts, Parts]) -> None:
    """A process whose append was rolled back (its commit never came) holds a head the store
    does not: when another process has since written that very place, the next append must
    chain after what the store holds, not after the entry that was never committed."""
    one, other = two
    ask = await answered(one)
    entry = {"ask_seq": ask.seq, "at": one.clock.now(), "event": "read", "detail": {}}
    with pytest.raises(RuntimeError):
        async with one.store.write() as conn:
            await append.append(conn, one.change.head, [entry], [ask.id], [], [],
                                one.store.is_postgres)
            raise RuntimeError("the commit never comes")
    async with other.store.write() as conn:  # writes the one place the rolled-back entry had
        await append.append(conn, other.change.head, [{**entry, "event": "reminded"}], [ask.id], [], [],
                            other.store.is_postgres)
    await answered(one)
    checked = await auditing.verify(one.store)
    assert checked.broken_at is None, checked.why
