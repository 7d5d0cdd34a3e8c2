"""The one seam between the core and the places people answer (Slack, GitHub, …).

The core never calls a surface's service. When something a surface must show happens (an ask
was created, closed or escalated), the core writes an outbox row for each surface that wants
it, in the same transaction as the change; the delivery loop later hands the row to
`Surface.deliver`. Surfaces answer asks through the core's one façade (core.app.service.Service).

A surface plugs in with a SurfacePlugin (core.app.service): its kind (core.domain.kinds), how
it reads its settings from the environment, its start-up line, and how it is built. The process
lists its plug-ins in one place (bot/surfaces.py); the core names none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.app.timing import Clock as Clock
from core.app.timing import wait_event as wait_event
from core.domain.forms import Misfit
from core.domain.responders import Responder

# The stored ask, as the adapters receive it from the service (its columns: core.domain.ask).
from store.models import AskRow as AskRow

# What a surface may be asked to show.
POST = "post"  # a new ask: show it where its people are
CLOSE = "close"  # answered, expired or withdrawn: show how, and take the buttons away
ESCALATE = "escalate"  # nobody answered in time: show it again to the wider responders
UPDATE = "update"  # still open, but changed (a quorum's count): show it, keep the buttons
REMIND = "remind"  # still open when its reminder came: remind its people, once
RAN = "ran"  # a used approval's agent reported what ran: show it beside how it closed


class RetryLater(Exception):
    """Raised by `deliver` when the far side asked to wait (a 429's Retry-After): `kind` says
    why, for the metrics: `rate_limited` (the far side's limit), `paced` (aye's own pacing, no
    call made) or `error` (anything else worth waiting out)."""

    def __init__(self, after: float, why: str = "rate limited", kind: str = "error") -> None:
        super().__init__(why)
        self.after, self.kind = after, kind


class GiveUp(Exception):
    """Raised by `deliver` when the far side refused for good (a channel that does not exist,
    a missing permission, a deleted comment): the row becomes a dead letter instead of being
    retried forever. The message is the reason, safe to log and show (no agent text)."""


class SurfaceConfigError(Exception):
    """A surface is half-configured; the message names what is missing (one line, exit 2)."""


class ConfigNames(Protocol):
    """What a surface's start-up warnings may ask of the config file (bot/config.py)."""

    def names_kind(self, kind: str) -> bool:
        """Whether any responder or person's identity anywhere in the file is of `kind`."""
        ...

    def first_naming(self, kind: str) -> str | None:
        """The first key (`gates[1].responders`) naming a responder of `kind`, or None."""
        ...


class StoreClosing(Exception):
    """A create that came after the process began to stop."""


class AuthorUnknown(Exception):
    """Who opened a work could not be read (the API is down, no access): an approval that
    depends on it is refused, never taken on a guess."""


class AuthorSource(Protocol):
    """A surface that can say who opened one of its works (for `prevent_self_approval`)."""

    async def author(self, work: dict[str, Any]) -> str | None:
        """`github:<login>` or `slack:<user id>` of the work's author, read from the surface
        itself, never from the agent; AuthorUnknown when it cannot be read."""


class KindUnknown(Exception):
    """What kind a work is (an issue or a pull request) could not be read from its surface: a
    start is then gated as any kind of that surface's work could be (core.app.starts)."""


class KindSource(Protocol):
    """A surface that can say what kind one of its works is (for start gates' `kinds`)."""

    async def work_kind(self, work: dict[str, Any]) -> str:
        """`github.issue` or `github.pull`, read from the surface itself, never from the
        agent's `type`; KindUnknown when it cannot be read."""


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

    def routes(self) -> Sequence[Any]:
        """HTTP routes (aiohttp RouteDefs) this surface serves, such as GitHub's webhook."""

    async def start(self, session: Any) -> None:
        """Open what the surface holds (a Socket Mode connection…) with the process's shared
        aiohttp session."""

    async def close(self) -> None: ...


# -- what the use cases return to the adapters ----------------------------------------------


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """An answer taken, or refused with a reason (a key of rules.REASONS); `ask` as it stands."""

    taken: bool
    reason: str | None
    ask: AskRow | None
    misfit: Misfit | None = None  # for invalid_answer: which part did not fit, and why


@dataclass(frozen=True, slots=True)
class CallDecision:
    decision: str  # allow | pending | refuse
    ask: AskRow | None = None
    approval: str | None = None
    repeat: bool = False  # refused at once: a remembered refusal of this exact call
    error: str | None = None  # a start's refusal: start_refused or approval_timed_out
    receipt: str | None = None  # the signed receipt of the approval allowed or refused
