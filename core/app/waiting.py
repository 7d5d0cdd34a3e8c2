"""Parking: an agent waits on one ask, or on several (all of them closed, or any), woken by
the change itself (core/app/waiters.py), never by polling the store. A wake-up that is not a
close (another process's NOTIFY of an escalation) only makes it look again.

A parked wait holds as little as it can, since thousands are parked at once (bench/: 10,000):
the asks' ids and seqs, one future and one timer; not their rows, which are read again when it
wakes, or handed over by the change that woke it."""

from __future__ import annotations

import asyncio

from core.app.parts import Parts
from core.app.waiters import Woken
from core.domain import vocabulary
from store import asks as q
from store.models import AskRow

MAX_ASKS = 100


def _settled(rows: list[AskRow], until_all: bool) -> bool:
    closed = [row.status != vocabulary.OPEN for row in rows]
    return all(closed) if until_all else any(closed)


def _expire(future: Woken) -> None:
    if not future.done():
        future.set_result(None)


async def wait(parts: Parts, rows: list[AskRow], timeout: float, until_all: bool = True) -> list[AskRow]:
    """`rows` as they stand once all (or any) are no longer open, or after `timeout` (or at
    once when the process is stopping), in the order given. The caller should not keep `rows`
    while this runs (the route does not): that is what a parked wait would hold."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seqs = [row.seq or 0 for row in rows]
    ids = {row.id for row in rows}
    current: list[AskRow] | None = rows
    del rows
    waiters = parts.signals.waiters
    while current is None or not (_settled(current, until_all) or parts.signals.closing):
        if loop.time() >= deadline:
            break
        future = waiters.park(ids)
        timer = loop.call_at(deadline, _expire, future)
        try:
            # Read again under watch: a change between the last read and now is not missed.
            current = await reread(parts, seqs)
            if _settled(current, until_all) or parts.signals.closing:
                break
            current = None
            handed = await future
        finally:
            timer.cancel()
            waiters.unpark(future, ids)
        # A change in this process hands the changed row over: for one ask, that is all there
        # is to know; otherwise (another process's change, the timeout) the rows are read again.
        if handed is not None and len(seqs) == 1:
            current = [handed]
    return current if current is not None else await reread(parts, seqs)


async def reread(parts: Parts, seqs: list[int]) -> list[AskRow]:
    """The asks of `seqs` as the store has them now, in the same order."""
    async with parts.store.read() as conn:
        found = {row.seq: row for row in await q.by_seqs(conn, seqs)}
    return [found[seq] for seq in seqs]
