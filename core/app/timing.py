"""Time, injectable: the real clock for the process, a manual one for tests."""

from __future__ import annotations

import asyncio
import time


async def wait_event(event: asyncio.Event, timeout: float | None) -> None:
    """Until `event` is set or `timeout` seconds pass (None: no limit). Never asyncio.wait_for: on Python
    3.11 it can swallow a cancellation that races the event being set, and a loop cancelled on
    the way out would then go on for ever."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        pass


class Clock:
    """Wall-clock time in UTC epoch seconds."""

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, moment: float, poke: asyncio.Event) -> None:
        """Return at `moment` (epoch seconds), or earlier when `poke` is set."""
        await wait_event(poke, max(moment - self.now(), 0.0))


class ManualClock(Clock):
    """A clock tests move by hand; sleepers wake when it reaches their moment, never on their own.

    Sleeping is to an absolute moment, so a move made between a loop reading the time and
    going to sleep is not missed.
    """

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._moved = asyncio.Event()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._moved.set()
        self._moved = asyncio.Event()

    async def sleep_until(self, moment: float, poke: asyncio.Event) -> None:
        await asyncio.sleep(0)
        while self._now < moment and not poke.is_set():
            moved = self._moved
            waits = [asyncio.ensure_future(moved.wait()), asyncio.ensure_future(poke.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
