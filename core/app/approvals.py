"""Approval policy at answer time: a quorum of distinct approvers, counted on the ask's locked
row so that two approvals racing from two processes count once each; and no self-approval,
with the work's author read from its surface, failing closed when it cannot be read."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from core.app import events
from core.app.ports import UPDATE, AuthorUnknown
from core.domain import answering, rules
from core.domain.logline import emit
from core.domain.responders import Responder, admitted
from core.domain.types import AnswerResult, FollowUp, Seen
from store import asks as q
from store.models import AskRow

if TYPE_CHECKING:
    from core.app.asks import Asks

log = logging.getLogger("aye.asks")
ALREADY_APPROVED, SELF_APPROVAL, AUTHOR_UNKNOWN = "already_approved", "self_approval", "author_unknown"


def policed(ask: AskRow, verdict: answering.Taken) -> bool:
    """An approval whose `approve` the policy must weigh (a quorum, or no self-approval)."""
    return verdict.outcome == rules.APPROVED and (
        (ask.approvals_needed or 1) > 1 or bool(ask.self_check)
    )


async def approve(
    asks: Asks, ask: AskRow, person: Responder, note: str | None, surface: str,
    follow_up: FollowUp | None, seen: Seen | None,
) -> AnswerResult:
    """`person` approves `ask`: refused when they opened its work (self_check), counted
    towards its quorum otherwise, and the ask approved when the count reaches it."""
    if ask.self_check:
        why = await _self_approval(asks, ask, person)
        if why is not None:
            return await asks.refuse(ask, person, why, surface, follow_up=follow_up, seen=seen)
    now = asks.clock.now()
    async with asks.writing(seen, now) as conn:
        row = await q.locked(conn, ask.seq) or ask
        why, event = _not_countable(row, person, now)
        if why is None:
            approvers = [*(row.approvers or []), str(person)]
            closed = await _count(asks, conn, row, approvers, note, surface, now)
        else:
            detail = {"by": str(person), "why": why, "surface": surface}
            await q.add_history(conn, ask.seq, now, event, detail)
        await asks.add_follow_up(conn, ask, follow_up, why is None, why)
    asks.poke_outbox()
    if why is not None:
        emit(log, f"answer.{event}", id=ask.id, ref=rules.ref(ask), by=str(person), why=why)
        return AnswerResult(False, why, row)
    emit(log, "ask.approved", id=ask.id, ref=rules.ref(ask), by=str(person),
         count=len(approvers), needed=row.approvals_needed or 1)
    if closed is not None:
        asks.after_close(ask, rules.ANSWERED, closed)
        return AnswerResult(True, None, closed)
    return AnswerResult(True, None, row.model_copy(update={"approvers": approvers}))


def _not_countable(row: AskRow, person: Responder, now: float) -> tuple[str | None, str]:
    """Why this approval cannot count (and the history event), or (None, "")."""
    if row.status != rules.OPEN:
        late = answering.racing(row, now)
        return rules.closed_reason(row.status), answering.LATE if late else answering.REFUSED
    if any(admitted(person, [Responder.parse(name)]) for name in row.approvers or []):
        return ALREADY_APPROVED, answering.REFUSED
    return None, ""


async def _count(
    asks: Asks, conn: Any, row: AskRow, approvers: list[str], note: str | None, surface: str,
    now: float,
) -> AskRow | None:
    """Record one more approver; close the ask as approved when they make the quorum.
    The row is locked: this is the one writer."""
    needed = row.approvals_needed or 1
    by = {"by": approvers[-1], "surface": surface}
    if len(approvers) < needed:
        await q.count_approval(conn, row.seq, approvers)
        await q.add_history(conn, row.seq, now, "approved", {**by, "count": len(approvers),
                                                               "needed": needed})
        await asks.to_outbox(conn, row, UPDATE)
        return None
    values = {
        "status": rules.ANSWERED, "answer_value": rules.APPROVE, "answer_option": 1,
        "answer_note": note.strip() if note and note.strip() else None,
        "answered_by": approvers[-1], "answer_surface": surface, "outcome": rules.APPROVED,
        "closed_at": now, "due_at": None, "approvers": approvers,
    }
    await q.close_if_open(conn, row.seq, values)
    await q.add_history(conn, row.seq, now, "answered",
                        {**by, "outcome": rules.APPROVED, "approvers": approvers})
    await asks.closed(conn, row, events.ANSWERED)
    return row.model_copy(update=values)


async def _self_approval(asks: Asks, ask: AskRow, person: Responder) -> str | None:
    """SELF_APPROVAL when `person` opened the ask's work, AUTHOR_UNKNOWN when that cannot be
    read, None when they may approve."""
    try:
        author = await author_of(asks, ask.work)
    except AuthorUnknown as exc:
        emit(log, "approval.author_unknown", level=logging.WARNING, id=ask.id, why=str(exc))
        return AUTHOR_UNKNOWN
    if author is not None and admitted(person, [Responder.parse(author)]):
        return SELF_APPROVAL
    return None


async def author_of(asks: Asks, work: dict[str, Any] | None) -> str | None:
    """Who opened `work`, from the surface it belongs to; None for an ask with no work.
    AuthorUnknown when that surface is off or cannot say."""
    if not work:
        return None
    name = next(iter(work))
    source = getattr(asks.surfaces.get(name), "author", None)
    if source is None:
        raise AuthorUnknown(f"the {name} surface is off or cannot read who opened a work")
    author = await source(work)
    return str(author) if author is not None else None
