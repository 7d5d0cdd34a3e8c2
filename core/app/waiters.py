"""Agents parked on `wait`: woken by the change itself, never by polling the store.

In one process, a future per parked wait, filed under each ask id it waits on. Across processes
on PostgreSQL, every change is also sent with NOTIFY on one channel; the process's listener
(bot/listener.py) wakes its own waiters.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.models import AskRow

Woken = asyncio.Future["AskRow | None"]


class Waiters:
    def __init__(self) -> None:
        # A list, not a set: most asks have one waiter, and 10,000 parked waits each pay for
        # it (bench/: 72 bytes against 216).
        self._futures: dict[str, list[Woken]] = {}

    def park(self, ask_ids: Collection[str]) -> Woken:
        """One future, resolved when any of the asks changes: with its new row when the change
        was made here, None when another process made it (re-read then). `unpark` it after."""
        future: Woken = asyncio.get_running_loop().create_future()
        for ask_id in ask_ids:
            self._futures.setdefault(ask_id, []).append(future)
        return future

    def unpark(self, future: Woken, ask_ids: Collection[str]) -> None:
        for ask_id in ask_ids:
            waiting = self._futures.get(ask_id)
            if waiting is not None:
                waiting.remove(future)
                if not waiting:
                    del self._futures[ask_id]

    @contextlib.contextmanager
    def watch(self, ask_id: str) -> Iterator[Woken]:
        """`park` on one ask for the length of a `with` block."""
        future = self.park((ask_id,))
        try:
            yield future
        finally:
            self.unpark(future, (ask_id,))

    def wake(self, ask_id: str, row: AskRow | None = None) -> None:
        for future in self._futures.get(ask_id, ()):
            if not future.done():
                future.set_result(row)

    def wake_all(self) -> None:
        """Every waiter re-reads its ask (after a lost notification connection)."""
        for ask_id in list(self._futures):
            self.wake(ask_id)

    def __len__(self) -> int:
        return sum(len(waiting) for waiting in self._futures.values())
