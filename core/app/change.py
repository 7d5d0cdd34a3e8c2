"""The unit of work: every change to an ask is one `change` block, one transaction.

    async with parts.change(ask, seen) as ch:       # one transaction
        if await ch.close_if_open(values):          # one conditional write decides
            ch.history("answered", by)
    # after the commit, in one place: wake, poke, tally, log

What a change must also do is done by the block, so a new kind of change cannot forget a step:
- `count` is the one way a limit is counted (core.app.counting), in the change's transaction;
- `insert` counts the agent's limits, writes the `created` entry, the surfaces' posts and the
  `ask.created` event;
- `close_if_open` (the one conditional write that decides a close) writes the surfaces'
  updates, one open ask fewer, and the close's event; a decided approval's receipt is signed
  and kept in that same write, and its hash (`receipt_sha256`) goes into the next history
  entry about the ask (the one recording the decision); after the commit it wakes the ask's
  parked agents with the closed row and counts the close;
- `escalate_if_open`, `remind_if_open` and `count_approval` write their surfaces' rows (and
  the escalation its event).
History entries, outbox rows and events are collected and written at the end of the block in
one order (history and events last, under the commit-order lock: store/append.py), with the
agents' reads queued in this process (core.app.reads). After the commit, and only then: parked
agents woken, the clock and outbox loops and the event streams poked, the metrics told, the log
lines written. A change rolled back (an exception) does none of these.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.app import counting, receipts
from core.app.ports import CLOSE, ESCALATE, POST, RAN, REMIND, UPDATE
from core.app.reads import Reads
from core.app.stream import ANSWERED, CREATED, ESCALATED, EXPIRED, OUTCOME, WITHDRAWN
from core.domain import refs, vocabulary
from core.domain.ask import AskValues, is_approval
from core.domain.logline import emit
from core.domain.types import AgentInfo, AlreadySeen, FollowUp, Seen
from store import append, outbox, posts
from store import asks as q
from store.db import Conn, Duplicate, Store
from store.models import AskRow

if TYPE_CHECKING:
    from core.app.places import Places
    from core.app.receipts import Sealer
    from core.app.signals import Signals
    from core.app.tally import Tally
    from core.app.timing import Clock

log = logging.getLogger("aye.asks")

# The event each way of closing records.
CLOSED_EVENT = {vocabulary.ANSWERED: ANSWERED, vocabulary.EXPIRED: EXPIRED, vocabulary.WITHDRAWN: WITHDRAWN}


def deciding(ask: AskRow) -> bool:
    """Whether a change about `ask` may decide an approval of a call, and so sign its receipt."""
    return ask.status == vocabulary.OPEN and ask.operation is not None and is_approval(ask)


@dataclass(slots=True)
class _After:
    """What the commit sets off, collected during the block."""

    woken: list[tuple[str, AskRow | None]] = field(default_factory=list)
    closed: list[tuple[AskRow, str, float]] = field(default_factory=list)
    created: list[AskRow] = field(default_factory=list)
    fired: list[tuple[str, float]] = field(default_factory=list)
    lines: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    outbox: bool = False
    events: bool = False


class Change:
    """One transaction on the store: the writes that decide, and what must go with them."""

    def __init__(self, conn: Conn, parts: Changes, ask: AskRow | None) -> None:
        self.conn = conn
        self.ask = ask
        self.now = parts.clock.now()
        self._parts = parts
        self._history: list[dict[str, Any]] = []
        self._history_asks: list[str] = []  # each entry's ask id, for the audit chain
        self._outbox: list[dict[str, Any]] = []
        self._events: list[dict[str, Any]] = []
        self._notify: list[str] = []
        # The hash of each receipt signed in this change, by ask, until the entry recording
        # the decision takes it.
        self._sealed: dict[int | None, str] = {}
        self.after = _After()
        # The agents' reads this change writes (core.app.reads), and whether they go back to
        # be written alone should it fail.
        self.carried: list[AskRow] = []
        self.gives_back = True

    # -- the writes that decide -----------------------------------------------------------

    async def insert(
        self, values: AskValues, detail: dict[str, Any], agent: AgentInfo | None = None,
        counted: bool = False,
    ) -> AskRow:
        """A new ask, with its `created` entry, posts and event. With `agent`, its limits are
        checked here (counting.Limited rolls the whole change back): room for one more open
        ask and, unless `counted` already, one more hit this minute."""
        name, at = values["agent"], values["created_at"]
        # In two statements, the minute's hits locked before the open count: one order of locks.
        if agent is not None and not counted:
            await self.count(name, agent, hits=1, at=at)
        await self.count(name, agent, new_open=1, at=at)
        ask = await q.insert(self.conn, values)
        self._created(ask, detail)
        return ask

    async def count(
        self, name: str, agent: AgentInfo | None, hits: int = 0, new_open: int = 0,
        at: float | None = None,
    ) -> None:
        """The one way a limit is counted: `hits` more asks, calls or starts by `agent` in the
        minute of `at` (now by default), `new_open` more open asks for `name`, in this change
        (core.app.counting). Limited past either: the whole change is rolled back, these
        counts with it; so a count that must stand whatever follows (a call's hit, gating.py)
        is a change of its own."""
        await counting.add(self.conn, name, agent, self.now if at is None else at,
                           self._parts.store.is_postgres, hits, new_open)

    async def insert_many(
        self, values: list[AskValues], details: list[dict[str, Any]]
    ) -> list[tuple[AskRow, bool]]:
        """Several new asks (their limits already counted: core.app.batch), each with its
        `created` entry, posts and event; one wake-up for other processes. For each, the ask
        and whether it wrote outbox rows."""
        made = await q.insert_many(self.conn, values)
        wrote = []
        for ask, detail in zip(made, details, strict=True):
            before = len(self._outbox)
            self._created(ask, detail, notify=False)
            wrote.append(len(self._outbox) > before)
        if made:
            self._notify.append(made[-1].id)
        return list(zip(made, wrote, strict=True))

    def _created(self, ask: AskRow, detail: dict[str, Any], notify: bool = True) -> None:
        self.history("created", detail, ask, at=ask.created_at)
        self.outbox(POST, ask)
        self.event(CREATED, ask, notify=notify, at=ask.created_at)
        self.after.created.append(ask)
        self.log("ask.created", id=ask.id, ref=refs.ref(ask), kind=ask.kind, agent=ask.agent)

    async def close_if_open(self, values: dict[str, Any], ask: AskRow | None = None) -> bool:
        """Close the ask with `values` (its `status` among them) if it is still open: the one
        conditional write that decides a close, across processes. When it won: the surfaces'
        updates, one open ask fewer, the close's event; after the commit its parked agents
        are woken with the closed row and the close is counted. A decided approval's receipt
        is signed and written with the close: `values` gains it (`receipt`)."""
        ask = self._ask(ask)
        postgres = self._parts.store.is_postgres
        sealer = self._parts.sealer
        sealed = await sealer.seal(self.conn, ask.model_copy(update=values)) if sealer else None
        if sealed is not None:
            values["receipt"] = sealed
        won = await counting.close_if_open(self.conn, ask.seq, ask.agent, values, postgres)
        if won and sealed is not None:
            self._sealed[ask.seq] = receipts.sha256(sealed)
        if won:
            status = values["status"]
            self.outbox(CLOSE, ask)
            self.event(CLOSED_EVENT[status], ask)
            closed = ask.model_copy(update=values)
            self.after.woken.append((ask.id, closed))
            self.after.closed.append((ask, status, values.get("closed_at") or self.now))
        return won

    async def lock(self, ask: AskRow | None = None) -> AskRow:
        """The ask's row, locked until the commit (PostgreSQL): this change is its one writer."""
        ask = self._ask(ask)
        return await q.locked(self.conn, ask.seq) or ask

    async def count_approval(self, approvers: list[str], ask: AskRow | None = None) -> None:
        """One more approver of a quorum not yet reached (on the locked row): shown on the
        surfaces, the ask kept open."""
        ask = self._ask(ask)
        await q.count_approval(self.conn, ask.seq, approvers)
        self.outbox(UPDATE, ask)

    async def remind_if_open(self, due_at: float, ask: AskRow | None = None) -> bool:
        ask = self._ask(ask)
        won = await q.remind_if_open(self.conn, ask.seq, self.now, due_at=due_at)
        if won:
            self.outbox(REMIND, ask)
        return won

    async def escalate_if_open(self, due_at: float, ask: AskRow | None = None) -> bool:
        ask = self._ask(ask)
        won = await q.escalate_if_open(self.conn, ask.seq, self.now, due_at=due_at)
        if won:
            self.outbox(ESCALATE, ask)
            self.event(ESCALATED, ask)
        return won

    async def use_approval(self, ask: AskRow | None = None) -> int | None:
        """The approval lets its call through, once: the store decides which caller uses it.
        The use's number (1, 2 after a grant given back), None when this caller did not."""
        ask = self._ask(ask)
        return await q.use_approval(self.conn, ask.seq, self.now)

    async def report_run(
        self, use: int, outcome: str, detail: str | None, give_back: bool,
        ask: AskRow | None = None,
    ) -> bool:
        """What ran after use `use` of the approval, once per use (the store decides); when
        taken, its surfaces show it and the stream tells of it."""
        ask = self._ask(ask)
        won = await q.report_run(self.conn, ask.seq, use, outcome, detail, self.now, give_back)
        if won:
            self.outbox(RAN, ask)
            self.event(OUTCOME, ask)
        return won

    async def mark_read(self, values: dict[str, Any], ask: AskRow | None = None) -> bool:
        """The agent's read, once (and a sensitive answer erased with it, in `values`)."""
        ask = self._ask(ask)
        return await q.mark_read(self.conn, ask.seq, values)

    def carry(self, reads: list[AskRow], give_back: bool = True) -> None:
        """Write the agents' reads `reads` (of asks holding no sensitive answer) with this
        change; `give_back`: should it fail, they are written alone later (core.app.reads)."""
        self.carried += reads
        self.gives_back = give_back

    async def _write_reads(self) -> None:
        """Each carried read recorded once (the store decides), with its `read` entry before
        this change's own entries (it happened before them); then the commit-order lock."""
        seqs = [a.seq for a in self.carried if a.seq is not None]
        postgres = self._parts.store.is_postgres
        won = await append.read_then_lock(self.conn, seqs, self.now, postgres)
        read = [a for a in dict((a.seq, a) for a in self.carried).values() if a.seq in won]
        self._history[:0] = [{"ask_seq": a.seq, "at": self.now, "event": "read", "detail": {}}
                             for a in read]
        self._history_asks[:0] = [a.id for a in read]

    async def bury(self, row_id: int | None, why: str) -> None:
        """An outbox row given up for good (a dead letter), with its reason."""
        await outbox.bury(self.conn, row_id, self.now, why)

    async def record_posted(self, surface: str, location: dict[str, Any]) -> None:
        """Where a surface showed the ask (the first place, if posted twice)."""
        await posts.record_first(self.conn, self._ask(None).seq, surface, location, self.now)

    # -- what goes with them (written at the end of the block, in this order) -------------

    def history(
        self, event: str, detail: dict[str, Any], ask: AskRow | None = None,
        at: float | None = None,
    ) -> None:
        about = self._ask(ask)
        sealed = self._sealed.pop(about.seq, None)
        if sealed is not None:
            detail = {**detail, "receipt_sha256": sealed}
        self._history.append({"ask_seq": about.seq, "at": self.now if at is None else at,
                              "event": event, "detail": detail})
        self._history_asks.append(about.id)

    def outbox(self, action: str, ask: AskRow | None = None) -> None:
        """A row for each surface that wants `action` on the ask."""
        rows = self._parts.places.outbox_rows(self._ask(ask), action, self.now)
        self._outbox.extend(rows)
        self.after.outbox = self.after.outbox or bool(rows)

    def follow_up(self, follow_up: FollowUp | None, taken: bool, reason: str | None) -> None:
        """The surface work an answer earns whatever its outcome (a reaction on its comment)."""
        if follow_up is None:
            return
        payload = {**follow_up.payload, "taken": taken, "reason": reason}
        self._outbox.append({
            "ask_seq": self._ask(None).seq, "surface": follow_up.surface,
            "action": follow_up.action, "payload": payload, "created_at": self.now,
            "due_at": self.now,
        })
        self.after.outbox = True

    def event(self, name: str, ask: AskRow | None = None, notify: bool = True,
              at: float | None = None) -> None:
        """An event for the stream, and (PostgreSQL) a NOTIFY that wakes other processes'
        waits and streams."""
        ask = self._ask(ask)
        self._events.append({"at": self.now if at is None else at, "ask_seq": ask.seq,
                             "agent": ask.agent, "event": name})
        if notify:
            self._notify.append(ask.id)

    def log(self, line: str, level: int = logging.INFO, **fields: Any) -> None:
        """A log line, written after the commit (a change rolled back says nothing)."""
        self.after.lines.append((line, level, fields))

    def fired(self, action: str, late_s: float) -> None:
        """The clock did `action` (remind, escalate, expire) `late_s` after it was due."""
        self.after.fired.append((action, late_s))

    def _ask(self, ask: AskRow | None) -> AskRow:
        ask = ask or self.ask
        if ask is None:
            raise TypeError("this change is about no ask: name one")
        return ask

    async def flush(self) -> None:
        """Write what was collected: outbox rows, then the history entries (appended to the
        audit chain), the events and their NOTIFYs, last (store/append.py: on PostgreSQL under
        the commit-order lock, held to the commit)."""
        if self._sealed:  # a decision no entry records: its receipt's hash would be lost
            raise RuntimeError("a decided approval's receipt is in no history entry")
        if self._outbox:
            await outbox.add(self.conn, self._outbox)
        if self._history or self._events:  # it takes the lock anyway: the reads queued ride along
            self.carried += self._parts.reads.take()
        if self._history or self._events or self.carried:
            await self._write_reads()  # and the lock (PostgreSQL), after the rows they update
        if self._history or self._events:
            await append.append(
                self.conn, self._parts.head, self._history, self._history_asks, self._events,
                list(dict.fromkeys(self._notify)), self._parts.store.is_postgres,
            )
            self.after.events = bool(self._events)


class Changes:
    """Opens changes: the store, the clock, who is told after a commit, and the surfaces that
    decide which outbox rows a change writes."""

    def __init__(
        self, store: Store, clock: Clock, signals: Signals, places: Places, tally: Tally,
        sealer: Sealer | None = None,
    ) -> None:
        self.store, self.clock, self.signals = store, clock, signals
        self.places, self.tally = places, tally
        self.sealer = sealer  # signs decided approvals' receipts; None: none are signed
        self.head = append.Head()  # the audit chain's, as this process last left it
        self.reads = Reads(self)

    @contextlib.asynccontextmanager
    async def __call__(
        self, ask: AskRow | None = None, seen: Seen | None = None
    ) -> AsyncIterator[Change]:
        """A change about `ask` (or several asks, named at each step). With `seen`, the event
        that caused it is recorded first: AlreadySeen, and nothing written, when it was acted
        on before."""
        change: Change | None = None
        if self.sealer is not None and ask is not None and deciding(ask):
            await self.sealer.ready()
        try:
            async with self.store.write() as conn:
                change = Change(conn, self, ask)
                if seen is not None:
                    await posts.record_delivery(conn, seen.key, seen.source, change.now)
                yield change
                await change.flush()
        except BaseException as exc:
            if change is not None and change.gives_back:
                self.reads.give_back(change.carried)  # rolled back: written alone, later
            if isinstance(exc, Duplicate) and seen is not None:
                raise AlreadySeen(seen.key) from None
            raise
        try:
            self.committed(change.after)
        except Exception:  # committed: the caller gets its outcome whatever this says
            log.exception("after a commit")

    def committed(self, after: _After) -> None:
        """After a commit, in one place: wake, poke, tally, log."""
        signals = self.signals
        for ask_id, row in after.woken:
            signals.waiters.wake(ask_id, row)
        for ask in after.created:
            signals.due(ask.due_at)
        signals.committed(events=after.events or bool(after.created), outbox=after.outbox)
        for ask in after.created:
            self.tally.created(ask)
        for ask, status, at in after.closed:
            self.tally.closed(ask, status, at)
        for action, late in after.fired:
            self.tally.fired(action, late)
        for line, level, fields in after.lines:
            emit(log, line, level=level, **fields)
