"""The core: asks, answers, deadlines, escalation and gates, over the store.

Every decision that must hold across processes is one conditional write whose row count says
who won (`UPDATE asks SET … WHERE seq = :seq AND status = 'open'`), never a Python lock.
The core knows no surface: it writes outbox rows (see bot.surfaces) in the same transaction as
each change, and wakes parked agents after the commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.exc import IntegrityError

from bot import asks as rules
from bot.clock import Clock
from bot.config import Config, Gate
from bot.logs import emit
from bot.responders import OPERATOR, Responder, admitted
from bot.surfaces import CLOSE, ESCALATE, POST, Surface
from bot.waiters import Waiters
from store.db import NOTIFY_CHANNEL, Conn, Store
from store.models import AskRow, DeliveryRow, HistoryRow, OutboxRow, PostRow

log = logging.getLogger("aye.asks")

ASK = AskRow.__table__  # type: ignore[attr-defined]
HISTORY = HistoryRow.__table__  # type: ignore[attr-defined]
OUTBOX = OutboxRow.__table__  # type: ignore[attr-defined]
POSTS = PostRow.__table__  # type: ignore[attr-defined]
DELIVERIES = DeliveryRow.__table__  # type: ignore[attr-defined]
A = ASK.c
# Built once: a statement built per call is compiled and cache-keyed per call.
ASK_INSERT = ASK.insert()
HISTORY_INSERT = HISTORY.insert()
OUTBOX_INSERT = OUTBOX.insert()
DUE_BATCH = 200
CLAIM_SECONDS = 60.0
MAX_BACKOFF = 300.0
# An answer this soon after the winning one raced it: recorded as `late`, not `refused`.
LATE_WINDOW_S = 10.0
# GitHub lets an App redeliver a webhook for a few days: remember delivery ids for longer.
KEEP_DELIVERIES_S = 14 * 86400.0


class NoReachableResponder(Exception):
    """None of the ask's responders can be reached on a running surface."""


class KeyReused(Exception):
    """The idempotency key was used before with a different body."""


@dataclass(frozen=True, slots=True)
class AgentInfo:
    name: str
    responders: list[Responder] | None = None


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
    body: dict[str, Any] = field(default_factory=dict)  # the request as sent, for `key` checks


@dataclass(frozen=True, slots=True)
class FollowUp:
    """Surface work an answer earns whatever its outcome (a reaction on the comment that gave
    it), written to the outbox in the answer's own transaction so a crash cannot split them.
    The outbox row's payload gets `taken` and `reason` added."""

    surface: str
    action: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AnswerResult:
    taken: bool
    reason: str | None  # a key of bot.asks.REASONS when refused
    ask: AskRow | None


@dataclass(frozen=True, slots=True)
class CallDecision:
    decision: str  # allow | pending | refuse
    ask: AskRow | None = None
    approval: str | None = None


def _row(mapping: Any) -> AskRow:
    return AskRow.model_construct(**dict(mapping))


