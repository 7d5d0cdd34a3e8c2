"""Asks: create, read, wait, answer, withdraw. What is decided is decided in
core.domain.answering; here it is written, with one conditional write per decision (its row
count says who won), never a Python lock, so it holds across processes.

The core knows no surface: it writes outbox rows in the same transaction as each change, for
each surface that wants it (core.app.ports), and wakes parked agents after the commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from core.app import approvals, events, external, limits, reads, waiting
from core.app.batch import Batcher
from core.app.ports import CLOSE, POST, Surface
from core.app.tally import Tally
from core.app.timing import Clock
from core.app.waiters import Waiters
from core.domain import answering, rules
from core.domain.forms import Misfit
from core.domain.logline import emit
from core.domain.policy import Defaults
from core.domain.responders import OPERATOR, Responder
from core.domain.types import (
    AgentInfo,
    AlreadySeen,
    AnswerResult,
    FollowUp,
    KeyReused,
    NewAsk,
    NoReachableResponder,
    Seen,
)
from store import asks as q
from store import outbox, posts
from store.db import Conn, Duplicate, Store
from store.models import AskRow

log = logging.getLogger("aye.asks")


class Asks:
    def __init__(
        self, store: Store, defaults: Defaults, clock: Clock | None = None,
        waiters: Waiters | None = None,
    ) -> None:
        self.store = store
        self.defaults = defaults
        self.clock = clock or Clock()
        self.waiters = waiters or Waiters()
        self.events = events.EventHub(store, self.clock)
        self.surfaces: dict[str, Surface] = {}
        # Told of each change this process commits (the metrics replace it).
        self.tally = Tally()
        self.batcher = Batcher(self)
        # Set when something new may be due sooner than the loops think.
        self.clock_poke = asyncio.Event()
        self.outbox_poke = asyncio.Event()
        # When the clock loop next wakes by itself: a new deadline before it pokes the loop.
        self.clock_wakes_at = 0.0
        # Set on the way out: parked agents get their ask as it stands, now, and come back later.
        self.closing = False
        self._background: set[asyncio.Task[None]] = set()

    # -- surfaces ------------------------------------------------------------------------

    def add_surface(self, surface: Surface) -> None:
        self.surfaces[surface.name] = surface

    def reachable(self, responders: Sequence[Responder], work: dict[str, Any] | None) -> bool:
        for responder in responders:
            if responder.kind == OPERATOR.kind:
                return True
            if any(s.reaches(responder, work) for s in self.surfaces.values()):
                return True
        return False

    # -- reading -------------------------------------------------------------------------

    async def find(self, ident: str, agent: str | None = None) -> AskRow | None:
        """An ask by id or ref; with `agent`, only that agent's."""
        parsed = rules.parse_ref(ident) if len(ident) <= 8 else None
        async with self.store.read() as conn:
            if parsed is not None:
                return await q.by_ref(conn, parsed[0], parsed[1], agent)
            if len(ident) == 32:
                return await q.by_id(conn, ident, agent)
        return None

    async def count_hit(self, agent: AgentInfo) -> None:
        """A call or a start counts towards the agent's asks_per_minute (limits.Limited past
        it), in a transaction of its own, before anything is decided."""
        async with self.store.write() as conn:
            await limits.count(conn, agent, self.clock.now(), self.store.is_postgres)

    async def by_seq(self, seq: int) -> AskRow | None:
        async with self.store.read() as conn:
            return await q.by_seq(conn, seq)

    async def list_asks(
        self, agent: str | None, status: str | None, limit: int, cursor: int | None
    ) -> tuple[list[AskRow], int | None]:
        """A page, newest first, and the cursor of the next page (None on the last)."""
        async with self.store.read() as conn:
            rows = await q.page(conn, agent, status, limit + 1, cursor)
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, (rows[-1].seq if more and rows else None)

    async def open_on_work(self, key: str) -> list[AskRow]:
        async with self.store.read() as conn:
            return await q.open_on_work(conn, key)

    async def latest_on_work(self, key: str) -> AskRow | None:
        async with self.store.read() as conn:
            return await q.latest_on_work(conn, key)

    async def history(self, seq: int) -> list[dict[str, Any]]:
        async with self.store.read() as conn:
            return await q.history(conn, seq)

    async def histories(self, seqs: list[int]) -> dict[int, list[dict[str, Any]]]:
        async with self.store.read() as conn:
            return await q.histories(conn, seqs)

    async def wait(self, ask: AskRow, timeout: float) -> AskRow:
        """Return as soon as the ask is no longer open, or after `timeout` with it open (or at
        once when the process is stopping: see release_waiters)."""
        return (await waiting.wait(self, [ask], timeout))[0]

    async def wait_many(self, rows: list[AskRow], timeout: float, until_all: bool) -> list[AskRow]:
        """Several asks: once all (or any) are closed, or after `timeout`; in the given order."""
        return await waiting.wait(self, rows, timeout, until_all)

    def release_waiters(self) -> int:
        """Stopping: every parked agent gets its ask as it stands (still open) at once, and new
        waits return at once. How many were parked."""
        self.closing = True
        parked = len(self.waiters)
        self.waiters.wake_all()
        return parked + self.events.close()

    async def mark_read(self, ask: AskRow) -> bool:
        """The agent has seen its closed ask (see core.app.reads.mark_read)."""
        return await reads.mark_read(self, ask)

    def read_later(self, ask: AskRow) -> None:
        """Record the agent's read after its response (see core.app.reads.read_later)."""
        reads.read_later(self, ask, self._background)

    # -- creating ------------------------------------------------------------------------

    async def create_question(self, agent: AgentInfo, new: NewAsk) -> tuple[AskRow, bool]:
        """The ask and True when created, or the earlier one and False for a repeated key."""
        responders = agent.responders or self.defaults.responders
        if new.verifier is not None:  # an outside system answers it, through its door alone
            responders = [external.responder(new.verifier)]
        body_hash = rules.digest(new.body)
        if new.key is not None:
            earlier = await self._by_key(agent.name, new.key, body_hash)
            if earlier is not None:
                return earlier, False
        if new.verifier is None and not self.reachable(responders, new.work):
            raise NoReachableResponder
        now = self.clock.now()
        deadline = new.deadline or now + (new.timeout_s or self.defaults.question_timeout)
        values = new_ask_values(agent.name, rules.QUESTION, new.work, responders, now, deadline)
        values.update(
            question=new.question, options=new.options, context=new.context,
            idem_key=new.key, body_hash=body_hash, sensitive=new.sensitive, format=new.format,
            form_schema=new.form_schema, pick_min=new.pick_min, pick_max=new.pick_max,
            media=new.media, callback_url=new.callback_url, verifier=new.verifier,
            ticket_hash=new.ticket_hash,
        )
        remind = self.defaults.question_remind_after
        if remind is not None and new.verifier is None and now + remind < deadline:
            values.update(remind_at=now + remind, due_at=now + remind)
        try:
            ask = await self.insert(values, {"agent": agent.name}, agent)
        except Duplicate:
            # Another request with the same key won the insert: answer as it would have.
            earlier = await self._by_key(agent.name, new.key or "", body_hash)
            if earlier is None:
                raise
            return earlier, False
        return ask, True

    async def _by_key(self, agent: str, key: str, body_hash: str) -> AskRow | None:
        async with self.store.read() as conn:
            ask = await q.by_key(conn, agent, key)
        if ask is not None and ask.body_hash != body_hash:
            raise KeyReused
        return ask

    async def insert(
        self, values: dict[str, Any], detail: dict[str, Any], agent: AgentInfo | None = None,
        counted: bool = False,
    ) -> AskRow:
        """A new ask, its `created` entry and its posts, in one transaction (shared with the
        asks made at the same time: core/app/batch.py). With `agent`, its limits are checked in
        that transaction (limits.Limited, nothing written): room for one more open ask, and
        unless `counted` already, one more hit this minute."""
        return await self.batcher.insert(values, detail, agent, counted)

    async def insert_one(
        self, values: dict[str, Any], detail: dict[str, Any], agent: AgentInfo | None,
        counted: bool,
    ) -> AskRow:
        """As `insert`, in a transaction of its own."""
        async with self.store.write() as conn:
            if agent is not None and not counted:
                await limits.count(conn, agent, values["created_at"], self.store.is_postgres)
            await limits.opened(conn, values["agent"], agent, self.store.is_postgres)
            ask = await q.insert(conn, values)
            await q.add_history(conn, ask.seq, values["created_at"], "created", detail)
            wrote = await self.to_outbox(conn, ask, POST)
            await self.changed(conn, ask, events.CREATED)
        self.after_insert(ask, wrote)
        return ask

    def after_insert(self, ask: AskRow, wrote: bool) -> None:
        """After the commit that made `ask` (and outbox rows, when `wrote`)."""
        # A loop poked before the commit could look, find nothing, and sleep on.
        if ask.due_at is not None and ask.due_at < self.clock_wakes_at:
            self.clock_poke.set()
        self.poke_outbox(wrote)
        self.tally.created(ask)
        emit(log, "ask.created", id=ask.id, ref=rules.ref(ask), kind=ask.kind, agent=ask.agent)

    # -- answering -----------------------------------------------------------------------

    async def answer(
        self, ask: AskRow, person: Responder, given: Any, note: str | None = None,
        surface: str = "api", public: bool = False, follow_up: FollowUp | None = None,
        seen: Seen | None = None, extra: dict[str, Any] | None = None,
    ) -> AnswerResult:
        """Take `given` (a surface's text, the API's JSON) from `person` as the answer, or
        refuse it and record who, what and why (see core.domain.answering.judge); the store
        decides a race between two answers. With `seen`, AlreadySeen when that event was acted
        on before (nothing is recorded then). `extra`: more columns the winning write sets."""
        now = self.clock.now()
        verdict = answering.judge(ask, person, given, now, public)
        if isinstance(verdict, answering.Refused):
            return await self.refuse(
                ask, person, verdict.reason, surface, verdict.event, follow_up, seen,
                given=given, misfit=verdict.misfit,
            )
        if approvals.policed(ask, verdict):
            return await approvals.approve(self, ask, person, note, surface, follow_up, seen)
        values = {
            "status": rules.ANSWERED, "answer_value": verdict.value,
            "answer_option": verdict.option,
            "answer_note": note.strip() if note and note.strip() else None,
            "answered_by": str(person), "answer_surface": surface, "outcome": verdict.outcome,
            "closed_at": now, "due_at": None, **(extra or {}),
        }
        by = {"by": str(person), "surface": surface}
        async with self.writing(seen, now) as conn:
            won = await q.close_if_open(conn, ask.seq, values)
            if won:
                outcome = {"outcome": verdict.outcome} if verdict.outcome else {}
                await q.add_history(conn, ask.seq, now, "answered", {**by, **outcome})
                wrote = await self.closed(conn, ask, events.ANSWERED)
            else:
                # Another answer committed between our read and this write: it won.
                late = {"by": str(person), "why": "answered", "surface": surface}
                await q.add_history(conn, ask.seq, now, "late", late)
            await self.add_follow_up(conn, ask, follow_up, won, None if won else "answered")
        if not won:
            if follow_up is not None:
                self.outbox_poke.set()
            emit(log, "ask.late", id=ask.id, ref=rules.ref(ask), by=str(person), surface=surface)
            return AnswerResult(False, "answered", await self.by_seq(ask.seq or 0))
        closed = ask.model_copy(update=values)
        self.after_close(ask, rules.ANSWERED, closed, wrote or follow_up is not None)
        emit(log, "ask.answered", id=ask.id, ref=rules.ref(ask), by=str(person), surface=surface,
             outcome=verdict.outcome)
        return AnswerResult(True, None, closed)

    async def refuse(
        self, ask: AskRow, person: Responder, reason: str, surface: str,
        event: str = answering.REFUSED, follow_up: FollowUp | None = None,
        seen: Seen | None = None, given: Any = None, misfit: Misfit | None = None,
    ) -> AnswerResult:
        """Record an answer not taken: who, what (never for a sensitive ask) and why; surfaces
        call it for what they refuse before the rules can (ambiguous, malformed)."""
        now = self.clock.now()
        async with self.writing(seen, now) as conn:
            detail = {"by": str(person), "why": reason, "surface": surface}
            detail.update(answering.refused_detail(ask, given, misfit))
            await q.add_history(conn, ask.seq, now, event, detail)
            await self.add_follow_up(conn, ask, follow_up, False, reason)
        if follow_up is not None:
            self.outbox_poke.set()
        emit(log, f"answer.{event}", id=ask.id, ref=rules.ref(ask), by=str(person), why=reason,
             surface=surface)
        return AnswerResult(False, reason, ask, misfit)

    @contextlib.asynccontextmanager
    async def writing(self, seen: Seen | None, now: float) -> AsyncIterator[Conn]:
        """A write transaction that first records `seen`: AlreadySeen, and nothing written,
        when the event was acted on before."""
        try:
            async with self.store.write() as conn:
                if seen is not None:
                    await posts.record_delivery(conn, seen.key, seen.source, now)
                yield conn
        except Duplicate:
            raise AlreadySeen(seen.key if seen else "") from None

    async def add_follow_up(
        self, conn: Conn, ask: AskRow, follow_up: FollowUp | None, taken: bool, reason: str | None
    ) -> None:
        if follow_up is None:
            return
        now = self.clock.now()
        payload = {**follow_up.payload, "taken": taken, "reason": reason}
        await outbox.add(conn, [{
            "ask_seq": ask.seq, "surface": follow_up.surface, "action": follow_up.action,
            "payload": payload, "created_at": now, "due_at": now,
        }])

    async def withdraw(self, ask: AskRow, by: str) -> AskRow | None:
        """Withdraw an open ask; None when it was no longer open."""
        now = self.clock.now()
        values = {"status": rules.WITHDRAWN, "closed_at": now, "due_at": None}
        async with self.store.write() as conn:
            won = await q.close_if_open(conn, ask.seq, values)
            if won:
                await q.add_history(conn, ask.seq, now, "withdrawn", {"by": by})
                wrote = await self.closed(conn, ask, events.WITHDRAWN)
        if not won:
            return None
        self.after_close(ask, rules.WITHDRAWN, wrote=wrote)
        emit(log, "ask.withdrawn", id=ask.id, ref=rules.ref(ask), by=by)
        return await self.by_seq(ask.seq or 0)

    # -- what every change does ----------------------------------------------------------

    async def closed(self, conn: Conn, ask: AskRow, event: str) -> bool:
        """In the closing transaction: the surfaces' updates (whether any was written), the
        open count, the event, and other processes' wake-up."""
        wrote = await self.to_outbox(conn, ask, CLOSE)
        await limits.closed(conn, ask.agent, self.store.is_postgres)
        await self.changed(conn, ask, event)
        return wrote

    async def changed(self, conn: Conn, ask: AskRow, event: str) -> None:
        """In the transaction of a change the event stream shows: its event, as the last
        write, and (PostgreSQL) a NOTIFY that wakes other processes' waits and streams."""
        if self.store.is_postgres:
            await q.notify(conn, ask.id)
        await events.record(conn, self.store, ask, event, self.clock.now())

    def after_close(
        self, ask: AskRow, status: str, closed: AskRow | None = None, wrote: bool = True
    ) -> None:
        """After the commit that closed `ask` with `status`: wake its waiters, count it."""
        self.waiters.wake(ask.id, closed)
        at = closed.closed_at if closed is not None else None
        self.tally.closed(ask, status, at if at is not None else self.clock.now())
        self.poke_outbox(wrote)

    def poke_outbox(self, wrote: bool = True) -> None:
        """After a commit that made events and may have written outbox rows (`wrote`): the
        event streams look, and the delivery loop only when there is something to send."""
        self.events.poke()
        if wrote and self.surfaces:
            self.outbox_poke.set()

    async def to_outbox(self, conn: Conn, ask: AskRow, action: str) -> bool:
        """Outbox rows for the surfaces that want this action on this ask; whether any."""
        rows = self.outbox_rows(ask, action)
        await outbox.add(conn, rows)
        return bool(rows)

    def outbox_rows(self, ask: AskRow, action: str) -> list[dict[str, Any]]:
        now = self.clock.now()
        return [{"ask_seq": ask.seq, "surface": name, "action": action, "payload": None,
                 "created_at": now, "due_at": now}
                for name, surface in self.surfaces.items() if surface.wants(ask, action)]


def new_ask_values(
    agent: str, kind: str, work: dict[str, Any] | None, responders: Sequence[Responder],
    now: float, deadline: float,
) -> dict[str, Any]:
    """The columns every new ask has."""
    return {
        "id": uuid.uuid4().hex, "agent": agent, "kind": kind, "status": rules.OPEN,
        "work": work, "work_key": rules.work_key(work), "responders": [str(r) for r in responders],
        "deadline": deadline, "due_at": deadline, "created_at": now,
    }
