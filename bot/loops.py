"""The process's two background loops: the deadline clock and the outbox delivery."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bot.broker import Broker
from bot.logs import emit
from bot.surfaces import RetryLater
from store.models import OutboxRow

log = logging.getLogger("aye.loops")

# Other processes may create work this one is not poked for: look at least this often.
IDLE_LOOK = 1.0
SWEEP_EVERY = 3600.0


async def _sweep(broker: Broker) -> None:
    try:
        await broker.sweep()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("sweep failed; trying again later")
DELIVERY_CONCURRENCY = 16


async def run_clock(broker: Broker) -> None:
    """Fire due deadlines and escalations, then sleep until the next one (or a poke)."""
    next_sweep = broker.clock.now() + SWEEP_EVERY
    while True:
        broker.clock_poke.clear()
        try:
            await broker.fire_due()
            due = await broker.next_due()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("clock tick failed; trying again")
            due = None
        if broker.clock.now() >= next_sweep:
            next_sweep = broker.clock.now() + SWEEP_EVERY
            await _sweep(broker)
        now = broker.clock.now()
        until = now + IDLE_LOOK if due is None else min(due, now + IDLE_LOOK)
        broker.clock_wakes_at = until
        await broker.clock.sleep_until(until, broker.clock_poke)


class Deliverer:
    """Hands outbox rows to their surfaces; failures are retried with backoff, never dropped."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._slots = asyncio.Semaphore(DELIVERY_CONCURRENCY)

    async def run(self) -> None:
        while True:
            self.broker.outbox_poke.clear()
            try:
                rows = await self.broker.claim_outbox()
                if rows:
                    await asyncio.gather(*(self.deliver(row) for row in rows))
                    continue
                due = await self.broker.next_outbox_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("outbox pass failed; trying again")
                due = None
            now = self.broker.clock.now()
            until = now + IDLE_LOOK if due is None else min(max(due, now + 0.05), now + IDLE_LOOK)
            await self.broker.clock.sleep_until(until, self.broker.outbox_poke)

    async def deliver(self, row: OutboxRow) -> None:
        surface = self.broker.surfaces.get(row.surface)
        ask = await self.broker.by_seq(row.ask_seq)
        if surface is None or ask is None:
            # The surface is off in this process (its secrets are absent): try later, where
            # a process with it on may pick the row up.
            await self.broker.retry_outbox(row, 60.0, "surface not running here")
            return
        async with self._slots:
            try:
                await surface.deliver(ask, row.action, row.payload)
            except asyncio.CancelledError:
                # Shutting down mid-delivery: give the row back now rather than leave it
                # claimed for a minute, holding up the ask's later rows after a restart.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.shield(self.broker.retry_outbox(row, 0.0, "interrupted")), 2
                    )
                raise
            except RetryLater as wait:
                emit(log, "outbox.retry", level=logging.WARNING, surface=row.surface,
                     action=row.action, ask=ask.id, after=wait.after, why=str(wait))
                await self.broker.retry_outbox(row, wait.after, str(wait))
            except Exception as exc:
                emit(log, "outbox.retry", level=logging.WARNING, surface=row.surface,
                     action=row.action, ask=ask.id, attempts=row.attempts,
                     error=exc.__class__.__name__)
                await self.broker.retry_outbox(row, None, exc.__class__.__name__)
            else:
                await self.broker.finish_outbox(row)
