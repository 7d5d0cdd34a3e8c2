"""The agent reads its closed asks: each read recorded once, and a sensitive answer erased
once the response that carried it has reached the agent, and only then.

A read is two steps. `begin` finds what the agent is to be shown; the caller sends it; then
`Read.delivered()` (the response was written in full to a connection still open, an MCP
result went out on a live session) erases the sensitive answers it carried and records the
read, or `Read.lost()` (the client had gone) leaves everything as it was, so the agent's next
read gets the value. Erasing before the send would lose the value whenever the agent had
already given up: aiohttp does not cancel a handler whose client went, so a parked wait wakes,
and writes to a dead socket.

While a read in this process carries a sensitive answer, other reads of that ask here wait for
it to settle, then read the ask again: they show it erased, or carry it themselves if the first
never reached the agent. So in one process a value is shown by one read at a time. Across
processes (PostgreSQL) two reads can each carry it; the store's conditional write still erases
it once and records one read.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core.app.parts import Parts
from core.domain import answering, refs, vocabulary
from core.domain.logline import emit
from core.domain.responders import Responder, admitted
from store import asks as q
from store.db import Conn
from store.models import AskRow

# A page of candidate asks from the store: (connection, how many, before which seq).
Candidates = Callable[[Conn, int, int | None], Awaitable[list[AskRow]]]

log = logging.getLogger("aye.asks")

# The longest another read waits on one carrying a sensitive answer: a send stuck on a client
# that stopped reading must not stall every later read of the ask (past it, both may carry it).
HOLD_S = 30.0


class Holds:
    """The sensitive answers this process is sending right now, by ask seq."""

    def __init__(self) -> None:
        self._held: dict[int, asyncio.Future[None]] = {}

    async def take(self, seqs: set[int]) -> asyncio.Future[None]:
        """Hold `seqs` (all at once, so two reads never wait on each other) once no other
        read holds any of them, or HOLD_S after the first wait began."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + HOLD_S
        while busy := {f for s in seqs if (f := self._held.get(s)) is not None and not f.done()}:
            left = give_up - loop.time()
            if left <= 0:
                break
            await asyncio.wait(busy, timeout=left)
        mine: asyncio.Future[None] = loop.create_future()
        for seq in seqs:
            self._held[seq] = mine
        return mine

    def give(self, seqs: set[int], mine: asyncio.Future[None]) -> None:
        for seq in seqs:
            if self._held.get(seq) is mine:
                del self._held[seq]
        if not mine.done():
            mine.set_result(None)


_HOLDS: weakref.WeakKeyDictionary[Parts, Holds] = weakref.WeakKeyDictionary()


def _holds(parts: Parts) -> Holds:
    holds = _HOLDS.get(parts)
    if holds is None:
        holds = _HOLDS[parts] = Holds()
    return holds


@dataclass(eq=False)
class Read:
    """One read of some of an agent's asks: `rows` as the agent is to be shown them."""

    parts: Parts
    rows: list[AskRow]
    record: bool
    _seqs: set[int] = field(default_factory=set)
    _mine: asyncio.Future[None] | None = None

    async def delivered(self) -> None:
        """The response carrying `rows` reached the agent: erase the sensitive answers it
        carried and record the read. Never raises (the response is already out): a failed
        erasure leaves the value for the next read to carry, and erase."""
        try:
            for row in self.rows:
                if _erasable(row):
                    await mark_read(self.parts, row)
                elif self.record:
                    read_later(self.parts, row)
        except Exception:
            log.warning("could not record a read asks=%s; a sensitive answer stays for the next",
                        ",".join(row.id for row in self.rows))
        finally:
            self._let_go()

    def lost(self) -> None:
        """The response never reached the agent: nothing is erased or recorded."""
        self._let_go()

    def _let_go(self) -> None:
        if self._mine is not None:
            _holds(self.parts).give(self._seqs, self._mine)
            self._mine = None


async def read_as_agent(parts: Parts, rows: list[AskRow], record: bool = True) -> Read:
    """The one way an agent reads its asks (the API's routes and MCP's tools alike): `rows`
    as the agent is to be shown them, a sensitive answer held for this read alone. `record`:
    whether reading a closed ask that holds no sensitive answer counts as its read (a listing
    does not). Settle it with delivered() or lost(), always."""
    seqs = {row.seq for row in rows if _erasable(row) and row.seq is not None}
    if not seqs:
        return Read(parts, rows, record)
    holds = _holds(parts)
    mine = await holds.take(seqs)
    try:
        # Read again: while this read waited, another may have carried the value, and erased it.
        async with parts.store.read() as conn:
            fresh = {row.seq: row for row in await q.by_seqs(conn, sorted(seqs))}
    except BaseException:
        holds.give(seqs, mine)
        raise
    rows = [fresh.get(row.seq, row) for row in rows]
    if not any(_erasable(row) for row in rows):  # all erased meanwhile: nothing to carry
        holds.give(seqs, mine)
        return Read(parts, rows, record)
    return Read(parts, rows, record, seqs, mine)


