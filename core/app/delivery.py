"""Delivery to the surfaces: the outbox rows a change wrote, claimed, sent by the process's
delivery loop (bot/loops.py) and finished, retried or given up (a dead letter, said in the
ask's history); and what surfaces keep about their own work: where they showed an ask (to
update it later), which webhook deliveries they already acted on, and forgetting both in time."""

from __future__ import annotations

import logging
from typing import Any

from core.app import counting
from core.app.parts import Parts
from core.domain import refs
from store import outbox, posts
from store.models import AskRow, OutboxRow

# GitHub lets an App redeliver a webhook for a few days: remember delivery ids for longer.
KEEP_DELIVERIES_S = 14 * 86400.0


async def record_posted(
    parts: Parts, ask: AskRow, surface: str, location: dict[str, Any], where: str
) -> None:
    """Keep where a surface showed the ask (the first place, if posted twice) and say so."""
    async with parts.change(ask) as ch:
        await ch.record_posted(surface, location)
        ch.history("posted", {"surface": surface, "where": where})
        ch.log("ask.posted", id=ask.id, ref=refs.ref(ask), surface=surface, where=where)


async def post_location(parts: Parts, ask: AskRow, surface: str) -> dict[str, Any] | None:
    async with parts.store.read() as conn:
        return await posts.location(conn, ask.seq, surface)


async def record_undelivered(
    parts: Parts, ask: AskRow, surface: str, action: str, why: str, row_id: int | None = None
) -> None:
    """A surface gave up showing the ask (a dead letter): the outbox row `row_id` buried and
    the reason in the ask's history, once, in one transaction."""
    async with parts.change(ask) as ch:
        if row_id is not None:
            await ch.bury(row_id, why)
        ch.history("undelivered", {"surface": surface, "action": action, "why": why})
        ch.log("ask.undelivered", level=logging.WARNING, id=ask.id, ref=refs.ref(ask),
               surface=surface, action=action, why=why)


async def first_delivery(parts: Parts, delivery_id: str, source: str) -> bool:
    """True the first time a webhook delivery id is seen, False for a redelivery."""
    return await posts.first_delivery(parts.store, delivery_id, source, parts.clock.now())


async def sweep(parts: Parts) -> None:
    """Forget what no longer matters: webhook delivery ids past GitHub's redelivery window,
    outbox rows delivered long ago, and the limits' counts of minutes long past."""
    now = parts.clock.now()
    before = now - KEEP_DELIVERIES_S
    async with parts.store.write() as conn:
        await posts.forget_deliveries(conn, before)
        await outbox.forget_done(conn, before)
    await counting.forget_old(parts.store, now)


# -- the outbox, for the delivery loop ------------------------------------------------------


async def claim(parts: Parts, limit: int, hold_s: float) -> list[OutboxRow]:
    """Rows due now, this process's to send for `hold_s` (then another may take them)."""
    return await outbox.claim(parts.store, parts.clock.now(), limit, hold_s)


async def next_due(parts: Parts) -> float | None:
    return await outbox.next_due(parts.store)


async def finish(parts: Parts, row: OutboxRow) -> None:
    await outbox.finish(parts.store, row.id, parts.clock.now())


async def retry(parts: Parts, row: OutboxRow, after: float, why: str) -> None:
    await outbox.retry(parts.store, row.id, parts.clock.now() + after, why)


async def bury(parts: Parts, row: OutboxRow, ask: AskRow, why: str) -> None:
    """A dead letter: never tried again, counted in /healthz, its reason in the history (one
    transaction: a reader that sees the row buried sees why)."""
    await record_undelivered(parts, ask, row.surface, row.action, why, row.id)


async def dead_letters(parts: Parts) -> int:
    return await outbox.dead_letters(parts.store)
