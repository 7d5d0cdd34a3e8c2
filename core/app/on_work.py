"""An answer given on a work (a GitHub issue, a Slack thread) rather than on one ask: find the
ask it means (core.domain.answering.choose), then answer or refuse it. Shared by every surface
where people answer in a conversation."""

from __future__ import annotations

from dataclasses import dataclass

from core.app import answers, reading
from core.app.parts import Parts
from core.app.ports import AnswerResult
from core.domain import answering, refs
from core.domain.answering import AMBIGUOUS, NO_OPEN_ASK, Ambiguous, Attempt, Reply, Target
from core.domain.responders import Responder
from core.domain.types import FollowUp, Seen
from store.models import AskRow


@dataclass(frozen=True, slots=True)
class Said:
    """Who answered on which work, when (whole seconds, as the surface stamps it), through what."""

    work_key: str
    person: Responder
    surface: str
    at: float | None = None  # None: now
    public: bool = False
    follow_up: FollowUp | None = None
    seen: Seen | None = None  # the event, recorded with its effect so it acts once


def asked_by_then(ask: AskRow, said: Said) -> bool:
    """An answer written before the ask was asked does not answer it (a replayed or stale
    comment). Compared at the surface's one-second precision: the same second counts."""
    return said.at is None or int(ask.created_at) <= said.at


async def answer_on_work(parts: Parts, said: Said, reply: Reply, note: str | None) -> AnswerResult:
    """The outcome, with the ask it concerned (None when the work has no ask it could mean).
    AlreadySeen (nothing recorded) when `said.seen` was acted on before."""
    open_asks = [a for a in await reading.open_on_work(parts, said.work_key) if asked_by_then(a, said)]
    named, elsewhere = await _named(parts, reply, said, open_asks)
    choice = answering.choose(reply, open_asks, named, elsewhere)
    if isinstance(choice, Target):
        return await _answer(parts, said, choice.ask, choice.text, note)
    if isinstance(choice, Ambiguous):
        for index, ask in enumerate(choice.open_asks):
            # One follow-up (a reaction) and one record of the event, on the first ask.
            first = index == 0
            await answers.refuse(parts, ask, said.person, AMBIGUOUS, said.surface,
                              follow_up=said.follow_up if first else None,
                              seen=said.seen if first else None)
        return AnswerResult(False, AMBIGUOUS, choice.open_asks[0])
    if reply.ref is None:
        # Nothing open here: the newest ask of this work, if any, refuses it with its own
        # reason (already answered, expired…), recorded in its history.
        latest = await reading.latest_on_work(parts, said.work_key)
        if latest is not None and asked_by_then(latest, said):
            return await _answer(parts, said, latest, reply.text, note)
    return AnswerResult(False, NO_OPEN_ASK, None)


async def _answer(parts: Parts, said: Said, ask: AskRow, text: str, note: str | None) -> AnswerResult:
    attempt = Attempt(said.person, said.surface, said.public, follow_up=said.follow_up,
                      seen=said.seen)
    result = await answers.answer(parts, ask, attempt, text, note)
    return AnswerResult(result.taken, result.reason, ask)


async def _named(
    parts: Parts, reply: Reply, said: Said, open_asks: list[AskRow]
) -> tuple[AskRow | None, bool]:
    """The ask the reply's ref names if it is this work's, and whether it names another's."""
    parsed = refs.parse_ref(reply.ref) if reply.ref is not None else None
    if reply.ref is None or parsed is None:
        return None, False
    for ask in open_asks:
        if parsed.names(ask):
            return ask, False
    found = await reading.find(parts, reply.ref)
    if found is None:
        return None, False
    if not asked_by_then(found, said):
        return None, True  # it names an ask that did not exist yet: refused, never another's
    if found.work_key == said.work_key:
        return found, False
    return None, True
