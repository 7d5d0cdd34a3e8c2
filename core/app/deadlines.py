"""Deadlines and escalations: fired when due, each once however many processes run, late
rather than never after a restart (due times live in the store, indexed)."""

from __future__ import annotations

import logging

from core.app import events
from core.app.asks import Asks
from core.app.ports import ESCALATE, REMIND
from core.domain import rules
from core.domain.logline import emit
from store import asks as q
from store.models import AskRow

log = logging.getLogger("aye.asks")

DUE_BATCH = 200


async def next_due(asks: Asks) -> float | None:
    async with asks.store.read() as conn:
        return await q.next_due(conn)


async def fire_due(asks: Asks) -> int:
    """Remind, escalate or expire every open ask whose time has come; each fires once."""
    now = asks.clock.now()
    async with asks.store.read() as conn:
        due = await q.due(conn, now, DUE_BATCH)
    fired = 0
    for ask in due:
        if ask.deadline <= now:
            fired += await _expire(asks, ask, now)
        elif ask.remind_at is not None and ask.reminded_at is None and ask.remind_at <= now:
            fired += await _remind(asks, ask, now)
        elif ask.escalate_at is not None and ask.escalated_at is None:
            fired += await _escalate(asks, ask, now)
    return fired


def _after_reminder(ask: AskRow) -> float:
    """When the clock looks at the ask again once reminded: its escalation, or its deadline."""
    if ask.escalate_at is not None and ask.escalated_at is None:
        return min(ask.escalate_at, ask.deadline)
    return ask.deadline


async def _remind(asks: Asks, ask: AskRow, now: float) -> int:
    async with asks.store.write() as conn:
        won = await q.remind_if_open(conn, ask.seq, now, due_at=_after_reminder(ask))
        if won:
            await q.add_history(conn, ask.seq, now, "reminded", {})
            await asks.to_outbox(conn, ask, REMIND)
    if won:
        asks.poke_outbox()
        asks.tally.fired("remind", now - (ask.remind_at or now))
        emit(log, "ask.reminded", id=ask.id, ref=rules.ref(ask))
    return int(won)


async def _escalate(asks: Asks, ask: AskRow, now: float) -> int:
    async with asks.store.write() as conn:
        won = await q.escalate_if_open(conn, ask.seq, now, due_at=ask.deadline)
        if won:
            detail = {"to": ask.escalate_responders, "until": ask.deadline}
            await q.add_history(conn, ask.seq, now, "escalated", detail)
            await asks.to_outbox(conn, ask, ESCALATE)
            await asks.changed(conn, ask, events.ESCALATED)
    if won:
        asks.poke_outbox()
        asks.tally.fired("escalate", now - (ask.escalate_at or now))
        emit(log, "ask.escalated", id=ask.id, ref=rules.ref(ask))
    return int(won)


async def _expire(asks: Asks, ask: AskRow, now: float) -> int:
    outcome = rules.APPROVAL_TIMED_OUT if ask.kind == rules.APPROVAL else None
    values = {"status": rules.EXPIRED, "closed_at": now, "due_at": None, "outcome": outcome}
    async with asks.store.write() as conn:
        won = await q.close_if_open(conn, ask.seq, values)
        if won:
            await q.add_history(conn, ask.seq, now, "expired", {})
            await asks.closed(conn, ask, events.EXPIRED)
    if won:
        asks.after_close(ask, rules.EXPIRED)
        asks.tally.fired("expire", now - ask.deadline)
        emit(log, "ask.expired", id=ask.id, ref=rules.ref(ask), outcome=outcome)
    return int(won)
