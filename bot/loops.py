"""The process's background loops: the deadline clock, the outbox delivery, and the audit
chain's signed head written to the log."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from core.app import auditing, deadlines, delivery, reading, tally
from core.app.parts import Parts
from core.app.ports import GiveUp, RetryLater
from core.domain.logline import emit
from store.models import AskRow, OutboxRow

log = logging.getLogger("aye.loops")
audit_log = logging.getLogger("aye.audit")

# Other processes may create work this one is not poked for: look at least this often.
IDLE_LOOK = 1.0
SWEEP_EVERY = 3600.0
DELIVERY_CONCURRENCY = 16
# A claimed row is this process's to deliver for this long; then another may take it.
CLAIM_SECONDS = 60.0
CLAIM_BATCH = 50
MAX_BACKOFF = 300.0
# A delivery failing this often (about two hours of backoff) is given up: a dead letter.
MAX_ATTEMPTS = 30


async def _sweep(parts: Parts) -> None:
    try:
        await delivery.sweep(parts)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("sweep failed; trying again later")


async def run_clock(parts: Parts) -> None:
    """Fire due deadlines and escalations, then sleep until the next one (or a poke)."""
    clock, signals = parts.clock, parts.signals
    next_sweep = clock.now() + SWEEP_EVERY
    while True:
        signals.clock_poke.clear()
        try:
            await deadlines.fire_due(parts)
            due = await deadlines.next_due(parts)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("clock tick failed; trying again")
            due = None
        if clock.now() >= next_sweep:
            next_sweep = clock.now() + SWEEP_EVERY
            await _sweep(parts)
        now = clock.now()
        until = now + IDLE_LOOK if due is None else min(due, now + IDLE_LOOK)
        signals.clock_sleeps_until(until)
        await clock.sleep_until(until, signals.clock_poke)


async def run_audit_head(parts: Parts, every: float) -> None:
    """Write the audit chain's head, signed, to the log every `every` seconds (at whole
    multiples of it, so that replicas write theirs together), for a log kept outside aye:
    `aye audit verify --head` then shows a tail deleted or rewritten after any of them."""
    clock, never = parts.clock, asyncio.Event()
    while True:
        await clock.sleep_until((clock.now() // every + 1) * every, never)
        try:
            head = await auditing.head(parts)
        except asyncio.CancelledError:
            raise
        except Exception:
            audit_log.exception("audit head not written; trying at the next")
            continue
        emit(audit_log, "audit.head", seq=head.seq, hash=head.hash, head=head.jws)


def waited(wait: RetryLater) -> str:
    """How a delivery sent back to the outbox for a while ended (core.app.tally's results)."""
    return {"rate_limited": tally.RATE_LIMITED, "paced": tally.PACED}.get(wait.kind, tally.ERROR)


class Deliverer:
    """Hands outbox rows to their surfaces; failures are retried with backoff, never dropped."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self._slots = asyncio.Semaphore(DELIVERY_CONCURRENCY)
        self.stopping = False

    async def drain(self, task: asyncio.Task[None], within: float) -> None:
        """On the way out: claim nothing new, let the sends in flight finish (for `within`
        seconds at most; what is still unsent then goes back to the outbox, never lost)."""
        self.stopping = True
        self.parts.signals.outbox_poke.set()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), within)

    async def run(self) -> None:
        while not self.stopping:
            self.parts.signals.outbox_poke.clear()
            try:
                rows = await delivery.claim(self.parts, CLAIM_BATCH, CLAIM_SECONDS)
                if rows:
                    await asyncio.gather(*(self.deliver(row) for row in rows))
                    continue
                due = await delivery.next_due(self.parts)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("outbox pass failed; trying again")
                due = None
            now = self.parts.clock.now()
            until = now + IDLE_LOOK if due is None else min(max(due, now + 0.05), now + IDLE_LOOK)
            if not self.stopping:
                await self.parts.clock.sleep_until(until, self.parts.signals.outbox_poke)

    async def deliver(self, row: OutboxRow) -> None:
        surface = self.parts.places.get(row.surface)
        ask = await reading.by_seq(self.parts, row.ask_seq or 0)
        if surface is None or ask is None:
            # The surface is off in this process (its secrets are absent): try later, where
            # a process with it on may pick the row up.
            await self._retry(row, 60.0, "surface not running here")
            self.parts.tally.delivered(row.surface, tally.NOT_RUNNING)
            return
        async with self._slots:
            try:
                await surface.deliver(ask, row.action, row.payload)
            except asyncio.CancelledError:
                # Shutting down mid-delivery: give the row back now rather than leave it
                # claimed for a minute, holding up the ask's later rows after a restart.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.shield(self._retry(row, 0.0, "interrupted")), 2
                    )
                raise
            except Exception as exc:
                result = await self._failed(row, ask, exc)
            else:
                await delivery.finish(self.parts, row)
                result = tally.OK
        self.parts.tally.delivered(row.surface, result)

    async def _failed(self, row: OutboxRow, ask: AskRow, exc: Exception) -> str:
        """The row given up (a dead letter) or due again, as `exc` says; how it ended."""
        if isinstance(exc, GiveUp):
            await self._bury(row, ask, str(exc))
            return tally.GAVE_UP
        if isinstance(exc, RetryLater):
            # aye's own pacing (a mail being sent, a Slack channel's next slot) is the normal
            # course, not trouble: no warning (a first send that succeeds is paced once).
            level = logging.DEBUG if exc.kind == "paced" else logging.WARNING
            emit(log, "outbox.retry", level=level, surface=row.surface,
                 action=row.action, ask=ask.id, after=exc.after, why=str(exc))
            await self._retry(row, exc.after, str(exc))
            return waited(exc)
        if (row.attempts or 0) >= MAX_ATTEMPTS:
            why = f"gave up after {row.attempts} attempts: {exc.__class__.__name__}"
            await self._bury(row, ask, why)
            return tally.GAVE_UP
        emit(log, "outbox.retry", level=logging.WARNING, surface=row.surface,
             action=row.action, ask=ask.id, attempts=row.attempts,
             error=exc.__class__.__name__)
        await self._retry(row, None, exc.__class__.__name__)
        return tally.ERROR

    async def _bury(self, row: OutboxRow, ask: AskRow, why: str) -> None:
        """A dead letter: never tried again, counted in /healthz, its reason in the history;
        the ask's other surfaces carry on with their own rows."""
        await delivery.bury(self.parts, row, ask, why)

    async def _retry(self, row: OutboxRow, after: float | None, why: str) -> None:
        """Due again `after` seconds from now, or with backoff by the row's attempts."""
        if after is None:
            after = min(2.0 ** (row.attempts or 0), MAX_BACKOFF)
        await delivery.retry(self.parts, row, after, why)
