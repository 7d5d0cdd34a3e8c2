"""The agent's reads of asks that hold no sensitive answer, recorded after their responses
without a transaction of their own: the next change of this process that writes to the audit
chain carries the reads queued (core.app.change: one conditional write for all of them and a
`read` entry each, before its own), and reads that no change carried within LINGER_S are
written together, alone. So a wake costs no second locked transaction: on PostgreSQL every
change of every process queues on the commit-order lock, and an answer's read took it a second
time (bench/README.md, issue 29).

A read is recorded once, whichever process records it (the store's conditional write decides).
A change that carried reads and failed gives them back, to be written alone (never carried
again: a read that cannot be written must not fail other changes). A read not written when the
process stops is not lost for good: the agent's next read of the ask records it. A sensitive
answer's read is not queued here: it is erased, and recorded, before the read that carried it
is over (core.app.reading.mark_read).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from core.domain import vocabulary
from store.models import AskRow


class _Carrier(Protocol):
    def carry(self, reads: list[AskRow], give_back: bool = True) -> None: ...


# How a change is opened (core.app.change.Changes, which owns this: named here by shape).
Opens = Callable[[], AbstractAsyncContextManager[_Carrier]]

log = logging.getLogger("aye.asks")
MAX_BATCH = 256
# Long enough for the next change to carry the read of the last wake, even on a loaded machine
# (answers come a few ms apart); short beside anything a person looks at.
LINGER_S = 0.2


class Reads:
    def __init__(self, change: Opens) -> None:
        self.change = change
        # By seq, each with when it came (loop time): a change may carry these,
        self._queue: dict[int, tuple[AskRow, float]] = {}
        # and these, given back by a change that failed, are written alone.
        self._alone: dict[int, tuple[AskRow, float]] = {}
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def add(self, ask: AskRow) -> None:
        """Record the agent's read of `ask` soon (nothing to do if it is open or read)."""
        if ask.status == vocabulary.OPEN or ask.read_at is not None or ask.seq is None:
            return
        self._queue.setdefault(ask.seq, (ask, asyncio.get_running_loop().time()))
        self._start()

    def take(self) -> list[AskRow]:
        """Reads for a change to carry: written in its transaction, or given back."""
        return [self._queue.pop(seq)[0] for seq in list(self._queue)[:MAX_BATCH]]

    def give_back(self, asks: list[AskRow]) -> None:
        """Reads a change carried and did not commit: written alone, soon."""
        now = asyncio.get_running_loop().time()
        for ask in asks:
            if ask.seq is not None:
                self._alone.setdefault(ask.seq, (ask, now))
        if asks:
            self._start()

    async def close(self, within: float = 5.0) -> None:
        """On the way out, before the store closes: the reads queued are written now, for
        `within` seconds at most."""
        self._closing = True
        if self._task is not None and not self._task.done():
            self._task.cancel()  # it may be lingering: write without waiting
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drain(), within)

    def _start(self) -> None:
        if not self._closing and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._linger(), name="aye-reads")

    async def _linger(self) -> None:
        """Write the reads alone once the oldest has waited LINGER_S for a change to carry it."""
        loop = asyncio.get_running_loop()
        while self._queue or self._alone:
            oldest = min(next(iter(q.values()))[1] for q in (self._queue, self._alone) if q)
            left = oldest + LINGER_S - loop.time()
            if left > 0:
                await asyncio.sleep(left)
            else:
                await self._drain()

    async def _drain(self) -> None:
        while self._queue or self._alone:
            alone = [self._alone.pop(seq)[0] for seq in list(self._alone)[:MAX_BATCH]]
            try:
                async with self.change() as ch:
                    ch.carry(alone + self.take(), give_back=False)
            except Exception:  # a missed 'read' entry must not surface as an error anywhere
                log.warning("could not record reads")
