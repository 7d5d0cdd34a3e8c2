"""Turning an `/answer` someone wrote on GitHub into a decision on the right ask."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.asks import parse_ref
from bot.broker import Broker, FollowUp
from bot.logs import emit
from bot.responders import Responder
from store.models import AskRow

from .events import Said
from .parsing import Command, parse_command, reaction_for

log = logging.getLogger("aye.github")

SURFACE = "github"
NO_OPEN_ASK, AMBIGUOUS = "no_open_ask", "ambiguous"

# The reaction a comment earns, as outbox work written in the answer's own transaction.
ReactionFor = Callable[[Said], FollowUp]
# A reaction with no ask behind it (nothing to hang an outbox row on).
ReactFree = Callable[[Said, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Target:
    ask: AskRow
    text: str


@dataclass(frozen=True, slots=True)
class Ambiguous:
    open_asks: list[AskRow]


@dataclass(frozen=True, slots=True)
class Nothing:
    """No open ask on the work, and no ref naming one of its asks."""


Choice = Target | Ambiguous | Nothing


@dataclass(frozen=True, slots=True)
class Outcome:
    taken: bool
    reason: str | None
    ask: AskRow | None


def choose(
    command: Command, open_asks: list[AskRow], named: AskRow | None, elsewhere: bool = False
) -> Choice:
    """Which ask a command answers (pure).

    `named` is the ask the command's ref names, when that ask belongs to this work (open or
    not): it wins, so `/answer q7 yes` reaches q7 alone, and an answer to a closed q7 is refused
    as closed instead of landing on another open ask. `elsewhere`: the ref names an ask of
    another issue; refused rather than taken as this one's free text, since a wrong answer
    taken cannot be undone and a refused one can be written again. Otherwise one open ask takes
    the whole text (a free-text answer may well start with a word that only looks like a ref).
    """
    if command.ref_answer is not None:
        if named is not None:
            return Target(named, command.ref_answer)
        if elsewhere:
            return Nothing()
    if len(open_asks) == 1:
        return Target(open_asks[0], command.text)
    if open_asks:
        return Ambiguous(open_asks)
    return Nothing()


class AnswerDesk:
    """What the webhook handlers call: dedupe the delivery, answer, and schedule the reaction."""

    def __init__(self, broker: Broker, reaction_for_comment: ReactionFor, react_free: ReactFree) -> None:
        self.broker = broker
        self.reaction_for_comment = reaction_for_comment
        self.react_free = react_free

    async def handle(self, said: Said, delivery_id: str, react: bool) -> None:
        """An `/answer` a person wrote (anything else, and bots, are left alone), acted on
        once per delivery."""
        command = parse_command(said.body)
        if command is None or said.by_bot:
            return
        if await self.first_time(delivery_id):
            await self.answer(said, command, delivery_id, react)

    async def first_time(self, delivery_id: str) -> bool:
        """Recorded before acting: a delivery whose handling crashed midway counts as seen,
        so a redelivery never answers twice (at worst a reaction is missing)."""
        first = await self.broker.first_delivery(delivery_id, SURFACE)
        if not first:
            emit(log, "github.redelivery", delivery=delivery_id)
        return first

    async def answer(self, said: Said, command: Command, delivery_id: str, react: bool) -> Outcome:
        follow_up = self.reaction_for_comment(said) if react and said.comment_id is not None else None
        outcome = await self._decide(said, command, follow_up)
        emit(log, "github.answer", delivery=delivery_id, by=said.login, where=_where(said),
             ask=outcome.ask.id if outcome.ask else None,
             ref=Broker.ref(outcome.ask) if outcome.ask else None,
             taken=outcome.taken, why=outcome.reason)
        if follow_up is not None and outcome.ask is None:
            await self.react_free(said, reaction_for(outcome.taken))
        return outcome

    async def _decide(self, said: Said, command: Command, follow_up: FollowUp | None) -> Outcome:
        person = Responder(SURFACE, said.login)
        open_asks = await self.broker.open_on_work(said.work_key)
        named, elsewhere = await self._named(command, said, open_asks)
        choice = choose(command, open_asks, named, elsewhere)
        if isinstance(choice, Target):
            result = await self.broker.answer(
                choice.ask, person, choice.text, command.note, surface=SURFACE, public=True,
                follow_up=follow_up,
            )
            return Outcome(result.taken, result.reason, choice.ask)
        if isinstance(choice, Ambiguous):
            for index, ask in enumerate(choice.open_asks):
                # One reaction on the comment, whatever the number of asks it could mean.
                await self.broker.record_refusal(
                    ask, person, AMBIGUOUS, SURFACE, follow_up if index == 0 else None
                )
            return Outcome(False, AMBIGUOUS, choice.open_asks[0])
        if command.ref is None:
            # Nothing open here: the newest ask of this issue, if any, refuses it with its own
            # reason (already answered, expired…), recorded in its history.
            latest = await self.broker.latest_on_work(said.work_key)
            if latest is not None:
                result = await self.broker.answer(
                    latest, person, command.text, command.note, surface=SURFACE, public=True,
                    follow_up=follow_up,
                )
                return Outcome(result.taken, result.reason, latest)
        return Outcome(False, NO_OPEN_ASK, None)

    async def _named(
        self, command: Command, said: Said, open_asks: list[AskRow]
    ) -> tuple[AskRow | None, bool]:
        """The ask the ref names if it is this work's, and whether it names another work's."""
        parsed = parse_ref(command.ref) if command.ref is not None else None
        if command.ref is None or parsed is None:
            return None, False
        for ask in open_asks:
            if (ask.kind, ask.seq) == parsed:
                return ask, False
        found = await self.broker.find(command.ref)
        if found is None:
            return None, False
        if found.work_key == said.work_key:
            return found, False
        return None, True


def _where(said: Said) -> str:
    return f"{said.repo}#{said.number}"