async def mark_read(parts: Parts, ask: AskRow) -> bool:
    """The agent has seen its closed ask: record it once, and erase a sensitive answer.

    Call it once the ask has reached the agent (a Read's delivered(), a callback's 2xx).
    False when `ask` (as the caller read it) holds a sensitive answer that another read
    erased first. The store decides which read wins."""
    erase = _erasable(ask)
    if ask.status == vocabulary.OPEN or (ask.read_at is not None and not erase):
        return True
    values: dict[str, Any] = {"read_at": parts.clock.now()}
    if erase:
        values.update(answer_value=None, answer_option=None, answer_note=None, erased=True)
    async with parts.change(ask) as ch:
        won = await ch.mark_read(values)
        if won:
            ch.history("read", {"erased": True} if erase else {})
    if erase and won:
        await parts.store.checkpoint()
        emit(log, "ask.erased", id=ask.id, ref=refs.ref(ask))
    return won or not erase


def read_later(parts: Parts, ask: AskRow) -> None:
    """Record the agent's read after its response: off the wake path, with the reads of other
    wakes (core.app.reads)."""
    parts.reads.add(ask)


# -- what anyone may read ------------------------------------------------------------------


async def find(parts: Parts, ident: str, agent: str | None = None) -> AskRow | None:
    """An ask by id or ref; with `agent`, only that agent's."""
    parsed = refs.parse_ref(ident) if len(ident) <= 9 else None
    async with parts.store.read() as conn:
        if parsed is not None:
            return await q.by_ref(conn, parsed.kind, parsed.candidates, agent)
        if len(ident) == 32:
            return await q.by_id(conn, ident, agent)
    return None


async def by_seq(parts: Parts, seq: int) -> AskRow | None:
    async with parts.store.read() as conn:
        return await q.by_seq(conn, seq)


async def page(
    parts: Parts, agent: str | None, status: str | None, limit: int, cursor: int | None
) -> tuple[list[AskRow], int | None]:
    """A page, newest first, and the cursor of the next page (None on the last)."""
    async with parts.store.read() as conn:
        rows = await q.page(conn, agent, status, limit + 1, cursor)
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].seq if more and rows else None)


def may_answer(parts: Parts, ask: AskRow, who: Responder) -> bool:
    """Whether `who` (a person signed in to the inbox, or the operator) is among the people
    the ask is for now (core.domain.answering.allowed)."""
    return admitted(who, answering.allowed(ask, parts.people))


async def page_for(
    parts: Parts, who: Responder, status: str | None, limit: int, cursor: int | None
) -> tuple[list[AskRow], int | None]:
    """A page of the asks `who` may answer, newest first, and the next page's cursor. The store
    finds the asks naming any identity of their person (or its bare kind); each is then checked
    exactly. A short page is read on until full or the asks run out."""
    names = _names(parts, who)

    async def candidates(conn: Conn, size: int, before: int | None) -> list[AskRow]:
        return await q.page_naming(conn, names, status, size, before)

    return await checked_page(parts, candidates, who, limit, cursor)


async def checked_page(
    parts: Parts, candidates: Candidates, who: Responder | None, limit: int, cursor: int | None
) -> tuple[list[AskRow], int | None]:
    """A page of `candidates` (the store's, newest first) that `who` may answer (all of them
    for the operator, None), and the next page's cursor: a page short of checked asks is read
    on until it is full or the candidates run out."""
    found: list[AskRow] = []
    before = cursor
    while len(found) <= limit:
        async with parts.store.read() as conn:
            rows = await candidates(conn, limit + 1, before)
        found += [row for row in rows if who is None or may_answer(parts, row, who)]
        if len(rows) <= limit:
            break
        before = rows[-1].seq
    more = len(found) > limit
    found = found[:limit]
    return found, (found[-1].seq if more and found else None)


def _names(parts: Parts, who: Responder) -> list[str]:
    """How the asks `who` may answer name them: each identity of their person, and its kind."""
    person = parts.people.person_of(who)
    ids = list(parts.people.ids.get(person, ())) if person is not None else [who]
    if who not in ids:
        ids.append(who)
    return sorted({str(i) for i in ids} | {i.kind for i in ids})


async def open_on_work(parts: Parts, key: str) -> list[AskRow]:
    async with parts.store.read() as conn:
        return await q.open_on_work(conn, key)


async def latest_on_work(parts: Parts, key: str) -> AskRow | None:
    async with parts.store.read() as conn:
        return await q.latest_on_work(conn, key)


async def history(parts: Parts, seq: int) -> list[dict[str, Any]]:
    async with parts.store.read() as conn:
        return await q.history(conn, seq)


async def histories(parts: Parts, seqs: list[int]) -> dict[int, list[dict[str, Any]]]:
    async with parts.store.read() as conn:
        return await q.histories(conn, seqs)


def _erasable(ask: AskRow) -> bool:
    return bool(ask.sensitive and ask.status == vocabulary.ANSWERED and not ask.erased)
