"""Deadlines and escalations: fired when due, each once however many processes run, late
rather than never after a restart (due times live in the store, indexed)."""

from __future__ import annotations

from core.app.parts import Parts
from core.domain import refs, vocabulary
from core.domain.ask import is_approval
from store import asks as q
from store.models import AskRow

DUE_BATCH = 200


async def next_due(parts: Parts) -> float | None:
    async with parts.store.read() as conn:
        return await q.next_due(conn)


async def fire_due(parts: Parts) -> int:
    """Remind, escalate or expire every open ask whose time has come; each fires once."""
    now = parts.clock.now()
    async with parts.store.read() as conn:
        due = await q.due(conn, now, DUE_BATCH)
    fired = 0
    for ask in due:
        if ask.deadline <= now:
            fired += await _expire(parts, ask)
        elif ask.remind_at is not None and ask.reminded_at is None and ask.remind_at <= now:
            fired += await _remind(parts, ask)
        elif ask.escalate_at is not None and ask.escalated_at is None:
            fired += await _escalate(parts, ask)
    return fired


def _after_reminder(ask: AskRow) -> float:
    """When the clock looks at the ask again once reminded: its escalation, or its deadline."""
    if ask.escalate_at is not None and ask.escalated_at is None:
        return min(ask.escalate_at, ask.deadline)
    return ask.deadline


async def _remind(parts: Parts, ask: AskRow) -> int:
    async with parts.change(ask) as ch:
        won = await ch.remind_if_open(due_at=_after_reminder(ask))
        if won:
            ch.history("reminded", {})
            ch.fired("remind", ch.now - (ask.remind_at or ch.now))
            ch.log("ask.reminded", id=ask.id, ref=refs.ref(ask))
    return int(won)


async def _escalate(parts: Parts, ask: AskRow) -> int:
    async with parts.change(ask) as ch:
        won = await ch.escalate_if_open(due_at=ask.deadline)
        if won:
            ch.history("escalated", {"to": ask.escalate_responders, "until": ask.deadline})
            ch.fired("escalate", ch.now - (ask.escalate_at or ch.now))
            ch.log("ask.escalated", id=ask.id, ref=refs.ref(ask))
    return int(won)


async def _expire(parts: Parts, ask: AskRow) -> int:
    outcome = vocabulary.APPROVAL_TIMED_OUT if is_approval(ask) else None
    async with parts.change(ask) as ch:
        values = {"status": vocabulary.EXPIRED, "closed_at": ch.now, "due_at": None, "outcome": outcome}
        won = await ch.close_if_open(values)
        if won:
            ch.history("expired", {})
            ch.fired("expire", ch.now - ask.deadline)
            ch.log("ask.expired", id=ask.id, ref=refs.ref(ask), outcome=outcome)
    return int(won)
