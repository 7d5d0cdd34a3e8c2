"""Turning an `/answer` someone wrote on GitHub into a decision on the right ask (which ask it
means is the core's: Service.answer_on_work, decided by core.domain.answering.choose)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from core.app.ports import AnswerResult
from core.app.service import Said, Service
from core.domain import refs
from core.domain.logline import emit
from core.domain.responders import Responder
from core.domain.types import AlreadySeen, FollowUp, Seen

from .facts import Written
from .parsing import Command, parse_command, reaction_for
from .settings import SURFACE

log = logging.getLogger("aye.github")

# The reaction a comment earns, as outbox work written in the answer's own transaction.
ReactionFor = Callable[[Written], FollowUp]
# A reaction with no ask behind it (nothing to hang an outbox row on).
ReactFree = Callable[[Written, str], Awaitable[None]]
# Told of every signed `/answer` before it is acted on (the surface learns the installation).
Heard = Callable[[Written], None]


class AnswerDesk:
    """What the webhook handlers call: answer once per comment or review, and schedule the
    reaction."""

    def __init__(
        self, asks: Service, reaction_for_comment: ReactionFor, react_free: ReactFree,
        heard: Heard | None = None,
    ) -> None:
        self.asks = asks
        self.reaction_for_comment = reaction_for_comment
        self.react_free = react_free
        self.heard = heard

    async def handle(self, said: Written, delivery_id: str, react: bool) -> None:
        """An `/answer` a person wrote (anything else, and bots, are left alone), acted on
        once per comment or review whatever the delivery (a redelivery, or a captured delivery
        replayed under a new id), and recorded with its effect: a delivery whose answer failed
        left nothing behind, so redelivering it answers."""
        command = parse_command(said.body)
        if command is None or said.by_bot:
            return
        if self.heard is not None:
            self.heard(said)
        try:
            await self.answer(said, command, delivery_id, react)
        except AlreadySeen:
            emit(log, "github.redelivery", delivery=delivery_id, seen=said.key)

    async def answer(
        self, said: Written, command: Command, delivery_id: str, react: bool
    ) -> AnswerResult:
        """AlreadySeen when this comment or review was acted on before (nothing done)."""
        follow_up = self.reaction_for_comment(said) if react and said.comment_id is not None else None
        on_work = Said(
            said.work_key, Responder(SURFACE, said.login), SURFACE, at=said.at, public=True,
            follow_up=follow_up, seen=Seen(said.key, SURFACE),
        )
        result = await self.asks.answer_on_work(on_work, command, command.note)
        # No ask to record it with: recorded alone, so the free reaction is not repeated.
        if result.ask is None and not await self.asks.first_delivery(said.key, SURFACE):
            raise AlreadySeen(said.key)
        emit(log, "github.answer", delivery=delivery_id, by=said.login,
             where=f"{said.repo}#{said.number}", ask=result.ask.id if result.ask else None,
             ref=refs.ref(result.ask) if result.ask else None,
             taken=result.taken, why=result.reason)
        if follow_up is not None and result.ask is None:
            await self.react_free(said, reaction_for(result.taken))
        return result
