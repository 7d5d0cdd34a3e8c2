"""The event stream: each change to an ask is recorded as an event in the change's own
transaction (core.app.change, as its last write), and every stream of this process is fed from one reader.

One pump per process reads what is new once, when poked (after a local commit, or by
PostgreSQL's NOTIFY for another process's), and hands each event to the streams that may see
it; a stream that reconnects with Last-Event-ID first reads what it missed from the store.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from core.app.timing import Clock, wait_event
from store import events as q
from store.db import Store
from store.models import AskRow

log = logging.getLogger("aye.events")

CREATED, ANSWERED, EXPIRED = "ask.created", "ask.answered", "ask.expired"
WITHDRAWN, ESCALATED = "ask.withdrawn", "ask.escalated"
OUTCOME = "ask.outcome"  # a used approval's agent reported what ran
NAMES = (CREATED, ANSWERED, EXPIRED, WITHDRAWN, ESCALATED, OUTCOME)
BATCH = 500
KEEP_S = 3 * 3600.0  # at least the hour the contract promises, with room for a slow reconnect
PRUNE_EVERY_S = 600.0
QUEUE_MAX = 10_000  # a stream this far behind is ended; its client reconnects with its id


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    name: str
    ask: AskRow
    # What a stream sends for it, per audience (the event stream's encoding, kept once).
    frames: dict[bool, bytes] = field(default_factory=dict, compare=False, repr=False)


@dataclass(eq=False)
class Subscriber:
    """One stream: the agent whose asks it sees (None: the operator, all), and its queue;
    None in the queue ends the stream."""

    agent: str | None
    queue: asyncio.Queue[Event | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_MAX))

    def sees(self, event: Event) -> bool:
        return self.agent is None or event.ask.agent == self.agent


class EventHub:
    def __init__(self, store: Store, clock: Clock, poke: asyncio.Event | None = None) -> None:
        self.store = store
        self.clock = clock
        self.subscribers: set[Subscriber] = set()
        self.last_id = 0
        # Set after each commit that recorded events (core.app.signals), or by NOTIFY.
        self._poke = poke or asyncio.Event()
        self._closing = False
        self._idle = False

    def poke(self) -> None:
        self._poke.set()

    def subscribe(self, agent: str | None) -> Subscriber:
        sub = Subscriber(agent)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    async def backlog(self, sub: Subscriber, after: int) -> list[Event]:
        """What a stream missed since `after` (its Last-Event-ID), from the store."""
        async with self.store.read() as conn:
            rows = await q.after(conn, after, sub.agent, BATCH)
        return [Event(*row) for row in rows]

    async def newest(self) -> int:
        """The newest event's id in the store: where a fresh stream starts."""
        async with self.store.read() as conn:
            return await q.last_id(conn)

    async def start(self) -> None:
        async with self.store.read() as conn:
            self.last_id = await q.last_id(conn)

    async def run(self) -> None:
        """Read what is new each time it is poked and hand it out; forget old events."""
        pruned = 0.0
        while not self._closing:
            await wait_event(self._poke, PRUNE_EVERY_S)
            self._poke.clear()
            try:
                await self._pump()
                now = self.clock.now()
                if now - pruned >= PRUNE_EVERY_S:
                    await self.prune(now)
                    pruned = now
            except Exception:  # the store is away: the next poke tries again
                log.warning("cannot read new events", exc_info=True)
                await asyncio.sleep(0.5)
                self._poke.set()

    def starts_at(self, event_id: int) -> None:
        """A stream's starting point: while nobody listened the pump read nothing, so the
        first stream's start is where the pump goes on from (nobody needs what is before)."""
        if self._idle:
            self._idle = False
            self.last_id = max(self.last_id, event_id)

    async def _pump(self) -> None:
        if not self.subscribers:  # nobody listens: read nothing (see starts_at)
            self._idle = True
            return
        while True:
            async with self.store.read() as conn:
                rows = await q.after(conn, self.last_id, None, BATCH)
            for row in rows:
                self._hand_out(Event(*row))
            if len(rows) < BATCH:
                return

    def _hand_out(self, event: Event) -> None:
        self.last_id = max(self.last_id, event.id)
        for sub in list(self.subscribers):
            if sub.sees(event):
                try:
                    sub.queue.put_nowait(event)
                except asyncio.QueueFull:  # far behind: end it; it resumes from its id
                    self._end(sub)

    async def prune(self, now: float) -> int:
        async with self.store.write() as conn:
            return await q.prune(conn, now - KEEP_S)

    def _end(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)
        if sub.queue.full():  # what it has not read is in the store: it resumes from its id
            while not sub.queue.empty():
                sub.queue.get_nowait()
        sub.queue.put_nowait(None)

    def close(self) -> int:
        """End every stream (the process is stopping); how many there were."""
        self._closing = True
        self._poke.set()
        subs = list(self.subscribers)
        for sub in subs:
            self._end(sub)
        return len(subs)