class Broker:
    def __init__(
        self,
        store: Store,
        config: Config,
        clock: Clock | None = None,
        waiters: Waiters | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock or Clock()
        self.waiters = waiters or Waiters()
        self.surfaces: dict[str, Surface] = {}
        # Set when something new may be due sooner than the loops think.
        self.clock_poke = asyncio.Event()
        self.outbox_poke = asyncio.Event()
        # When the clock loop next wakes by itself: a new deadline before it pokes the loop.
        self.clock_wakes_at = 0.0
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

    @staticmethod
    def allowed(ask: AskRow) -> list[Responder]:
        names = list(ask.responders)
        if ask.escalated_at is not None and ask.escalate_responders:
            names += ask.escalate_responders
        return [Responder.parse(n) for n in names]

    # -- reading -------------------------------------------------------------------------

    async def find(self, ident: str, agent: str | None = None) -> AskRow | None:
        """An ask by id or ref; with `agent`, only that agent's."""
        parsed = rules.parse_ref(ident) if len(ident) <= 8 else None
        if parsed is not None:
            kind, seq = parsed
            where = [A.seq == seq, A.kind == kind]
        elif len(ident) == 32:
            where = [A.id == ident]
        else:
            return None
        if agent is not None:
            where.append(A.agent == agent)
        async with self.store.read() as conn:
            found = (await conn.execute(select(ASK).where(*where))).first()
        return _row(found._mapping) if found else None

    async def by_seq(self, seq: int) -> AskRow | None:
        async with self.store.read() as conn:
            found = (await conn.execute(select(ASK).where(A.seq == seq))).first()
        return _row(found._mapping) if found else None

    async def list_asks(
        self, agent: str | None, status: str | None, limit: int, cursor: int | None
    ) -> tuple[list[AskRow], int | None]:
        query = select(ASK)
        if agent is not None:
            query = query.where(A.agent == agent)
        if status is not None:
            query = query.where(A.status == status)
        if cursor is not None:
            query = query.where(A.seq < cursor)
        query = query.order_by(A.seq.desc()).limit(limit + 1)
        async with self.store.read() as conn:
            rows = [_row(r._mapping) for r in (await conn.execute(query)).all()]
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, (rows[-1].seq if more and rows else None)

    async def open_on_work(self, key: str) -> list[AskRow]:
        async with self.store.read() as conn:
            found = await conn.execute(
                select(ASK)
                .where(A.work_key == key, A.status == rules.OPEN)
                .order_by(A.seq)
            )
            return [_row(r._mapping) for r in found.all()]

    async def latest_on_work(self, key: str) -> AskRow | None:
        """The newest ask of a conversation, open or not."""
        async with self.store.read() as conn:
            found = (
                await conn.execute(
                    select(ASK).where(A.work_key == key).order_by(A.seq.desc()).limit(1)
                )
            ).first()
        return _row(found._mapping) if found else None

    async def histories(self, seqs: list[int]) -> dict[int, list[dict[str, Any]]]:
        """The histories of several asks in one query (a page of the operator's list)."""
        found: dict[int, list[dict[str, Any]]] = {seq: [] for seq in seqs}
        if not seqs:
            return found
        async with self.store.read() as conn:
            rows = await conn.execute(
                select(HISTORY).where(HISTORY.c.ask_seq.in_(seqs)).order_by(HISTORY.c.id)
            )
            for r in rows.all():
                found[r.ask_seq].append({"at": r.at, "event": r.event, **r.detail})
        return found

    async def history(self, seq: int) -> list[dict[str, Any]]:
        async with self.store.read() as conn:
            found = await conn.execute(
                select(HISTORY).where(HISTORY.c.ask_seq == seq).order_by(HISTORY.c.id)
            )
            return [{"at": r.at, "event": r.event, **r.detail} for r in found.all()]

    async def wait(self, ask: AskRow, timeout: float) -> AskRow:
        """Return as soon as the ask is no longer open, or after `timeout` with it open."""
        if ask.status != rules.OPEN or timeout <= 0:
            return ask
        with self.waiters.watch(ask.id) as woken:
            # Read again under watch: an answer between the caller's read and now is not missed.
            current = await self.by_seq(ask.seq or 0) or ask
            if current.status == rules.OPEN:
                handed: AskRow | None = None
                with contextlib.suppress(TimeoutError):
                    handed = await asyncio.wait_for(woken, timeout)
                # A change in this process hands the closed row over; one in another process
                # (NOTIFY) or a timeout needs a read.
                current = handed or await self.by_seq(ask.seq or 0) or current
        return current

    async def mark_read(self, ask: AskRow) -> None:
        """The agent has seen its closed ask: record it once, and erase a sensitive answer."""
        if ask.status == rules.OPEN or (ask.read_at is not None and not self._erasable(ask)):
            return
        now = self.clock.now()
        erase = self._erasable(ask)
        async with self.store.write() as conn:
            values: dict[str, Any] = {"read_at": now}
            if erase:
                values.update(answer_value=None, answer_option=None, answer_note=None, erased=True)
            result = await conn.execute(
                update(ASK).where(A.seq == ask.seq, A.read_at.is_(None)).values(**values)
            )
            if result.rowcount == 1:
                await self._history(conn, ask.seq, now, "read", {"erased": True} if erase else {})
        if erase:
            await self.store.checkpoint()
            emit(log, "ask.erased", id=ask.id, ref=self.ref(ask))

    def _racing(self, ask: AskRow) -> bool:
        """An answer arriving just after the winner raced it (a late answer); one that comes
        later is a plain refusal of a closed ask."""
        return (
            ask.status == rules.ANSWERED
            and ask.closed_at is not None
            and self.clock.now() - ask.closed_at <= LATE_WINDOW_S
        )

    def read_later(self, ask: AskRow) -> None:
        """Record the agent's read after its response: off the wake path. A sensitive answer is
        erased before the response instead (mark_read), so a crash cannot leave it behind."""
        if ask.status == rules.OPEN or ask.read_at is not None:
            return
        task = asyncio.create_task(self._read_quietly(ask))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _read_quietly(self, ask: AskRow) -> None:
        try:
            await self.mark_read(ask)
        except Exception:  # a missed 'read' entry must not surface as an error anywhere
            log.warning("could not record a read ask=%s", ask.id)

    @staticmethod
    def _erasable(ask: AskRow) -> bool:
        return bool(ask.sensitive and ask.status == rules.ANSWERED and not ask.erased)

    @staticmethod
    def ref(ask: AskRow) -> str:
        return rules.ref_for(ask.seq or 0, ask.kind)

    # -- creating ------------------------------------------------------------------------

    async def create_question(self, agent: AgentInfo, new: NewAsk) -> tuple[AskRow, bool]:
        """The ask and True when created, or the earlier one and False for a repeated key."""
        responders = agent.responders or self.config.defaults.responders
        if new.key is not None:
            earlier = await self._by_key(agent.name, new.key, rules.digest(new.body))
            if earlier is not None:
                return earlier, False
        if not self.reachable(responders, new.work):
            raise NoReachableResponder
        now = self.clock.now()
        if new.deadline is not None:
            deadline = new.deadline
        else:
            deadline = now + (new.timeout_s or self.config.defaults.question_timeout)
        values = self._ask_values(
            agent.name, rules.QUESTION, new.question, new.options, new.context, new.work,
            responders, now, deadline,
        )
        values.update(idem_key=new.key, body_hash=rules.digest(new.body), sensitive=new.sensitive)
        try:
            ask = await self._insert(values, {"agent": agent.name})
        except IntegrityError:
            # Another request with the same key won the insert: answer as it would have.
            earlier = await self._by_key(agent.name, new.key or "", rules.digest(new.body))
            if earlier is None:
                raise
            return earlier, False
        return ask, True

    async def _by_key(self, agent: str, key: str, body_hash: str) -> AskRow | None:
        async with self.store.read() as conn:
            found = (
                await conn.execute(select(ASK).where(A.agent == agent, A.idem_key == key))
            ).first()
        if found is None:
            return None
        ask = _row(found._mapping)
        if ask.body_hash != body_hash:
            raise KeyReused
        return ask

    def _ask_values(
        self,
        agent: str,
        kind: str,
        question: str,
        options: list[str] | None,
        context: str | None,
        work: dict[str, Any] | None,
        responders: Sequence[Responder],
        now: float,
        deadline: float,
    ) -> dict[str, Any]:
        return {
            "id": uuid.uuid4().hex,
            "agent": agent,
            "kind": kind,
            "status": rules.OPEN,
            "question": question,
            "options": options,
            "context": context,
            "work": work,
            "work_key": rules.work_key(work),
            "responders": [str(r) for r in responders],
            "deadline": deadline,
            "due_at": deadline,
            "created_at": now,
        }

    async def _insert(self, values: dict[str, Any], detail: dict[str, Any]) -> AskRow:
        async with self.store.write() as conn:
            result = await conn.execute(ASK_INSERT, values)
            key = result.inserted_primary_key
            assert key is not None
            seq = int(key[0])
            ask = AskRow.model_construct(**{**_defaults(), **values, "seq": seq})
            await self._history(conn, seq, values["created_at"], "created", detail)
            await self._outbox(conn, ask, POST)
        # After the commit: a loop poked before it could look, find nothing, and sleep on.
        if ask.due_at is not None and ask.due_at < self.clock_wakes_at:
            self.clock_poke.set()
        self.poke_outbox()
        emit(log, "ask.created", id=ask.id, ref=self.ref(ask), kind=ask.kind, agent=ask.agent)
        return ask

    # -- answering -----------------------------------------------------------------------

    async def answer(
        self,
        ask: AskRow,
        person: Responder,
        text: str,
        note: str | None = None,
        surface: str = "api",
        public: bool = False,
        follow_up: FollowUp | None = None,
    ) -> AnswerResult:
        """Take `text` from `person` as the answer, or refuse it and record why.

        `public` is true where the answer is visible to anyone (a GitHub comment): a sensitive
        ask refuses it.
        """
        if not admitted(person, self.allowed(ask)):
            return await self._refuse(ask, person, "not_a_responder", surface, follow_up=follow_up)
        if ask.status != rules.OPEN:
            event = "late" if self._racing(ask) else "refused"
            return await self._refuse(
                ask, person, rules.closed_reason(ask.status), surface, event, follow_up
            )
        if ask.sensitive and public:
            return await self._refuse(ask, person, "sensitive", surface, follow_up=follow_up)
        try:
            answer = rules.match_answer(ask.options, text)
        except rules.InvalidAnswer:
            return await self._refuse(ask, person, "invalid_answer", surface, follow_up=follow_up)
        outcome = None
        if ask.kind == rules.APPROVAL:
            outcome = rules.APPROVED if answer.value == rules.APPROVE else rules.APPROVAL_REFUSED
        now = self.clock.now()
        note = note.strip() if note and note.strip() else None
        values = {
            "status": rules.ANSWERED, "answer_value": answer.value, "answer_option": answer.option,
            "answer_note": note, "answered_by": str(person), "answer_surface": surface,
            "outcome": outcome, "closed_at": now, "due_at": None,
        }
        async with self.store.write() as conn:
            won = await conn.execute(
                update(ASK).where(A.seq == ask.seq, A.status == rules.OPEN).values(**values)
            )
            if won.rowcount == 1:
                detail = {"by": str(person), "surface": surface}
                if outcome:
                    detail["outcome"] = outcome
                await self._history(conn, ask.seq, now, "answered", detail)
                await self._closed(conn, ask)
                await self._follow_up(conn, ask, follow_up, True, None)
            else:
                # Another answer committed between our read and this write: it won.
                await self._history(
                    conn, ask.seq, now, "late", {"by": str(person), "why": "answered", "surface": surface}
                )
                await self._follow_up(conn, ask, follow_up, False, "answered")
        if won.rowcount != 1:
            if follow_up is not None:
                self.outbox_poke.set()
            emit(log, "ask.late", id=ask.id, ref=self.ref(ask), by=str(person), surface=surface)
            return AnswerResult(False, "answered", await self.by_seq(ask.seq or 0))
        closed = ask.model_copy(update=values)
        self._after_close(ask, closed)
        emit(log, "ask.answered", id=ask.id, ref=self.ref(ask), by=str(person), surface=surface,
             outcome=outcome)
        return AnswerResult(True, None, closed)

    async def _refuse(
        self, ask: AskRow, person: Responder, reason: str, surface: str, event: str = "refused",
        follow_up: FollowUp | None = None,
    ) -> AnswerResult:
        now = self.clock.now()
        async with self.store.write() as conn:
            await self._history(
                conn, ask.seq, now, event, {"by": str(person), "why": reason, "surface": surface}
            )
            await self._follow_up(conn, ask, follow_up, False, reason)
        if follow_up is not None:
            self.outbox_poke.set()
        emit(log, f"answer.{event}", id=ask.id, ref=self.ref(ask), by=str(person), why=reason,
             surface=surface)
        return AnswerResult(False, reason, ask)

    async def record_refusal(
        self, ask: AskRow, person: Responder, reason: str, surface: str,
        follow_up: FollowUp | None = None,
    ) -> AnswerResult:
        """For surfaces that refuse before an answer reaches the rules (ambiguous, malformed)."""
        return await self._refuse(ask, person, reason, surface, follow_up=follow_up)

    async def _follow_up(
        self, conn: Conn, ask: AskRow, follow_up: FollowUp | None, taken: bool,
        reason: str | None,
    ) -> None:
        if follow_up is None:
            return
        now = self.clock.now()
        await conn.execute(
            OUTBOX.insert().values(
                ask_seq=ask.seq, surface=follow_up.surface, action=follow_up.action,
                payload={**follow_up.payload, "taken": taken, "reason": reason},
                created_at=now, due_at=now,
            )
        )

    async def withdraw(self, ask: AskRow, by: str) -> AskRow | None:
        """Withdraw an open ask; None when it was no longer open."""
        now = self.clock.now()
        async with self.store.write() as conn:
            won = await conn.execute(
                update(ASK)
                .where(A.seq == ask.seq, A.status == rules.OPEN)
                .values(status=rules.WITHDRAWN, closed_at=now, due_at=None)
            )
            if won.rowcount == 1:
                await self._history(conn, ask.seq, now, "withdrawn", {"by": by})
                await self._closed(conn, ask)
        if won.rowcount != 1:
            return None
        self._after_close(ask)
        emit(log, "ask.withdrawn", id=ask.id, ref=self.ref(ask), by=by)
        return await self.by_seq(ask.seq or 0)

    async def _closed(self, conn: Conn, ask: AskRow) -> None:
        await self._outbox(conn, ask, CLOSE)
        if self.store.is_postgres:
            # Delivered at commit to every process LISTENing: their parked agents wake.
            await conn.execute(text("SELECT pg_notify(:c, :id)"), {"c": NOTIFY_CHANNEL, "id": ask.id})

    def _after_close(self, ask: AskRow, closed: AskRow | None = None) -> None:
        self.waiters.wake(ask.id, closed)
        self.poke_outbox()

    def poke_outbox(self) -> None:
        """After a commit that may have written outbox rows (only surfaces make any)."""
        if self.surfaces:
            self.outbox_poke.set()

    # -- the clock -----------------------------------------------------------------------

    async def next_due(self) -> float | None:
        async with self.store.read() as conn:
            due = await conn.scalar(select(func.min(A.due_at)))
        return float(due) if due is not None else None

    async def fire_due(self) -> int:
        """Escalate or expire every open ask whose time has come; each fires once."""
        now = self.clock.now()
        async with self.store.read() as conn:
            due = (
                await conn.execute(
                    select(ASK)
                    .where(A.due_at <= now)
                    .order_by(A.due_at)
                    .limit(DUE_BATCH)
                )
            ).all()
        fired = 0
        for found in due:
            ask = _row(found._mapping)
            if ask.escalate_at is not None and ask.escalated_at is None and ask.deadline > now:
                fired += await self._escalate(ask, now)
            elif ask.deadline <= now:
                fired += await self._expire(ask, now)
        return fired

    async def _escalate(self, ask: AskRow, now: float) -> int:
        async with self.store.write() as conn:
            won = await conn.execute(
                update(ASK)
                .where(
                    A.seq == ask.seq,
                    A.status == rules.OPEN,
                    A.escalated_at.is_(None),
                )
                .values(escalated_at=now, due_at=ask.deadline)
            )
            if won.rowcount == 1:
                detail = {"to": ask.escalate_responders, "until": ask.deadline}
                await self._history(conn, ask.seq, now, "escalated", detail)
                await self._outbox(conn, ask, ESCALATE)
        if won.rowcount == 1:
            self.poke_outbox()
            emit(log, "ask.escalated", id=ask.id, ref=self.ref(ask))
        return int(won.rowcount)

    async def _expire(self, ask: AskRow, now: float) -> int:
        outcome = rules.APPROVAL_TIMED_OUT if ask.kind == rules.APPROVAL else None
        async with self.store.write() as conn:
            won = await conn.execute(
                update(ASK)
                .where(A.seq == ask.seq, A.status == rules.OPEN)
                .values(status=rules.EXPIRED, closed_at=now, due_at=None, outcome=outcome)
            )
            if won.rowcount == 1:
                await self._history(conn, ask.seq, now, "expired", {})
                await self._closed(conn, ask)
        if won.rowcount == 1:
            self._after_close(ask)
            emit(log, "ask.expired", id=ask.id, ref=self.ref(ask), outcome=outcome)
        return int(won.rowcount)

    # -- gates ---------------------------------------------------------------------------

    async def call(
        self, agent: AgentInfo, operation: str, input_: Any, work: dict[str, Any] | None
    ) -> CallDecision:
        gate = self.config.gate_for(operation)
        if gate is None:
            return CallDecision("allow")
        call_hash = rules.digest(
            {"agent": agent.name, "operation": operation, "input": input_, "work": work}
        )
        audit: dict[str, Any] = {"agent": agent.name, "operation": operation, "input_hash": call_hash[:16]}
        responders = gate.responders or self.config.defaults.responders
        wider = gate.escalate.responders if gate.escalate else []
        if not self.reachable([*responders, *wider], work):
            emit(log, "call.unavailable", **audit)
            return CallDecision("refuse")
        now = self.clock.now()
        used = await self._use_approval(call_hash, now - gate.timeout, now)
        if used is not None:
            emit(log, "call.allowed", approval=used.id, **audit)
            return CallDecision("allow", used, used.id)
        pending = await self._open_call(call_hash)
        if pending is not None:
            return CallDecision("pending", pending)
        values = self._approval_values(agent, operation, input_, work, gate, responders, now)
        values["call_hash"] = call_hash
        try:
            ask = await self._insert(values, audit)
        except IntegrityError:
            # An identical call created the pending approval first: share it.
            pending = await self._open_call(call_hash)
            if pending is None:
                raise
            return CallDecision("pending", pending)
        emit(log, "call.pending", ask=ask.id, **audit)
        return CallDecision("pending", ask)

    def _approval_values(
        self,
        agent: AgentInfo,
        operation: str,
        input_: Any,
        work: dict[str, Any] | None,
        gate: Gate,
        responders: Sequence[Responder],
        now: float,
    ) -> dict[str, Any]:
        shown = rules.canonical_json(input_)
        if len(shown) > 2900:
            shown = shown[:2900] + "…"
        total = gate.timeout + (gate.escalate.timeout if gate.escalate else 0.0)
        values = self._ask_values(
            agent.name, rules.APPROVAL, f"Approve {operation}?", list(rules.APPROVAL_OPTIONS),
            f"Input: {shown}", work, responders, now, now + total,
        )
        values.update(operation=operation, call_input=input_)
        if gate.escalate:
            values.update(
                escalate_responders=[str(r) for r in gate.escalate.responders],
                escalate_at=now + gate.timeout,
                due_at=now + gate.timeout,
            )
        return values

    async def _use_approval(self, call_hash: str, since: float, now: float) -> AskRow | None:
        async with self.store.read() as conn:
            found = (
                await conn.execute(
                    select(ASK)
                    .where(
                        A.call_hash == call_hash,
                        A.approval_used_at.is_(None),
                        A.outcome == rules.APPROVED,
                        A.closed_at >= since,
                    )
                    .order_by(A.seq.desc())
                    .limit(1)
                )
            ).first()
        if found is None:
            return None
        ask = _row(found._mapping)
        async with self.store.write() as conn:
            won = await conn.execute(
                update(ASK)
                .where(A.seq == ask.seq, A.approval_used_at.is_(None))
                .values(approval_used_at=now)
            )
            if won.rowcount == 1:
                await self._history(conn, ask.seq, now, "used", {"agent": ask.agent})
        return ask if won.rowcount == 1 else None

    async def _open_call(self, call_hash: str) -> AskRow | None:
        async with self.store.read() as conn:
            found = (
                await conn.execute(
                    select(ASK).where(A.call_hash == call_hash, A.status == rules.OPEN)
                )
            ).first()
        return _row(found._mapping) if found else None

    # -- what surfaces need ----------------------------------------------------------------

    async def _history(
        self, conn: Conn, seq: int | None, at: float, event: str, detail: dict[str, Any]
    ) -> None:
        await conn.execute(HISTORY_INSERT, {"ask_seq": seq, "at": at, "event": event, "detail": detail})

    async def _outbox(
        self, conn: Conn, ask: AskRow, action: str, payload: dict[str, Any] | None = None
    ) -> None:
        rows = [
            {"ask_seq": ask.seq, "surface": name, "action": action, "payload": payload,
             "created_at": self.clock.now(), "due_at": self.clock.now()}
            for name, surface in self.surfaces.items()
            if surface.wants(ask, action)
        ]
        if rows:
            await conn.execute(OUTBOX_INSERT, rows)

    async def record_posted(
        self, ask: AskRow, surface: str, location: dict[str, Any], where: str
    ) -> None:
        """Keep where a surface showed the ask (the first place, if posted twice) and say so."""
        now = self.clock.now()
        async with self.store.write() as conn:
            if await self._post_location(conn, ask, surface) is None:
                await conn.execute(
                    POSTS.insert().values(
                        ask_seq=ask.seq, surface=surface, location=location, posted_at=now
                    )
                )
            await self._history(conn, ask.seq, now, "posted", {"surface": surface, "where": where})
        emit(log, "ask.posted", id=ask.id, ref=self.ref(ask), surface=surface, where=where)

    async def post_location(self, ask: AskRow, surface: str) -> dict[str, Any] | None:
        async with self.store.read() as conn:
            return await self._post_location(conn, ask, surface)

    @staticmethod
    async def _post_location(
        conn: Conn, ask: AskRow, surface: str
    ) -> dict[str, Any] | None:
        query = select(POSTS.c.location).where(POSTS.c.ask_seq == ask.seq, POSTS.c.surface == surface)
        found = (await conn.execute(query)).first()
        return dict(found.location) if found else None

    async def first_delivery(self, delivery_id: str, source: str) -> bool:
        """True the first time a webhook delivery id is seen, False for a redelivery."""
        try:
            async with self.store.write() as conn:
                await conn.execute(
                    DELIVERIES.insert().values(
                        delivery_id=delivery_id, source=source, received_at=self.clock.now()
                    )
                )
        except IntegrityError:
            return False
        return True

    async def sweep(self) -> None:
        """Forget what no longer matters: webhook delivery ids past GitHub's redelivery window,
        and outbox rows delivered long ago."""
        now = self.clock.now()
        async with self.store.write() as conn:
            await conn.execute(DELIVERIES.delete().where(DELIVERIES.c.received_at < now - KEEP_DELIVERIES_S))
            await conn.execute(
                OUTBOX.delete().where(OUTBOX.c.due_at.is_(None), OUTBOX.c.done_at < now - KEEP_DELIVERIES_S)
            )

    # -- the outbox ------------------------------------------------------------------------

    async def claim_outbox(self, limit: int = 50) -> list[OutboxRow]:
        """Due outbox rows this process may deliver now, oldest first.

        A row waits while an earlier row of the same ask and surface is pending: a message is
        posted before it is updated, whatever retries the post needed.
        """
        now = self.clock.now()
        earlier = OUTBOX.alias("earlier")
        blocked = (
            select(earlier.c.id)
            .where(
                earlier.c.ask_seq == OUTBOX.c.ask_seq,
                earlier.c.surface == OUTBOX.c.surface,
                earlier.c.due_at.is_not(None),
                earlier.c.id < OUTBOX.c.id,
            )
            .exists()
        )
        async with self.store.read() as conn:
            candidates = (
                await conn.execute(
                    select(OUTBOX)
                    .where(OUTBOX.c.due_at <= now, ~blocked)
                    .where((OUTBOX.c.claimed_until.is_(None)) | (OUTBOX.c.claimed_until < now))
                    .order_by(OUTBOX.c.due_at)
                    .limit(limit)
                )
            ).all()
        if not candidates:
            return []
        claimed: list[OutboxRow] = []
        async with self.store.write() as conn:
            for found in candidates:
                won = await conn.execute(
                    update(OUTBOX)
                    .where(OUTBOX.c.id == found.id, OUTBOX.c.due_at.is_not(None))
                    .where((OUTBOX.c.claimed_until.is_(None)) | (OUTBOX.c.claimed_until < now))
                    .values(claimed_until=now + CLAIM_SECONDS, attempts=OUTBOX.c.attempts + 1)
                )
                if won.rowcount == 1:
                    claimed.append(OutboxRow.model_construct(**dict(found._mapping)))
        return claimed

    async def finish_outbox(self, row: OutboxRow) -> None:
        now = self.clock.now()
        async with self.store.write() as conn:
            await conn.execute(
                update(OUTBOX)
                .where(OUTBOX.c.id == row.id)
                .values(due_at=None, done_at=now, claimed_until=None, last_error=None)
            )

    async def retry_outbox(self, row: OutboxRow, after: float | None, why: str) -> None:
        if after is None:
            after = min(2.0 ** (row.attempts or 0), MAX_BACKOFF)
        async with self.store.write() as conn:
            await conn.execute(
                update(OUTBOX)
                .where(OUTBOX.c.id == row.id)
                .values(due_at=self.clock.now() + after, claimed_until=None, last_error=why[:300])
            )

    async def next_outbox_due(self) -> float | None:
        async with self.store.read() as conn:
            due = await conn.scalar(select(func.min(OUTBOX.c.due_at)))
        return float(due) if due is not None else None


def _defaults() -> dict[str, Any]:
    return {
        "options": None, "context": None, "work": None, "work_key": None,
        "escalate_responders": None, "escalate_at": None, "escalated_at": None,
        "closed_at": None, "idem_key": None, "body_hash": None, "sensitive": False,
        "answer_value": None, "answer_option": None, "answer_note": None, "answered_by": None,
        "answer_surface": None, "outcome": None, "read_at": None, "erased": False,
        "operation": None, "call_input": None, "call_hash": None, "approval_used_at": None,
    }
