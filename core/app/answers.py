"""Taking an answer: judged by the domain (core/domain/answering.py, where every answer is
decided), then written with one conditional write whose row count says who won, never a
Python lock, so it holds across processes. A refusal is recorded (who, what, why) in the same
way; an approval the policy weighs goes through core.app.approving."""

from __future__ import annotations

import logging
from typing import Any

from core.app import approving, reading
from core.app.parts import Parts
from core.app.ports import AnswerResult, AuthorUnknown
from core.domain import answering, refs, vocabulary
from core.domain.answering import Attempt
from core.domain.forms import Misfit
from core.domain.logline import emit
from core.domain.responders import Responder
from core.domain.types import FollowUp, Seen
from store.models import AskRow

log = logging.getLogger("aye.asks")


async def answer(
    parts: Parts, ask: AskRow, attempt: Attempt, given: Any, note: str | None = None,
    extra: dict[str, Any] | None = None,
) -> AnswerResult:
    """Take `given` (a surface's text, the API's JSON) from `attempt.person` as the answer, or
    refuse it and record who, what and why; the store decides a race between two answers.
    With `attempt.seen`, AlreadySeen when that event was acted on before (nothing is recorded
    then). `extra`: more columns the winning write sets. What the attempt's other parts mean:
    core.domain.answering.Attempt."""
    now = parts.clock.now()
    verdict = answering.judge(ask, attempt, given, now, parts.people)
    person, surface = attempt.person, attempt.surface
    follow_up, seen = attempt.follow_up, attempt.seen
    if isinstance(verdict, answering.Refused):
        return await refuse(parts, ask, person, verdict.reason, surface, verdict.event,
                            follow_up, seen, given=given, misfit=verdict.misfit)
    if answering.policed(ask, verdict):
        why = await _self_approval(parts, ask, person) if ask.self_check else None
        if why is not None:
            return await refuse(parts, ask, person, why, surface, follow_up=follow_up, seen=seen)
        return await approving.approve(parts, ask, person, note, surface, follow_up, seen)
    values = {
        "status": vocabulary.ANSWERED, "answer_value": verdict.value,
        "answer_option": verdict.option, "answer_note": _note(note),
        "answered_by": str(person), "answer_surface": surface, "outcome": verdict.outcome,
        "closed_at": now, "due_at": None, **(extra or {}),
    }
    by = {"by": str(person), "surface": surface}
    async with parts.change(ask, seen) as ch:
        won = await ch.close_if_open(values)
        if won:
            outcome = {"outcome": verdict.outcome} if verdict.outcome else {}
            ch.history("answered", {**by, **outcome})
            ch.log("ask.answered", id=ask.id, ref=refs.ref(ask), by=str(person),
                   surface=surface, outcome=verdict.outcome)
        else:
            # Another answer committed between our read and this write: it won.
            ch.history("late", {"by": str(person), "why": "answered", "surface": surface})
            ch.log("ask.late", id=ask.id, ref=refs.ref(ask), by=str(person), surface=surface)
        ch.follow_up(follow_up, won, None if won else "answered")
    if not won:
        return AnswerResult(False, "answered", await reading.by_seq(parts, ask.seq or 0))
    return AnswerResult(True, None, ask.model_copy(update=values))


async def _self_approval(parts: Parts, ask: AskRow, person: Responder) -> str | None:
    """The work's author, read through its surface's port before anything is decided, and
    the domain's rule on it (failing closed when the author cannot be read)."""
    try:
        author = await parts.places.author_of(ask.work)
    except AuthorUnknown as exc:
        emit(log, "approval.author_unknown", level=logging.WARNING, id=ask.id, why=str(exc))
        return answering.self_approval(person, None, known=False)
    return answering.self_approval(person, author, people=parts.people)


async def refuse(
    parts: Parts, ask: AskRow, person: Responder, reason: str, surface: str,
    event: str = answering.REFUSED, follow_up: FollowUp | None = None,
    seen: Seen | None = None, given: Any = None, misfit: Misfit | None = None,
) -> AnswerResult:
    """Record an answer not taken: who, what (never for a sensitive ask) and why. Surfaces
    call it (through the service) for what they refuse before the rules can (ambiguous,
    malformed)."""
    async with parts.change(ask, seen) as ch:
        detail = {"by": str(person), "why": reason, "surface": surface}
        detail.update(answering.refused_detail(ask, given, misfit))
        ch.history(event, detail)
        ch.follow_up(follow_up, False, reason)
        ch.log(f"answer.{event}", id=ask.id, ref=refs.ref(ask), by=str(person), why=reason,
               surface=surface)
    return AnswerResult(False, reason, ask, misfit)


async def withdraw(parts: Parts, ask: AskRow, by: str) -> AskRow | None:
    """Withdraw an open ask; None when it was no longer open."""
    values = {"status": vocabulary.WITHDRAWN, "closed_at": parts.clock.now(), "due_at": None}
    async with parts.change(ask) as ch:
        won = await ch.close_if_open(values)
        if won:
            ch.history("withdrawn", {"by": by})
            ch.log("ask.withdrawn", id=ask.id, ref=refs.ref(ask), by=by)
    if not won:
        return None
    return await reading.by_seq(parts, ask.seq or 0)


def _note(note: str | None) -> str | None:
    return note.strip() if note and note.strip() else None
