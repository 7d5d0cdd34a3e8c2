"""LISTEN on the store's channel (PostgreSQL) and wake this process's parked agents."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import make_url

from core.app.waiters import Waiters
from store.db import NOTIFY_CHANNEL

log = logging.getLogger("aye.waiters")


class PgListener:
    """LISTENs on the store's channel and wakes local waiters; reconnects when dropped.

    `url` is the store's listen URL (AYE_LISTEN_URL, else AYE_DATABASE_URL): a LISTEN lasts
    as long as its session, which a transaction pooler (PgBouncer) does not keep for it."""

    def __init__(
        self, url: str, waiters: Waiters, changed: Callable[[], None] = lambda: None,
        sent_here: Callable[[int], bool] = lambda _pid: False,
    ) -> None:
        self._dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._waiters = waiters
        self._changed = changed  # another process changed an ask: the event streams look
        # A NOTIFY this process sent itself: its commit wakes its own waiters with the new row
        # and pokes its streams (core.app.change), so the echo is skipped, where it would wake
        # them first with nothing and cost each a re-read (a round trip a wake, bench/).
        self._sent_here = sent_here
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="aye-pg-listen")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ready.wait(), timeout=10)

    def _on_notify(self, _conn: Any, pid: int, _channel: str, payload: str) -> None:
        if self._sent_here(pid):
            return
        self._waiters.wake(payload)
        self._changed()

    async def _run(self) -> None:
        import asyncpg  # PostgreSQL's own driver: not loaded by a process on SQLite (4 MB)

        backoff = 0.2
        while True:
            conn = None
            try:
                conn = await asyncpg.connect(self._dsn)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _c, lost=lost: lost.set())
                await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
                if self.ready.is_set():
                    # Notifications sent while we were away are lost: have everyone look again.
                    self._waiters.wake_all()
                    self._changed()
                self.ready.set()
                backoff = 0.2
                await lost.wait()
                log.warning("store notification connection lost; reconnecting")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnect whatever went wrong
                log.warning("cannot listen for store notifications: %s", exc.__class__.__name__)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                if conn is not None and not conn.is_closed():
                    with contextlib.suppress(Exception):
                        await conn.close()

    async def close(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
