"""The door an outside system answers an external ask through: `POST /v1/external/{ticket}`.

No bearer token: the ticket names the ask and the verifier's signature proves the sender. The
order keeps what the door reveals to what the sender has proved: the body (64 KiB at most); the
client address's refusals (past them, an unsigned delivery is 429 unread); the signature (401
whatever the ticket's state, so nobody without a secret learns whether a ticket exists; a
delivery signed by another verifier than the ticket's is a 404, as for an unknown ticket); the
ticket's state (one uniform 404 for unknown, expired, withdrawn or used; 200 `already_answered`
for the accepted delivery again); the payload against the ask's schema (400 naming the part;
the ticket stays usable); and last one conditional write that answers the ask
(core/app/external_asks.py), which also records a payload that does not fit or cannot be read.

Nothing here logs a ticket: the access log shows the route's pattern, and the lines below the
ask's id and ref.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from cachetools import TTLCache

from ask_api.http import ApiError, DuplicateKeyError, field_path, json_of, read_body
from ask_api.schemas import unusable
from aye_client.verifiers import Verifier
from core.app.service import Service
from core.domain import external, payloads, refs, vocabulary
from core.domain.bodies import encoding_problem
from core.domain.forms import Misfit
from core.domain.logline import emit

log = logging.getLogger("aye.external")

PATH = "/v1/external/{ticket}"
PREFIX = "/v1/external/"
# Per client address: a sender may burst this many deliveries, then RATE a second.
BURST = 30
RATE = 2.0
ADDRESSES = 10_000  # tracked at once; an address idle for a minute starts afresh
MAX_TICKET = 100


class Buckets:
    """A token bucket per client address, in this process (each process has its own), spent by
    the deliveries refused (unsigned, a dead ticket): senders behind one proxy share an
    address, and a flood of junk from it must not lock the real system's deliveries out."""

    def __init__(self, burst: int = BURST, rate: float = RATE) -> None:
        self.burst, self.rate = burst, rate
        self._buckets: TTLCache[str, tuple[float, float]] = TTLCache(ADDRESSES, ttl=60)

    def _now(self, address: str, now: float) -> float:
        tokens, at = self._buckets.get(address, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.rate)

    def wait(self, address: str, now: float | None = None) -> int | None:
        """None while `address` has room, else the seconds until it has (nothing spent)."""
        now = time.monotonic() if now is None else now
        tokens = self._now(address, now)
        return None if tokens >= 1 else max(1, math.ceil((1 - tokens) / self.rate))

    def spend(self, address: str, now: float | None = None) -> None:
        """One failed delivery from `address`."""
        now = time.monotonic() if now is None else now
        self._buckets[address] = (max(self._now(address, now) - 1, 0.0), now)


class Door:
    def __init__(self, asks: Service, verifiers: Mapping[str, Verifier], key: bytes) -> None:
        """`key` keys the digests of accepted deliveries (core.domain.external.digest)."""
        self.asks, self.key = asks, key
        self.verifiers = dict(verifiers)
        self.buckets = Buckets()

    def routes(self) -> list[web.RouteDef]:
        return [web.post(PATH, self.deliver)]

    async def deliver(self, request: web.Request) -> web.Response:
        address = request.remote or ""
        body = await read_body(request)
        signed_by = [v for v in self.verifiers.values() if v.verify(request.headers, body)]
        wait = self.buckets.wait(address)
        if wait is not None and not signed_by:  # past its refusals: only signed ones are read
            limited = ApiError(429, "rate_limited", "too many refused deliveries from this address")
            limited.retry_after = wait
            raise limited
        ticket = request.match_info["ticket"]
        plausible = ticket.isascii() and ticket.isprintable() and len(ticket) <= MAX_TICKET
        ask = await self.asks.find_by_ticket(ticket) if plausible else None
        verifier = self.verifiers.get(ask.verifier or "") if ask is not None else None
        if ask is None or verifier is None or verifier not in signed_by:
            self.buckets.spend(address)
            # Whoever holds some verifier's secret learns the ticket is no door of theirs;
            # anyone else, only that the signature did not pass.
            if not signed_by:
                if ask is not None:
                    emit(log, "external.unsigned", id=ask.id, ref=refs.ref(ask))
                raise _unsigned()
            if ask is not None and verifier is None:
                log.warning("external ask %s names verifier %s, which is no longer configured",
                            ask.id, ask.verifier)
            raise _dead()
        payload, unreadable, code = None, None, "invalid_payload"
        if ask.status == vocabulary.OPEN:
            payload, unreadable, code = _payload(body)
        done = await self.asks.deliver_external(
            ask, external.digest(body, self.key), payload, unreadable
        )
        emit(log, "external.delivery", id=ask.id, ref=refs.ref(ask), verifier=verifier.name,
             outcome=done.outcome)
        if done.outcome in ("taken", "already_answered"):
            return web.json_response({"outcome": done.outcome})
        misfit = done.result.misfit if done.result is not None else None
        if misfit is not None:
            raise ApiError(400, code, f"{misfit.field}: {misfit.message}", misfit.field)
        raise _dead()


def _payload(body: bytes) -> tuple[Any, Misfit | None, str]:
    """The signed body as JSON the store can hold, or why it cannot be read (the core records
    it like any payload that does not fit: 400, the ticket still usable), with the error
    code: one not in UTF-8 without a byte-order mark is `malformed_body`, as on every route."""
    if encoding_problem(body) is not None:
        misfit = Misfit("must be JSON in UTF-8, without a byte-order mark", payloads.ROOT)
        return None, misfit, "malformed_body"
    try:
        payload = json_of(body)
    except DuplicateKeyError as error:  # refused as on every route, naming the key
        return None, Misfit(error.message, payloads.ROOT), "malformed_body"
    except ApiError:
        return None, Misfit("must be JSON (nested at most 64 levels)", payloads.ROOT), "invalid_payload"
    bad = unusable(payload)
    if bad is not None:
        return None, Misfit(bad.problem, field_path((payloads.ROOT, *bad.loc))), "invalid_payload"
    return payload, None, "invalid_payload"


def _unsigned() -> ApiError:
    return ApiError(401, "bad_signature", "the signature is missing, wrong or too old")


def _dead() -> ApiError:
    return ApiError(404, "not_found", "no open ask has this answer URL")
