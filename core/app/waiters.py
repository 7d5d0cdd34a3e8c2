"""Agents parked on `wait`: woken by the change itself, never by polling the store.

In one process, a future per waiter keyed by ask id. Across processes on PostgreSQL, every
change is also sent with NOTIFY on one channel; the process's listener (bot/listener.py) wakes
its own waiters.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.models import AskRow

class Waiters:
    def __init__(self) -> None:
        self._futures: dict[str, set[asyncio.Future[AskRow | None]]] = {}

    @contextlib.contextmanager
    def watch(self, ask_id: str) -> Iterator[asyncio.Future[AskRow | None]]:
        """A future resolved when the ask changes: with its new row when the change was made
        here, None when another process made it (re-read then)."""
        future: asyncio.Future[AskRow | None] = asyncio.get_running_loop().create_future()
        self._futures.setdefault(ask_id, set()).add(future)
        try:
            yield future
        finally:
            waiting = self._futures.get(ask_id)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self._futures[ask_id]

    def wake(self, ask_id: str, row: AskRow | None = None) -> None:
        for future in self._futures.get(ask_id, ()):
            if not future.done():
                future.set_result(row)

    def wake_all(self) -> None:
        """Every waiter re-reads its ask (after a lost notification connection)."""
        for ask_id in list(self._futures):
            self.wake(ask_id)

    def __len__(self) -> int:
        return sum(len(s) for s in self._futures.values())
