"""The PostgreSQL listener (bot/listener.py) wakes this process's waiters for what other
processes changed, and skips the NOTIFYs this process sent itself: its own commit wakes them
with the new row (core.app.change), where the echo would wake them first with nothing."""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import text

from bot.listener import PgListener
from core.app.waiters import Waiters
from store.db import NOTIFY_CHANNEL, Store
from tests.stores import HeadDatabase, dsn, postgres_at_head

NOTIFY = text("SELECT pg_notify(:c, :id)")


async def test_the_listener_skips_its_own_notifications_only(pg_head: HeadDatabase | None) -> None:
    url = await postgres_at_head(pg_head)
    store = Store(url)
    await store.open()
    waiters = Waiters()
    listener = PgListener(store.url, waiters, sent_here=store.sent_here)
    await listener.start()
    other = await asyncpg.connect(dsn(url))
    try:
        own, foreign = waiters.park(["own"]), waiters.park(["foreign"])
        async with store.write() as conn:
            await conn.execute(NOTIFY, {"c": NOTIFY_CHANNEL, "id": "own"})
            pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        assert store.sent_here(pid)
        assert not store.sent_here(other.get_server_pid())
        await other.execute("SELECT pg_notify($1, 'foreign')", NOTIFY_CHANNEL)
        # Delivered in commit order: by the time the other process's arrives, ours has come.
        assert await asyncio.wait_for(foreign, 5) is None
        assert not own.done()
        async with store.read() as conn:
            # A read on the same pool (outside a transaction) is this process's too.
            reader = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        assert store.sent_here(reader)
    finally:
        await other.close()
        await listener.close()
        await store.close()
    # Closed: its backends' pids may be another process's now.
    assert not store.sent_here(pid)
