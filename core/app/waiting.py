"""Parking: an agent waits on one ask, or on several (all of them closed, or any), woken by
the change itself (core/app/waiters.py), never by polling the store. A wake-up that is not a
close (another process's NOTIFY of an escalation) only makes it look again."""

from __future__ import annotations

import asyncio
import contextlib

from core.app.parts import Parts
from core.domain import rules
from store import asks as q
from store.models import AskRow

MAX_ASKS = 100


def _settled(rows: list[AskRow], until_all: bool) -> bool:
    closed = [row.status != rules.OPEN for row in rows]
    return all(closed) if until_all else any(closed)


async def wait(parts: Parts, rows: list[AskRow], timeout: float, until_all: bool = True) -> list[AskRow]:
    """`rows` as they stand once all (or any) are no longer open, or after `timeout` (or at
    once when the process is stopping), in the order given."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    current = rows
    while not _settled(current, until_all) and not parts.signals.closing:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        with contextlib.ExitStack() as watching:
            woken = [watching.enter_context(parts.signals.waiters.watch(i)) for i in {r.id for r in rows}]
            # Read again under watch: a change between the last read and now is not missed.
            # An unchanged row stays the caller's: one copy of it a parked wait (bench/).
            current = [row if fresh == row else fresh
                       for row, fresh in zip(rows, await reread(parts, rows), strict=True)]
            if _settled(current, until_all):
                break
            done, _ = await asyncio.wait(woken, timeout=remaining,
                                         return_when=asyncio.FIRST_COMPLETED)
            handed = {row.id: row for f in done if (row := f.result()) is not None}
        # A change in this process hands the closed row over; another process's needs a read.
        current = [handed.get(r.id, r) for r in current]
        if not all(r.id in handed for r in current if r.status == rules.OPEN):
            current = await reread(parts, current)
    return current


async def reread(parts: Parts, rows: list[AskRow]) -> list[AskRow]:
    """The rows as the store has them now, in the same order."""
    async with parts.store.read() as conn:
        found = {row.seq: row for row in await q.by_seqs(conn, [r.seq or 0 for r in rows])}
    return [found.get(row.seq, row) for row in rows]
