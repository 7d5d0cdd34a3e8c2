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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.domain import rules
from core.domain.logline import emit
from store import asks as q
from store.models import AskRow

if TYPE_CHECKING:
    from core.app.asks import Asks

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


_HOLDS: weakref.WeakKeyDictionary[Asks, Holds] = weakref.WeakKeyDictionary()


def _holds(asks: Asks) -> Holds:
    holds = _HOLDS.get(asks)
    if holds is None:
        holds = _HOLDS[asks] = Holds()
    return holds


@dataclass(eq=False)
class Read:
    """One read of some of an agent's asks: `rows` as the agent is to be shown them."""

    asks: Asks
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
                    await mark_read(self.asks, row)
                elif self.record:
                    self.asks.read_later(row)
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
            _holds(self.asks).give(self._seqs, self._mine)
            self._mine = None


async def begin(asks: Asks, rows: list[AskRow], record: bool = True) -> Read:
    """A read of `rows` by their agent. `record`: whether reading a closed ask that holds no
    sensitive answer counts as its read (a listing does not). Settle it with delivered() or
    lost(), always."""
    seqs = {row.seq for row in rows if _erasable(row) and row.seq is not None}
    if not seqs:
        return Read(asks, rows, record)
    holds = _holds(asks)
    mine = await holds.take(seqs)
    try:
        # Read again: while this read waited, another may have carried the value, and erased it.
        async with asks.store.read() as conn:
            fresh = {row.seq: row for row in await q.by_seqs(conn, sorted(seqs))}
    except BaseException:
        holds.give(seqs, mine)
        raise
    rows = [fresh.get(row.seq, row) for row in rows]
    if not any(_erasable(row) for row in rows):  # all erased meanwhile: nothing to carry
        holds.give(seqs, mine)
        return Read(asks, rows, record)
    return Read(asks, rows, record, seqs, mine)


async def mark_read(asks: Asks, ask: AskRow) -> bool:
    """The agent has seen its closed ask: record it once, and erase a sensitive answer.

    Call it once the ask has reached the agent (a Read's delivered(), a callback's 2xx).
    False when `ask` (as the caller read it) holds a sensitive answer that another read
    erased first. The store decides which read wins."""
    erase = _erasable(ask)
    if ask.status == rules.OPEN or (ask.read_at is not None and not erase):
        return True
    now = asks.clock.now()
    values: dict[str, Any] = {"read_at": now}
    if erase:
        values.update(answer_value=None, answer_option=None, answer_note=None, erased=True)
    async with asks.store.write() as conn:
        won = await q.mark_read(conn, ask.seq, values)
        if won:
            await q.add_history(conn, ask.seq, now, "read", {"erased": True} if erase else {})
    if erase and won:
        await asks.store.checkpoint()
        emit(log, "ask.erased", id=ask.id, ref=rules.ref(ask))
    return won or not erase


def read_later(asks: Asks, ask: AskRow, background: set[asyncio.Task[None]]) -> None:
    """Record the agent's read after its response: off the wake path."""
    if ask.status == rules.OPEN or ask.read_at is not None:
        return
    task = asyncio.create_task(_read_quietly(asks, ask))
    background.add(task)
    task.add_done_callback(background.discard)


async def _read_quietly(asks: Asks, ask: AskRow) -> None:
    try:
        await asks.mark_read(ask)
    except Exception:  # a missed 'read' entry must not surface as an error anywhere
        log.warning("could not record a read ask=%s", ask.id)


def _erasable(ask: AskRow) -> bool:
    return bool(ask.sensitive and ask.status == rules.ANSWERED and not ask.erased)
