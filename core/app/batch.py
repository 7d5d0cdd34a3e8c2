"""Creates, batched: the asks made while one batch is being written go into the next, in one
transaction, so that they share its round trips, its locks (the agent's counters, the event
stream's commit order) and its commit. Nothing is answered before its batch has committed, so
durability is the single create's; at low load a batch is one ask and costs what a lone create
did.

A batch that fails as a whole (a limit crossed, a repeated key, a pending approval of the same
call, a store error) is rolled back and its asks are made one by one instead, each getting the
answer it would have had alone (Limited, Duplicate…).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.app import events, limits
from core.app.ports import POST
from core.domain.types import AgentInfo
from store import asks as q
from store import events as event_rows
from store import outbox
from store.models import AskRow

if TYPE_CHECKING:
    from core.app.asks import Asks

log = logging.getLogger("aye.asks")
MAX_BATCH = 64


class StoreClosing(Exception):
    """A create that came after the process began to stop."""


@dataclass(slots=True)
class Pending:
    values: dict[str, Any]
    detail: dict[str, Any]
    agent: AgentInfo | None
    counted: bool
    done: asyncio.Future[AskRow]


class Batcher:
    def __init__(self, asks: Asks) -> None:
        self.asks = asks
        self._queue: list[Pending] = []
        self._task: asyncio.Task[None] | None = None
        self.closed = False

    async def close(self, within: float = 5.0) -> None:
        """On the way out, before the store closes: take no more, and let the batches queued
        commit (each caller gets its answer) for `within` seconds at most."""
        self.closed = True
        if self._task is not None and not self._task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), within)

    async def insert(
        self, values: dict[str, Any], detail: dict[str, Any], agent: AgentInfo | None,
        counted: bool,
    ) -> AskRow:
        done: asyncio.Future[AskRow] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieved)  # a caller that went away leaves no warning behind
        self._queue.append(Pending(values, detail, agent, counted, done))
        if self.closed:
            raise StoreClosing("aye is stopping: the ask was not made")
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name="aye-creates")
        # Shielded: a caller that goes away leaves its ask to be made (or not) with its batch.
        return await asyncio.shield(done)

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            if len(batch) > 1:
                try:
                    made = await write(self.asks, batch)
                except Exception as exc:  # each on its own below, with the answer it would get alone
                    log.info("a batch of %d creates fell back to one by one: %s", len(batch),
                             exc.__class__.__name__)
                else:
                    for pending, (ask, wrote) in zip(batch, made, strict=True):
                        try:
                            self.asks.after_insert(ask, wrote)
                        except Exception:  # committed: the caller gets its ask whatever this says
                            log.exception("after a create ask=%s", ask.id)
                        _settle(pending, ask)
                    continue
            for pending in batch:
                try:
                    ask = await self.asks.insert_one(
                        pending.values, pending.detail, pending.agent, pending.counted
                    )
                except Exception as exc:
                    _settle(pending, exc)
                else:
                    _settle(pending, ask)


def _retrieved(done: asyncio.Future[AskRow]) -> None:
    if not done.cancelled():
        done.exception()


def _settle(pending: Pending, outcome: AskRow | Exception) -> None:
    if pending.done.done():
        return
    if isinstance(outcome, Exception):
        pending.done.set_exception(outcome)
    else:
        pending.done.set_result(outcome)


async def write(asks: Asks, batch: list[Pending]) -> list[tuple[AskRow, bool]]:
    """The batch's asks, their `created` entries, posts and events in one transaction; for
    each, the ask and whether it wrote outbox rows. Limited or Duplicate fail the whole."""
    postgres = asks.store.is_postgres
    # Per agent and minute (each ask counts in the minute it was made), in one order in every
    # process, so that two batches locking the same agents' counters cannot deadlock.
    by_agent: dict[tuple[str, int], list[Pending]] = defaultdict(list)
    for pending in batch:
        minute = int(pending.values["created_at"] // limits.WINDOW_S)
        by_agent[(pending.values["agent"], minute)].append(pending)
    async with asks.store.write() as conn:
        for (name, _), mine in sorted(by_agent.items(), key=lambda item: item[0]):
            hits = sum(1 for p in mine if p.agent is not None and not p.counted)
            info = next((p.agent for p in mine if p.agent is not None), None)
            at = max(p.values["created_at"] for p in mine)
            await limits.counted_and_opened(conn, name, info, at, hits, len(mine), postgres)
        made = await q.insert_many(conn, [p.values for p in batch])
        await q.add_histories(conn, [
            {"ask_seq": ask.seq, "at": ask.created_at, "event": "created", "detail": p.detail}
            for p, ask in zip(batch, made, strict=True)
        ])
        posts = [asks.outbox_rows(ask, POST) for ask in made]
        await outbox.add(conn, [row for rows in posts for row in rows])
        if postgres:  # one wake-up for other processes' event streams
            await q.notify(conn, made[-1].id)
        await event_rows.add_many(conn, [
            {"at": ask.created_at, "ask_seq": ask.seq, "agent": ask.agent,
             "event": events.CREATED} for ask in made
        ], serialize=postgres)
    return [(ask, bool(rows)) for ask, rows in zip(made, posts, strict=True)]
