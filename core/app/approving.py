"""Approving under a policy: a quorum of distinct approvers, counted on the ask's locked row
so that two approvals racing from two processes count once each. Whether an approval counts
is the domain's rule (core.domain.answering.not_countable); the self-approval check came before
(core.app.answers), through the work's surface."""

from __future__ import annotations

from core.app.change import Change
from core.app.parts import Parts
from core.app.ports import AnswerResult
from core.domain import answering, refs, vocabulary
from core.domain.responders import Responder
from core.domain.types import FollowUp, Seen
from store.models import AskRow


async def approve(
    parts: Parts, ask: AskRow, person: Responder, note: str | None, surface: str,
    follow_up: FollowUp | None, seen: Seen | None,
) -> AnswerResult:
    """`person` approves `ask`: counted towards its quorum, and the ask approved when the
    count reaches it; refused (and recorded) when it cannot count."""
    closed: AskRow | None = None
    async with parts.change(ask, seen) as ch:
        row = await ch.lock()
        why, event = answering.not_countable(row, person, ch.now, parts.people)
        if why is None:
            approvers = [*(row.approvers or []), str(person)]
            closed = await _count(ch, row, approvers, note, surface)
            ch.log("ask.approved", id=ask.id, ref=refs.ref(ask), by=str(person),
                   count=len(approvers), needed=row.approvals_needed or 1)
        else:
            ch.history(event, {"by": str(person), "why": why, "surface": surface})
            ch.log(f"answer.{event}", id=ask.id, ref=refs.ref(ask), by=str(person), why=why)
        ch.follow_up(follow_up, why is None, why)
    if why is not None:
        return AnswerResult(False, why, row)
    if closed is not None:
        return AnswerResult(True, None, closed)
    return AnswerResult(True, None, row.model_copy(update={"approvers": approvers}))


async def _count(
    ch: Change, row: AskRow, approvers: list[str], note: str | None, surface: str
) -> AskRow | None:
    """Record one more approver; close the ask as approved when they make the quorum (the
    closed row), else None. The row is locked: this is the one writer."""
    needed = row.approvals_needed or 1
    by = {"by": approvers[-1], "surface": surface}
    if len(approvers) < needed:
        await ch.count_approval(approvers, row)
        ch.history("approved", {**by, "count": len(approvers), "needed": needed}, row)
        return None
    values = {
        "status": vocabulary.ANSWERED, "answer_value": vocabulary.APPROVE, "answer_option": 1,
        "answer_note": note.strip() if note and note.strip() else None,
        "answered_by": approvers[-1], "answer_surface": surface, "outcome": vocabulary.APPROVED,
        "closed_at": ch.now, "due_at": None, "approvers": approvers,
    }
    await ch.close_if_open(values, row)
    ch.history("answered", {**by, "outcome": vocabulary.APPROVED, "approvers": approvers}, row)
    return row.model_copy(update=values)
