"""Slack posts paced per channel: about one message a second, Slack's documented limit for
chat.postMessage in one channel ("short bursts of more than 1 allowed").

A delivery that posts (a question, an escalation, a reminder) takes a place in its channel's
line as it starts. Posts to one channel go out in the order of their rows' own times (an ask's
creation, its escalation, its reminder: the order the outbox hands rows over, which the delivery
loop's concurrent reads can shuffle on the way), each at least `interval` after the previous one
was answered; after a quiet spell up to `burst` go back to back. Each channel has its own
line: a busy channel never holds up another. A line is made when a channel is first posted to
and dropped once idle.

A place whose wait would be longer than `max_wait` is not waited for in place: the row goes back
to the outbox (RetryLater) due at its slot, and keeps that slot, so it is first when it comes
back. Waiting in place holds one of the delivery loop's slots, and its whole batch (every other
surface's rows wait for the next claim), for as long as it waits; a trip through the outbox
costs a write and a look in the channel. No row posts before an earlier row of its channel
that is away: a newcomer (or a row back early) goes to the outbox behind it rather than wait
here, which would hold the very loop that brings the earlier row back. So a burst of 100 into
one channel is posted in order at the channel's pace, and the delivery loop is never held for
more than `max_wait`. A row away for more than LATE_S past its slot (another process took it)
no longer holds the others back.

A 429 for a post puts the refused row first at its Retry-After, and every row behind it (here or
away) after it in order; rows waiting here go back to the outbox meanwhile.

chat.update (a close, a quorum's count) is not paced here: Slack's per-channel limit is about
posting messages, while chat.update has a limit per method and workspace (Tier 3, about 50 a
minute) that a per-channel line cannot keep; a close is never held behind a channel's queue of
new questions. Its 429s go back to the outbox with their Retry-After, as before.

Per process: several aye processes on one PostgreSQL each pace their own posts, so together they
may post faster than Slack's pace; Slack's 429s (Retry-After, honoured here and by the outbox)
cover the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from slack_sdk.errors import SlackApiError

from core.app.ports import RetryLater, wait_event
from handlers.slack.errors import retry_after

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Pace:
    interval: float = 1.0  # seconds between two posts to one channel
    burst: int = 3  # posts that may go back to back after a quiet spell
    max_wait: float = 2.0  # the longest wait held in place; longer goes back to the outbox


DEFAULT_PACE = Pace()
# A row away in the outbox this long past its slot has been taken by another process (or is
# gone): it no longer holds newcomers back. After FORGET_S its place is forgotten.
LATE_S = 5.0
FORGET_S = 300.0
SWEEP_S = 60.0

WAITING, POSTING, AWAY = "waiting", "posting", "away"


@dataclass(eq=False, slots=True)
class _Place:
    """One row's place in its channel's line: here (a delivery waiting to post, or posting) or
    away (handed back to the outbox, due at `slot`)."""

    key: Hashable
    slot: float
    order: int
    when: float  # the row's own time (its ask's creation, escalation…): the order it keeps
    state: str = WAITING
    told: bool = False  # the outbox was told `slot` (False once a 429 moved it since)
    returning: bool = False  # back from the outbox
    moved: bool = False  # waiting here, but put behind a 429: goes back to the outbox


def _by_slot(place: _Place) -> tuple[float, int]:
    return place.slot, place.order


def _outstanding(place: _Place, now: float) -> bool:
    """Away, and expected back (not long past its slot)."""
    return place.state == AWAY and place.slot + LATE_S > now


@dataclass(eq=False)
class _Line:
    places: list[_Place] = field(default_factory=list)  # by slot
    tail: float = -math.inf  # the schedule's next slot (GCRA's theoretical arrival time)
    tat: float = -math.inf  # the same for posts answered; a 429 pushes it to Retry-After
    last: float = -math.inf  # when the last post here was answered
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def away(self, key: Hashable) -> _Place | None:
        return next((p for p in self.places if p.state == AWAY and p.key == key), None)

    def may_go(self, place: _Place) -> bool:
        """Its turn: nobody else is posting, and nobody waiting here is ahead of it."""
        if place.state == POSTING:
            return True  # a second call of the same delivery (pictures refused: links)
        if any(p.state == POSTING for p in self.places):
            return False
        return next(p for p in self.places if p.state == WAITING) is place

    def away_ahead(self, place: _Place, now: float) -> bool:
        """A row due before this one is away in the outbox (or on its way there)."""
        return any(p.slot < place.slot and (p.moved or _outstanding(p, now)) for p in self.places)

    def idle(self, now: float) -> bool:
        """Nothing here or away, and a new line would pace the same."""
        return not self.places and self.tail <= now and self.tat <= now


class Turn:
    """A delivery's place in its channel's line; `post` makes one chat.postMessage in turn."""

    def __init__(self, pacer: Pacer | None, line: _Line | None, place: _Place | None) -> None:
        self._pacer, self._line, self._place = pacer, line, place

    async def post(self, call: Callable[[], Awaitable[T]]) -> T:
        """Wait for this place's turn and slot, then make the call. Raises RetryLater when the
        wait is too long to hold (the row keeps its place in the line)."""
        pacer, line, place = self._pacer, self._line, self._place
        if pacer is None or line is None or place is None:
            return await call()
        await pacer.wait(line, place)
        limited = False
        try:
            return await call()
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                limited = True
                pacer.limited(line, place, retry_after(exc.response.headers))
            raise
        finally:
            if not limited:
                pacer.answered(line)


UNPACED = Turn(None, None, None)


class Pacer:
    """The lines of this process's Slack posts, one per channel (see the module's docstring)."""

    def __init__(self, pace: Pace | None = None, now: Callable[[], float] = time.monotonic) -> None:
        self.pace = pace or DEFAULT_PACE
        self._tau = (max(self.pace.burst, 1) - 1) * self.pace.interval  # GCRA's tolerance
        self._now = now
        self._lines: dict[str, _Line] = {}
        self._order = itertools.count()
        self._swept = now()

    @property
    def channels(self) -> int:
        """Channels with a line now: idle ones are dropped."""
        return len(self._lines)

    @contextlib.asynccontextmanager
    async def turn(
        self, channel: str | None, key: Hashable, when: float = 0.0
    ) -> AsyncIterator[Turn]:
        """A place in `channel`'s line for one delivery (`key`: its ask and action; `when`: the
        row's own time, for its order), kept for the whole delivery. Raises RetryLater at once
        when its slot is too far off."""
        if channel is None:
            yield UNPACED
            return
        now = self._now()
        self._sweep(now)
        line = self._lines.setdefault(channel, _Line())
        place = self._admit(line, key, when, now)
        try:
            yield Turn(self, line, place)
        finally:
            if place.state != AWAY:
                line.places.remove(place)
            line.notify()
            if line.idle(self._now()) and self._lines.get(channel) is line:
                del self._lines[channel]

    def _admit(self, line: _Line, key: Hashable, when: float, now: float) -> _Place:
        """A row back from the outbox takes its kept place; a newcomer the next slot, here when
        it is near and no row ahead of it is away, else in the outbox."""
        place = line.away(key)
        if place is not None:
            place.state, place.returning = WAITING, True
            return place
        interval = self.pace.interval
        away = [p.slot + interval for p in line.places if p.moved or _outstanding(p, now)]
        slot = max(now, line.tail - self._tau, *away)
        line.tail = max(line.tail, slot) + interval
        place = _Place(key, slot, next(self._order), when)
        self._put_in_order(line, place, now)
        if line.away_ahead(place, now) or place.slot - now > self.pace.max_wait:
            raise self._send_away(place, now)
        return place

    @staticmethod
    def _put_in_order(line: _Line, place: _Place, now: float) -> None:
        """The delivery loop reads each row's ask on its own, so rows the outbox gave in order
        may reach the line out of it: a newcomer takes the slot of the first row of a later
        ask not yet posted, each of those the next one's slot, the last the new slot."""
        later = [
            p for p in line.places
            if p.when > place.when and ((p.state == WAITING and not p.returning) or _outstanding(p, now))
        ]
        if later:
            slots = [p.slot for p in later] + [place.slot]
            place.slot = slots[0]
            for moved, slot in zip(later, slots[1:], strict=True):
                moved.slot = slot
                moved.told = False  # away: not the slot the outbox was told
            line.notify()
        line.places.append(place)
        line.places.sort(key=_by_slot)

    async def wait(self, line: _Line, place: _Place) -> None:
        """Until it is this place's turn and its time; RetryLater when that is too far off."""
        while True:
            changed, now = line.changed, self._now()
            if place.moved:
                raise self._send_away(place, now)
            timeout: float | None = None
            if line.may_go(place):
                if place.state == WAITING and line.away_ahead(place, now):
                    # Not before a row due earlier; waiting for it here would hold the very
                    # delivery loop that brings it back.
                    raise self._send_away(place, now, self.pace.interval)
                ready = self._ready(line, place)
                timeout = ready - now
                if timeout <= 0:
                    place.state = POSTING
                    return
                if timeout > self.pace.max_wait and place.state == WAITING:
                    if ready > place.slot:  # the channel's pace slipped: all behind slip too
                        self._push(line, place, ready, now)
                    raise self._send_away(place, now)
            await wait_event(changed, timeout)

    def _ready(self, line: _Line, place: _Place) -> float:
        """When this place may post. A row the outbox held until its slot goes one interval
        after the last post (the outbox kept its time, by its own clock: a test's hand-moved
        clock too); one moved since waits for its new slot; a newcomer for its slot and the
        channel's pace."""
        if place.returning and place.told:
            return line.last + self.pace.interval
        if place.returning:
            return max(place.slot, line.last + self.pace.interval)
        return max(place.slot, line.tat - self._tau)

    def answered(self, line: _Line) -> None:
        """A post (or a refused call, which Slack may count) was answered."""
        now = self._now()
        line.last = now
        line.tat = max(line.tat, now) + self.pace.interval

    def limited(self, line: _Line, place: _Place, after: float) -> None:
        """Slack answered 429: this row first at Retry-After, every other after it."""
        now = self._now()
        hold = now + after
        line.tat = max(line.tat, hold + self._tau)
        self._push(line, place, hold, now)
        place.state, place.told, place.returning = AWAY, True, False

    def _push(self, line: _Line, first: _Place, at: float, now: float) -> None:
        """`first` to `at`, and every row behind it (waiting here or away, but not one long
        gone) after it in order, one interval apart: those here go back to the outbox."""
        first.slot = slot = at
        for place in line.places:
            if place is first or place.state == POSTING:
                continue
            if place.state == AWAY and not _outstanding(place, now):
                continue
            slot = max(place.slot, slot + self.pace.interval)
            if place.state == AWAY:
                place.told = place.told and place.slot == slot
            else:
                place.moved = True
            place.slot = slot
        line.places.sort(key=_by_slot)
        line.tail = max(line.tail, slot + self.pace.interval)
        line.notify()

    @staticmethod
    def _send_away(place: _Place, now: float, at_least: float = 0.0) -> RetryLater:
        """Back to the outbox, due at its slot (or in `at_least`), keeping its place."""
        place.state, place.told, place.returning, place.moved = AWAY, True, False, False
        return RetryLater(max(place.slot - now, at_least), "slack channel paced", "paced")

    def _sweep(self, now: float) -> None:
        """Now and then: forget places of rows that never came back, drop idle lines."""
        if now - self._swept < SWEEP_S:
            return
        self._swept = now
        for channel, line in list(self._lines.items()):
            line.places = [p for p in line.places if p.state != AWAY or p.slot + FORGET_S > now]
            if line.idle(now):
                del self._lines[channel]
