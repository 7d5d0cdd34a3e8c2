"""The one seam between the core and the places people answer (Slack, GitHub, …).

The core never calls Slack or GitHub. When something a surface must show happens (an ask was
created, closed or escalated), the core writes an outbox row for each surface that wants it, in
the same transaction as the change; the delivery loop later hands the row to `Surface.deliver`.
Surfaces answer asks by calling `Broker.answer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from bot.responders import Responder

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web

    from store.models import AskRow

# What a surface may be asked to show.
POST = "post"  # a new ask: show it where its people are
CLOSE = "close"  # answered, expired or withdrawn: show how, and take the buttons away
ESCALATE = "escalate"  # nobody answered in time: show it again to the wider responders


class RetryLater(Exception):
    """Raised by `deliver` when the far side asked to wait (a 429's Retry-After)."""

    def __init__(self, after: float, why: str = "rate limited") -> None:
        super().__init__(why)
        self.after = after


class Surface(Protocol):
    name: str

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        """Can this person (or anyone of this kind) be asked on this surface, for this work?"""

    def wants(self, ask: AskRow, action: str) -> bool:
        """Should an outbox row for `action` be written for this ask?"""

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        """Show it. Raise to be retried with backoff (RetryLater to wait a given time)."""

    def health(self) -> dict[str, Any]:
        """What /healthz says of this surface; `{"on": True, ...}`."""

    def routes(self) -> list[web.RouteDef]:
        """HTTP routes this surface serves (GitHub's webhook), or none."""

    async def start(self, session: aiohttp.ClientSession) -> None:
        """Open what the surface holds (a Socket Mode connection…) with the shared session."""

    async def close(self) -> None: ...
