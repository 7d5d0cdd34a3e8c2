"""Time, injectable: the real clock for the process, a manual one for tests."""

from __future__ import annotations

import asyncio
import time


class Clock:
    """Wall-clock time in UTC epoch seconds; `sleep` ends early when `poke` is set."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float, poke: asyncio.Event) -> None:
        try:
            await asyncio.wait_for(poke.wait(), timeout=max(seconds, 0.0))
        except TimeoutError:
            pass


class ManualClock(Clock):
    """A clock tests move by hand; sleepers wake when it moves, never on their own."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._moved = asyncio.Event()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._moved.set()
        self._moved = asyncio.Event()

    async def sleep(self, seconds: float, poke: asyncio.Event) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        moved = self._moved
        waits = [asyncio.ensure_future(moved.wait()), asyncio.ensure_future(poke.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
