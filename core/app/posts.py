"""What surfaces keep about their own work: where they showed an ask (to update it later),
which webhook deliveries they already acted on, and forgetting both in time."""

from __future__ import annotations

import logging
from typing import Any

from core.app.asks import Asks
from core.domain import rules
from core.domain.logline import emit
from store import asks as q
from store import outbox, posts
from store.models import AskRow

log = logging.getLogger("aye.asks")

# GitHub lets an App redeliver a webhook for a few days: remember delivery ids for longer.
KEEP_DELIVERIES_S = 14 * 86400.0


async def record_posted(
    asks: Asks, ask: AskRow, surface: str, location: dict[str, Any], where: str
) -> None:
    """Keep where a surface showed the ask (the first place, if posted twice) and say so."""
    now = asks.clock.now()
    async with asks.store.write() as conn:
        await posts.record_first(conn, ask.seq, surface, location, now)
        await q.add_history(conn, ask.seq, now, "posted", {"surface": surface, "where": where})
    emit(log, "ask.posted", id=ask.id, ref=rules.ref(ask), surface=surface, where=where)


async def post_location(asks: Asks, ask: AskRow, surface: str) -> dict[str, Any] | None:
    async with asks.store.read() as conn:
        return await posts.location(conn, ask.seq, surface)


async def record_undelivered(
    asks: Asks, ask: AskRow, surface: str, action: str, why: str
) -> None:
    """A surface gave up showing the ask (a dead letter): say so in its history, once."""
    now = asks.clock.now()
    async with asks.store.write() as conn:
        detail = {"surface": surface, "action": action, "why": why}
        await q.add_history(conn, ask.seq, now, "undelivered", detail)
    emit(log, "ask.undelivered", level=logging.WARNING, id=ask.id, ref=rules.ref(ask),
         surface=surface, action=action, why=why)


async def first_delivery(asks: Asks, delivery_id: str, source: str) -> bool:
    """True the first time a webhook delivery id is seen, False for a redelivery."""
    return await posts.first_delivery(asks.store, delivery_id, source, asks.clock.now())


async def sweep(asks: Asks) -> None:
    """Forget what no longer matters: webhook delivery ids past GitHub's redelivery window,
    and outbox rows delivered long ago."""
    before = asks.clock.now() - KEEP_DELIVERIES_S
    async with asks.store.write() as conn:
        await posts.forget_deliveries(conn, before)
        await outbox.forget_done(conn, before)
