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
from typing import Any

from core.app.change import Changes
from core.app.ports import StoreClosing
from core.domain.ask import AskValues
from core.domain.limits import WINDOW_S
from core.domain.types import AgentInfo
from store.db import Store
from store.models import AskRow

log = logging.getLogger("aye.asks")
MAX_BATCH = 64


@dataclass(slots=True)
class Pending:
    values: AskValues
    detail: dict[str, Any]
    agent: AgentInfo | None
    counted: bool
    done: asyncio.Future[AskRow]


class Batcher:
    def __init__(self, store: Store, change: Changes) -> None:
        self.store, self.change = store, change
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
        self, values: AskValues, detail: dict[str, Any], agent: AgentInfo | None,
        counted: bool,
    ) -> AskRow:
        """A new ask, its `created` entry and its posts, committed with the asks made at the
        same time. With `agent`, its limits are checked in that transaction (Limited, nothing
        written): room for one more open ask, and unless `counted` already, one more hit."""
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
                    made = await self._write(batch)
                except Exception as exc:  # each on its own below, with the answer it would get alone
                    log.info("a batch of %d creates fell back to one by one: %s", len(batch),
                             exc.__class__.__name__)
                else:
                    for pending, ask in zip(batch, made, strict=True):
                        _settle(pending, ask)
                    continue
            for pending in batch:
                try:
                    ask = await self._write_one(pending)
                except Exception as exc:
                    _settle(pending, exc)
                else:
                    _settle(pending, ask)

    async def _write_one(self, pending: Pending) -> AskRow:
        async with self.change() as ch:
            return await ch.insert(pending.values, pending.detail, pending.agent, pending.counted)

    async def _write(self, batch: list[Pending]) -> list[AskRow]:
        """The batch's asks, their `created` entries, posts and events in one change. Limited
        or Duplicate fail the whole."""
        # Per agent and minute (each ask counts in the minute it was made), in one order in
        # every process, so that two batches locking the same agents' counters cannot deadlock.
        by_agent: dict[tuple[str, int], list[Pending]] = defaultdict(list)
        for pending in batch:
            minute = int(pending.values["created_at"] // WINDOW_S)
            by_agent[(pending.values["agent"], minute)].append(pending)
        async with self.change() as ch:
            for (name, _), mine in sorted(by_agent.items(), key=lambda item: item[0]):
                hits = sum(1 for p in mine if p.agent is not None and not p.counted)
                info = next((p.agent for p in mine if p.agent is not None), None)
                at = max(p.values["created_at"] for p in mine)
                await ch.count(name, info, hits=hits, new_open=len(mine), at=at)
            made = await ch.insert_many([p.values for p in batch], [p.detail for p in batch])
        return [ask for ask, _ in made]


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
