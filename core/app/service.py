"""The one façade the adapters call (ask_api/, handlers/): each method is a use case of
core/app/, named for what it does; none reaches the store but through one. The process
(bot/app.py) builds it on its Parts and hands it to every surface and the API."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from core.app import (
    answers,
    asking,
    auditing,
    delivery,
    external_asks,
    gating,
    on_work,
    outcomes,
    reading,
    receipts,
    searching,
    starting,
    waiting,
)
from core.app.external_asks import Delivered as Delivered
from core.app.mailing import LinkRow as LinkRow
from core.app.mailing import MailRow as MailRow
from core.app.mailing import Mails
from core.app.on_work import Said as Said
from core.app.outcomes import NotReportable as NotReportable
from core.app.outcomes import NotYours as NotYours
from core.app.outcomes import Reported as Reported
from core.app.parts import Parts
from core.app.ports import AnswerResult, CallDecision, ConfigNames, Surface
from core.app.reading import Read as Read
from core.app.sessions import BY_TOKEN as BY_TOKEN
from core.app.sessions import SESSION_S as SESSION_S
from core.app.sessions import Session as Session
from core.app.sessions import Sessions as Sessions
from core.app.stream import NAMES, EventHub
from core.app.stream import Event as Event
from core.app.stream import Subscriber as Subscriber
from core.app.tally import Tally
from core.app.timing import Clock
from core.domain.answering import Attempt, Reply
from core.domain.forms import Misfit
from core.domain.kinds import SurfaceKind
from core.domain.policy import Defaults, Gate, gate_for
from core.domain.responders import Responder
from core.domain.types import AgentInfo, FollowUp, NewAsk, Seen
from store.models import AskRow

# What the event stream may send (GET /v1/events).
EVENT_NAMES = NAMES


class Service:
    def __init__(self, parts: Parts, secret: bytes | None = None) -> None:
        self._parts = parts
        # What surfaces derive their own keys from (bot/app.py gives one derived from the
        # operator token); without one, a key of this process's alone.
        self._secret = secret or secrets.token_bytes(32)
        self._mails = Mails(parts)

    # -- for the process only (bot/) -----------------------------------------------------

    @property
    def parts(self) -> Parts:
        """What the use cases work with: the process's loops and metrics read it; adapters
        never do."""
        return self._parts

    def add_surface(self, surface: Surface) -> None:
        self._parts.places.add(surface)

    def inbox_signs_in(self, kinds: frozenset[str]) -> None:
        """People sign in to the web inbox as identities of these kinds (slack, github, email):
        an ask for one of them can be answered there, with or without its surface."""
        self._parts.places.signing_in(kinds)

    def count_with(self, tally: Tally) -> None:
        """`tally` is told of every change this process commits (the process's metrics)."""
        self._parts.tally.add(tally)

    def release_waiters(self) -> int:
        """Stopping: every parked agent gets its ask as it stands (still open) at once, and
        new waits return at once. How many were parked, streams included."""
        parked = len(self._parts.signals.waiters)
        self._parts.signals.stop()
        return parked + self._parts.stream.close()

    def sessions(self, key: bytes, secure: bool) -> Sessions:
        """The inbox's sessions, kept in the store; `key` hashes their secrets."""
        return Sessions(self._parts.store, key, secure, self._parts.clock.now)

    def derived_key(self, purpose: bytes) -> bytes:
        """A key of the process's for `purpose` (email's links), the same in every process
        given the same secret, never shown."""
        return hmac.new(self._secret, b"aye surface: " + purpose, hashlib.sha256).digest()

    # -- what adapters read --------------------------------------------------------------

    @property
    def mails(self) -> Mails:
        """Email's records: its links (hashes only) and each mail, once (core.app.mailing)."""
        return self._mails

    def identities(self, names: Iterable[str]) -> list[Responder]:
        """`names` as responders, each `person:<name>` replaced by that person's identities."""
        return self._parts.people.expand(Responder.parse(n) for n in names)

    @property
    def clock(self) -> Clock:
        return self._parts.clock

    @property
    def defaults(self) -> Defaults:
        return self._parts.defaults

    @property
    def stream(self) -> EventHub:
        """The event stream's hub: subscribe, backlog, newest (ask_api/stream.py)."""
        return self._parts.stream

    def gate_for(self, operation: str, agent: str) -> Gate | None:
        return gate_for(self._parts.gates, operation, agent)

    def reachable(self, responders: list[Responder], work: dict[str, Any] | None) -> bool:
        return self._parts.places.reachable(responders, work)

    async def find(self, ident: str, agent: str | None = None) -> AskRow | None:
        return await reading.find(self._parts, ident, agent)

    async def by_seq(self, seq: int) -> AskRow | None:
        return await reading.by_seq(self._parts, seq)

    async def list_asks(
        self, agent: str | None, status: str | None, limit: int, cursor: int | None
    ) -> tuple[list[AskRow], int | None]:
        return await reading.page(self._parts, agent, status, limit, cursor)

    async def list_for(
        self, who: Responder, status: str | None, limit: int, cursor: int | None
    ) -> tuple[list[AskRow], int | None]:
        """A page of the asks `who` may answer (a person signed in to the inbox)."""
        return await reading.page_for(self._parts, who, status, limit, cursor)

    async def open_count(self, who: Responder | None) -> tuple[int, bool]:
        """How many asks are open for `who` (the operator: None), and whether more than that."""
        return await searching.open_count(self._parts, who)

    async def search(
        self, who: Responder | None, words: str, status: str | None, limit: int,
        cursor: int | None,
    ) -> tuple[list[AskRow], int | None]:
        """A page of the asks `who` may see whose words, ref or agent match `words`."""
        return await searching.search(self._parts, who, words, status, limit, cursor)

    def may_answer(self, ask: AskRow, who: Responder) -> bool:
        """Whether `who` is among the people `ask` is for now (its responders, a person they
        are, a bare kind of theirs; the escalation's once it escalated)."""
        return reading.may_answer(self._parts, ask, who)

    async def audit(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int | None]:
        """A page of the audit chain after seq `after`, and where to read on (None: its end)."""
        return await auditing.page(self._parts, after, limit)

    async def audit_head(self) -> str:
        """The audit chain's newest entry, signed (a compact JWS: core.app.auditing.head)."""
        return (await auditing.head(self._parts)).jws

    async def open_on_work(self, key: str) -> list[AskRow]:
        return await reading.open_on_work(self._parts, key)

    async def history(self, seq: int) -> list[dict[str, Any]]:
        return await reading.history(self._parts, seq)

    async def histories(self, seqs: list[int]) -> dict[int, list[dict[str, Any]]]:
        return await reading.histories(self._parts, seqs)

    # -- agents --------------------------------------------------------------------------

    async def create_question(self, agent: AgentInfo, new: NewAsk) -> tuple[AskRow, bool]:
        return await asking.create_question(self._parts, agent, new)

    async def read_as_agent(self, rows: list[AskRow], record: bool = True) -> Read:
        return await reading.read_as_agent(self._parts, rows, record)

    async def mark_read(self, ask: AskRow) -> bool:
        return await reading.mark_read(self._parts, ask)

    async def wait(self, ask: AskRow, timeout: float) -> AskRow:
        """As soon as the ask is no longer open, or after `timeout` with it open."""
        parked = waiting.wait(self._parts, [ask], timeout)
        del ask  # parked, the wait holds the ask's id and seq, not its row (core/app/waiting.py)
        return (await parked)[0]

    async def wait_many(self, rows: list[AskRow], timeout: float, until_all: bool) -> list[AskRow]:
        parked = waiting.wait(self._parts, rows, timeout, until_all)
        del rows
        return await parked

    async def call(
        self, agent: AgentInfo, operation: str, input_: Any, work: dict[str, Any] | None,
        timeout_s: float | None = None, callback_url: str | None = None,
    ) -> CallDecision:
        return await gating.call(self._parts, agent, operation, input_, work, timeout_s,
                                 callback_url)

    async def start(
        self, agent: AgentInfo, work: dict[str, Any], what: dict[str, Any],
        callback_url: str | None = None,
    ) -> CallDecision:
        return await starting.start(self._parts, agent, work, what, callback_url)

    async def withdraw(self, ask: AskRow, by: str) -> AskRow | None:
        return await answers.withdraw(self._parts, ask, by)

    async def report_outcome(
        self, agent: AgentInfo, approval: str, outcome: str, detail: str | None,
        use: int | None = None,
    ) -> Reported:
        """What ran after the agent's use `use` (None: the latest) of `approval`
        (core.app.outcomes): NotYours, NotReportable."""
        return await outcomes.report(self._parts, agent, approval, outcome, detail, use)

    # -- receipts ------------------------------------------------------------------------

    async def receipt(self, ask: AskRow) -> str | None:
        """A decided approval's signed receipt (None for any other ask)."""
        return await receipts.receipt(self._parts.store, ask)

    async def jwks(self) -> dict[str, Any]:
        """The public keys that verify receipts, the current one first."""
        return await self._parts.keys.jwks()

    # -- people and outside systems ------------------------------------------------------

    async def answer(
        self, ask: AskRow, attempt: Attempt, given: Any, note: str | None = None
    ) -> AnswerResult:
        """Take (or refuse, and record) an answer attempt (who, through which surface, what
        the surface vouches for); where it is decided: core/domain/answering.py."""
        return await answers.answer(self._parts, ask, attempt, given, note)

    async def refuse(
        self, ask: AskRow, person: Responder, reason: str, surface: str,
        follow_up: FollowUp | None = None, seen: Seen | None = None,
    ) -> AnswerResult:
        """Record an answer a surface refused before the rules could (malformed, ambiguous)."""
        return await answers.refuse(self._parts, ask, person, reason, surface,
                                    follow_up=follow_up, seen=seen)

    async def answer_on_work(
        self, said: Said, reply: Reply, note: str | None
    ) -> AnswerResult:
        return await on_work.answer_on_work(self._parts, said, reply, note)

    async def find_by_ticket(self, ticket: str) -> AskRow | None:
        return await external_asks.find(self._parts, ticket)

    async def deliver_external(
        self, ask: AskRow, seen: str, payload: Any, unreadable: Misfit | None = None
    ) -> Delivered:
        """An outside system's signed delivery to its ask's door (core.app.external_asks)."""
        return await external_asks.deliver(self._parts, ask, seen, payload, unreadable)

    # -- surfaces' own records -----------------------------------------------------------

    async def record_posted(
        self, ask: AskRow, surface: str, location: dict[str, Any], where: str
    ) -> None:
        await delivery.record_posted(self._parts, ask, surface, location, where)

    async def post_location(self, ask: AskRow, surface: str) -> dict[str, Any] | None:
        return await delivery.post_location(self._parts, ask, surface)

    async def first_delivery(self, delivery_id: str, source: str) -> bool:
        return await delivery.first_delivery(self._parts, delivery_id, source)


@dataclass(frozen=True, slots=True)
class SurfacePlugin:
    """Everything the process needs to run a surface, from the surface itself."""

    kind: SurfaceKind
    # Its settings from the environment: None when it is off (its secrets are unset); raises
    # SurfaceConfigError when it is half-configured.
    read_settings: Callable[[Mapping[str, str]], Any | None]
    # The start-up line, given what read_settings returned (None: off); a warning may follow
    # it, each on a line of its own.
    describe: Callable[[Any | None], str]
    # Builds the running surface from its settings and its config section.
    build: Callable[[Any, BaseModel | None, Service], Surface]
    # Start-up warnings, given its settings (None: off) and what the config file names.
    warnings: Callable[[Any | None, ConfigNames], list[str]] = lambda settings, config: []
    # Whether its config section, set while the surface is off, is still of use, given the
    # environment (Slack's `teams`, for "Sign in with Slack"): not an unused section then.
    kept_while_off: Callable[[Mapping[str, str], BaseModel], bool] = lambda env, section: False

    @property
    def name(self) -> str:
        return self.kind.name
