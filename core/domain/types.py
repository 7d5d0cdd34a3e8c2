"""What the core takes and returns, so the API and the surfaces need no more of the core."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.domain.callback_urls import BadUrl, match
from core.domain.responders import Responder


class NoReachableResponder(Exception):
    """None of the ask's responders can be reached on a running surface."""


class AlreadySeen(Exception):
    """The event an answer came from (a GitHub comment, a delivery) was acted on before."""


@dataclass(frozen=True, slots=True)
class Seen:
    """The event an answer comes from, recorded in the answer's own transaction so that it
    acts once, and is not lost when the answer fails: `key` (e.g. `comment:123`) per `source`."""

    key: str
    source: str


class CallbackRefused(Exception):
    """A callback URL this agent may not use; the message says why (never the secret)."""


class KeyReused(Exception):
    """The idempotency key was used before with a different body."""


@dataclass(frozen=True, slots=True)
class AgentInfo:
    name: str
    responders: list[Responder] | None = None
    # Where its callbacks may go (URL prefixes), and whether it has a secret to sign them.
    callback_urls: tuple[str, ...] = ()
    signs_callbacks: bool = False
    # Limits (core/app/limits.py): open asks at once, and asks, calls and starts a minute.
    max_open: int = 500
    asks_per_minute: int = 120
    # The verifiers its external asks may name (the operator's [[agents]] verifiers).
    verifiers: tuple[str, ...] = ()

    def may_call_back(self, url: str) -> bool:
        return self.callback_refusal(url) is None

    def check_callback(self, url: str | None) -> None:
        """CallbackRefused when a callback may not go to `url` (None: no callback)."""
        why = None if url is None else self.callback_refusal(url)
        if why is not None:
            raise CallbackRefused(why)

    def callback_refusal(self, url: str) -> str | None:
        """Why a callback may not go to `url` (core/domain/callback_urls.py), or None."""
        if not self.signs_callbacks:
            return "this agent has no callback_secret_env"
        try:
            match(url, self.callback_urls)
        except BadUrl as exc:
            return str(exc)
        return None


@dataclass(slots=True)
class NewAsk:
    question: str
    options: list[str] | None = None
    context: str | None = None
    deadline: float | None = None
    timeout_s: float | None = None
    work: dict[str, Any] | None = None
    key: str | None = None
    sensitive: bool = False
    danger: bool = False  # its affirmative answer is destructive: every surface asks to confirm
    body: dict[str, Any] = field(default_factory=dict)  # the request as sent, for `key` checks
    format: str | None = None  # core.domain.formats; None: choice with options, text without
    form_schema: dict[str, Any] | None = None
    pick_min: int | None = None
    pick_max: int | None = None
    media: list[dict[str, Any]] | None = None
    callback_url: str | None = None
    # An external ask: the verifier its door checks, and the hash of its ticket.
    verifier: str | None = None
    ticket_hash: str | None = None


@dataclass(frozen=True, slots=True)
class FollowUp:
    """Surface work an answer earns whatever its outcome (a reaction on the comment that gave
    it), written to the outbox in the answer's own transaction so a crash cannot split them.
    The outbox row's payload gets `taken` and `reason` added."""

    surface: str
    action: str
    payload: dict[str, Any]
