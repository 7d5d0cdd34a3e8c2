"""External asks: an outside system answers through a signed door (ask_api/external.py).

The ticket in an ask's answer URL is 192 random bits from `secrets`; the store keeps only its
SHA-256, so a leaked database answers nothing. The outside system answers as
`external:<verifier>`, the ask's only responder: no person, and not the operator, can answer an
external ask (the operator can withdraw it). The delivery that answered is remembered by its
digest, so the same delivery again is a repeat, not a refusal.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.domain import rules
from core.domain.kinds import EXTERNAL_KIND
from core.domain.logline import emit
from core.domain.responders import Responder
from core.domain.types import AnswerResult
from store import asks as q
from store.models import AskRow

if TYPE_CHECKING:
    from core.app.asks import Asks

log = logging.getLogger("aye.external")
TICKET_BYTES = 24
SURFACE = "external"
# What the operator's view says of the ticket (never the ticket itself).
WAITING, USED, DEAD = "waiting", "used", "dead"


def new_ticket() -> tuple[str, str]:
    """(the ticket, its hash): the ticket goes to the agent once, the hash to the store."""
    ticket = secrets.token_urlsafe(TICKET_BYTES)
    return ticket, ticket_hash(ticket)


def ticket_hash(ticket: str) -> str:
    return hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).hexdigest()


def digest(body: bytes, key: bytes) -> str:
    """The delivery's fingerprint, keyed (HMAC-SHA256 with a key the store does not hold): a
    leaked database cannot confirm a guess at what a sensitive payload was."""
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def responder(verifier: str) -> Responder:
    return Responder(EXTERNAL_KIND, verifier)


def ticket_state(ask: AskRow) -> str | None:
    """waiting (the door is open), used (it answered the ask) or dead (expired, withdrawn)."""
    if ask.ticket_hash is None:
        return None
    if ask.status == rules.OPEN:
        return WAITING
    return USED if ask.delivery_digest is not None else DEAD


@dataclass(frozen=True, slots=True)
class Delivered:
    """What the door says: `taken`, `already_answered` (the accepted delivery again), `dead`
    (not open, or answered by another delivery) or `misfit` (with `result.misfit`)."""

    outcome: str
    result: AnswerResult | None = None


async def deliver(asks: Asks, ask: AskRow, seen: str, payload: Any) -> Delivered:
    """Answer `ask` with the outside system's `payload` (its signature already checked), in
    one conditional write, remembering the delivery's `seen` digest; a payload that does not
    fit the ask's schema is refused and recorded, and the ticket stays usable."""
    if ask.status != rules.OPEN:
        return Delivered("already_answered" if ask.delivery_digest == seen else "dead")
    person = responder(ask.verifier or "")
    result = await asks.answer(ask, person, payload, surface=SURFACE,
                               extra={"delivery_digest": seen})
    if result.taken:
        return Delivered("taken", result)
    if result.misfit is not None:
        return Delivered("misfit", result)
    now = result.ask  # another delivery or a withdrawal won the race
    if now is not None and now.delivery_digest == seen:
        return Delivered("already_answered", result)
    emit(log, "external.dead", id=ask.id, ref=rules.ref(ask), why=result.reason)
    return Delivered("dead", result)


async def find(asks: Asks, ticket: str) -> AskRow | None:
    """The ask whose door `ticket` opens, whatever its state; None for an unknown ticket."""
    async with asks.store.read() as conn:
        return await q.by_ticket(conn, ticket_hash(ticket))
