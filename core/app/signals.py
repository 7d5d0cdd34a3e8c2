"""What a commit tells this process, after it: parked agents to wake, the clock and the outbox
loops to look again, the event streams to read. Written only by core.app.change (after each
commit) and read by the loops (bot/loops.py), each through its own method, never by assigning
onto a shared object."""

from __future__ import annotations

import asyncio

from core.app.waiters import Waiters


class Signals:
    def __init__(self, waiters: Waiters | None = None) -> None:
        self.waiters = waiters or Waiters()
        # Set when something new may be due sooner than the clock loop thinks.
        self.clock_poke = asyncio.Event()
        # Set when the outbox may have rows to send.
        self.outbox_poke = asyncio.Event()
        # Set when the event stream may have events to read (core.app.stream pokes its pump).
        self.events_poke = asyncio.Event()
        self._clock_wakes_at = 0.0
        # Set on the way out: parked agents get their ask as it stands, now, and come back later.
        self.closing = False

    # -- the clock loop ---------------------------------------------------------------------

    def clock_sleeps_until(self, moment: float) -> None:
        """The clock loop goes to sleep until `moment` (epoch seconds) unless poked."""
        self._clock_wakes_at = moment

    def due(self, moment: float | None) -> None:
        """Something is due at `moment`: the clock loop is poked when it would sleep past it.
        Called after the commit that made it: a loop poked before could look, find nothing,
        and sleep on."""
        if moment is not None and moment < self._clock_wakes_at:
            self.clock_poke.set()

    # -- what a commit wakes ----------------------------------------------------------------

    def committed(self, events: bool, outbox: bool) -> None:
        """After a commit that recorded events (`events`) and wrote outbox rows (`outbox`)."""
        if events:
            self.events_poke.set()
        if outbox:
            self.outbox_poke.set()

    def stop(self) -> None:
        """Stopping: parked agents get their ask as it stands, and new waits return at once."""
        self.closing = True
        self.waiters.wake_all()
