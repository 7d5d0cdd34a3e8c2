"""External asks' door, as a use case: the outside system's delivery (its signature already
checked by ask_api/external.py) answers its ask once; tickets and their state are the domain's
(core/domain/external.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from core.app import answers
from core.app.parts import Parts
from core.app.ports import AnswerResult
from core.domain import refs, vocabulary
from core.domain.answering import INVALID_ANSWER, Attempt
from core.domain.external import SURFACE, responder, ticket_hash
from core.domain.forms import Misfit
from core.domain.logline import emit
from store import asks as q
from store.models import AskRow

log = logging.getLogger("aye.external")


@dataclass(frozen=True, slots=True)
class Delivered:
    """What the door says: `taken`, `already_answered` (the accepted delivery again), `dead`
    (not open, or answered by another delivery) or `misfit` (with `result.misfit`)."""

    outcome: str
    result: AnswerResult | None = None


async def deliver(
    parts: Parts, ask: AskRow, seen: str, payload: Any, unreadable: Misfit | None = None
) -> Delivered:
    """Answer `ask` with the outside system's `payload` (its signature already checked), in
    one conditional write, remembering the delivery's `seen` digest; a payload that does not
    fit the ask's schema, or that the door could not read at all (`unreadable`: not JSON, not
    UTF-8), is refused and recorded, and the ticket stays usable."""
    if ask.status != vocabulary.OPEN:
        return Delivered("already_answered" if ask.delivery_digest == seen else "dead")
    person = responder(ask.verifier or "")
    if unreadable is not None:
        refused = await answers.refuse(parts, ask, person, INVALID_ANSWER, SURFACE,
                                       misfit=unreadable)
        return Delivered("misfit", refused)
    result = await answers.answer(parts, ask, Attempt(person, SURFACE), payload,
                                  extra={"delivery_digest": seen})
    if result.taken:
        return Delivered("taken", result)
    if result.misfit is not None:
        return Delivered("misfit", result)
    now = result.ask  # another delivery or a withdrawal won the race
    if now is not None and now.delivery_digest == seen:
        return Delivered("already_answered", result)
    emit(log, "external.dead", id=ask.id, ref=refs.ref(ask), why=result.reason)
    return Delivered("dead", result)


async def find(parts: Parts, ticket: str) -> AskRow | None:
    """The ask whose door `ticket` opens, whatever its state; None for an unknown ticket."""
    async with parts.store.read() as conn:
        return await q.by_ticket(conn, ticket_hash(ticket))
