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
import secrets

from core.domain import vocabulary
from core.domain.ask import Ask
from core.domain.kinds import EXTERNAL_KIND
from core.domain.responders import Responder

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


def ticket_state(ask: Ask) -> str | None:
    """waiting (the door is open), used (it answered the ask) or dead (expired, withdrawn)."""
    if ask.ticket_hash is None:
        return None
    if ask.status == vocabulary.OPEN:
        return WAITING
    return USED if ask.delivery_digest is not None else DEAD
