"""Callbacks: when an ask with a `callback_url` closes, its agent is POSTed the ask, signed.

The delivery is outbox work (written in the closing transaction, so a crash loses none),
handed to this sender like any surface's: one try in flight per callback (the outbox claim),
10 s a try, retried with jittered backoff for two days. The URL is matched against the agent's
`callback_urls` again before every send (the config may have changed), and the URL posted to is
the one rebuilt from the checked parts (core/domain/callback_urls.py). The callbacks have their own
session, whose resolver (ask_api/callback_dns.py) lets them connect only to addresses they may
reach: a host resolving to none of those is a dead letter, `blocked_address`, never retried.
Redirects are never followed: a 3xx is a non-2xx like any other, retried (the receiver may be
fixed), and its Location is never visited. A 2xx is the agent's read of the ask: a sensitive
answer is then erased.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from ask_api.callback_dns import BLOCKED, BlockedAddress, GuardedResolver
from ask_api.views import ask_view
from core.app.ports import CLOSE, AskRow, GiveUp, RetryLater
from core.app.service import Service
from core.domain.callback_urls import BadUrl, Parsed, match
from core.domain.logline import emit
from core.domain.responders import Responder

log = logging.getLogger("aye.callbacks")

NAME = "callback"
EVENT = "ask.closed"
TRY_TIMEOUT_S = 10.0
KEEP_TRYING_S = 48 * 3600.0  # the contract's "at least 24 hours", with room
FIRST_RETRY_S, MAX_RETRY_S = 5.0, 1800.0


@dataclass(frozen=True, slots=True)
class Target:
    """An agent's callback secret and the URL prefixes its callbacks may go to."""

    secret: bytes
    prefixes: tuple[str, ...]

    def allows(self, url: str) -> Parsed | None:
        """The callback as it is sent, when `url` is under one of the prefixes."""
        try:
            return match(url, self.prefixes)
        except BadUrl:
            return None


def signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def delivery_id(ask: AskRow) -> str:
    """One delivery per ask (it closes once): the same id on every retry."""
    return f"{ask.id}.closed"


def backoff(ask: AskRow, now: float) -> float:
    """Later tries are sparser: about a quarter of the time since the close, 5 s to 30 min,
    with jitter so that many callbacks to one receiver do not come back in step."""
    since = max(0.0, now - (ask.closed_at or now))
    base = min(max(since / 4, FIRST_RETRY_S), MAX_RETRY_S)
    return base * random.uniform(0.8, 1.2)


class Callbacks:
    """The outbox's `callback` surface: it reaches no person and is posted nothing but the
    close of an ask that named a callback."""

    name = NAME

    def __init__(
        self, asks: Service, targets: Mapping[str, Target], lookup: AbstractResolver | None = None
    ) -> None:
        self.asks = asks
        self.targets = dict(targets)
        # `lookup` resolves names (getaddrinfo by default); the guard keeps what may be reached.
        self.resolver = GuardedResolver(lookup)
        self.session: aiohttp.ClientSession | None = None
        self.delivered = 0

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return False

    def wants(self, ask: AskRow, action: str) -> bool:
        return action == CLOSE and bool(ask.callback_url)

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        target = self.targets.get(ask.agent)
        callback = target.allows(ask.callback_url or "") if target is not None else None
        if target is None or callback is None:
            raise GiveUp("the callback URL is no longer allowed for this agent")
        now = self.asks.clock.now()
        if now - (ask.closed_at or now) > KEEP_TRYING_S:
            raise GiveUp(f"no 2xx from the callback in {KEEP_TRYING_S / 3600:.0f} h")
        body = json.dumps({"event": EVENT, "ask": ask_view(ask)}, ensure_ascii=False).encode()
        status = await self._post(callback, body, target, ask, now)
        if not 200 <= status < 300:
            kind = "rate_limited" if status == 429 else "error"
            raise RetryLater(backoff(ask, now), f"the callback answered {status}", kind)
        self.delivered += 1
        emit(log, "callback.delivered", ask=ask.id, delivery=delivery_id(ask), status=status)
        await self.asks.mark_read(ask)

    async def _post(
        self, callback: Parsed, body: bytes, target: Target, ask: AskRow, now: float
    ) -> int:
        if self.session is None:
            raise RetryLater(FIRST_RETRY_S, "callbacks are not started")
        headers = {
            "Content-Type": "application/json", "X-Aye-Event": EVENT,
            "X-Aye-Delivery": delivery_id(ask), "X-Aye-Signature-256": signature(target.secret, body),
        }
        try:
            async with self.session.post(
                URL(callback.url, encoded=True), data=body, headers=headers, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=TRY_TIMEOUT_S),
            ) as resp:
                return resp.status
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, BlockedAddress):
                emit(log, "callback.blocked", level=logging.WARNING, ask=ask.id,
                     delivery=delivery_id(ask), host=callback.host)
                raise GiveUp(BLOCKED) from None
            raise RetryLater(backoff(ask, now), f"callback failed: {exc.__class__.__name__}") from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RetryLater(backoff(ask, now), f"callback failed: {exc.__class__.__name__}") from None

    def health(self) -> dict[str, Any]:
        return {"on": True, "delivered": self.delivered}

    def routes(self) -> list[Any]:
        return []

    async def start(self, session: Any) -> None:
        # Not the process's shared session: this one's connector resolves through the guard,
        # and trusts no proxy from the environment (a proxy would connect on aye's behalf).
        connector = aiohttp.TCPConnector(resolver=self.resolver)
        self.session = aiohttp.ClientSession(connector=connector, trust_env=False)

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None
        await self.resolver.close()
