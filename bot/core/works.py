"""An answer given on a work (a GitHub issue, a Slack thread) rather than on one ask: find the
ask it means (bot.core.answering.choose), then answer or refuse it. Shared by every surface
where people answer in a conversation."""

from __future__ import annotations

from bot.core import answering, rules
from bot.core.answering import AMBIGUOUS, NO_OPEN_ASK, Ambiguous, Reply, Target
from bot.core.asks import Asks
from bot.core.responders import Responder
from bot.core.types import AnswerResult, FollowUp
from store.models import AskRow


async def answer_on_work(
    asks: Asks, work_key: str, person: Responder, reply: Reply, note: str | None,
    surface: str, public: bool = False, follow_up: FollowUp | None = None,
) -> AnswerResult:
    """The outcome, with the ask it concerned (None when the work has no ask it could mean)."""
    open_asks = await asks.open_on_work(work_key)
    named, elsewhere = await _named(asks, reply, work_key, open_asks)
    choice = answering.choose(reply, open_asks, named, elsewhere)
    if isinstance(choice, Target):
        result = await asks.answer(choice.ask, person, choice.text, note, surface, public, follow_up)
        return AnswerResult(result.taken, result.reason, choice.ask)
    if isinstance(choice, Ambiguous):
        for index, ask in enumerate(choice.open_asks):
            # One follow-up (a reaction), whatever the number of asks it could mean.
            await asks.refuse(ask, person, AMBIGUOUS, surface,
                              follow_up=follow_up if index == 0 else None)
        return AnswerResult(False, AMBIGUOUS, choice.open_asks[0])
    if reply.ref is None:
        # Nothing open here: the newest ask of this work, if any, refuses it with its own
        # reason (already answered, expired…), recorded in its history.
        latest = await asks.latest_on_work(work_key)
        if latest is not None:
            result = await asks.answer(latest, person, reply.text, note, surface, public, follow_up)
            return AnswerResult(result.taken, result.reason, latest)
    return AnswerResult(False, NO_OPEN_ASK, None)


async def _named(
    asks: Asks, reply: Reply, work_key: str, open_asks: list[AskRow]
) -> tuple[AskRow | None, bool]:
    """The ask the reply's ref names if it is this work's, and whether it names another's."""
    parsed = rules.parse_ref(reply.ref) if reply.ref is not None else None
    if reply.ref is None or parsed is None:
        return None, False
    for ask in open_asks:
        if (ask.kind, ask.seq) == parsed:
            return ask, False
    found = await asks.find(reply.ref)
    if found is None:
        return None, False
    if found.work_key == work_key:
        return found, False
    return None, True
