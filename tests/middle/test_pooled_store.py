"""A store given AYE_LISTEN_URL may be behind a transaction pooler: none of its prepared
statements outlives its transaction (none is left on the server connection, where the next
client of a pooler would meet it), its reads run in a transaction, and through a real PgBouncer
in transaction mode two stores' reads and writes interleave without a statement's error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sqlalchemy import text

from store.db import Store
from tests.pgbouncer import pgbouncer
from tests.stores import HeadDatabase, postgres_at_head

__all__ = ["pgbouncer"]

LEFT = text("SELECT count(*) FROM pg_prepared_statements")
READ = text("SELECT count(*) FROM asks WHERE seq > :n")
WRITE = text("SELECT pg_advisory_xact_lock(7315, 9), CAST(:n AS integer)")


async def _left_on_the_connection(store: Store) -> int:
    async with store.write() as conn:
        for n in range(5):
            await conn.execute(READ, {"n": n})
        return int((await conn.execute(LEFT)).scalar_one())


async def test_no_prepared_statement_outlives_its_transaction(pg_head: HeadDatabase | None) -> None:
    url = await postgres_at_head(pg_head)
    today, pooled = Store(url), Store(url, url)
    try:
        assert await _left_on_the_connection(today) > 0  # named and cached: they stay
        assert await _left_on_the_connection(pooled) == 0
    finally:
        await today.close()
        await pooled.close()


async def test_two_stores_through_pgbouncer_in_transaction_mode(
    pg_head: HeadDatabase | None, pgbouncer: Callable[[str], str]
) -> None:
    url = await postgres_at_head(pg_head)
    stores = [Store(pgbouncer(url), url) for _ in range(2)]

    async def work(store: Store, n: int) -> int:
        if n % 2:
            async with store.write() as conn:
                return int((await conn.execute(WRITE, {"n": n})).one()[1])
        async with store.read() as conn:
            assert (await conn.execute(READ, {"n": n})).scalar_one() == 0
        return n

    try:
        await asyncio.gather(*(store.open() for store in stores))
        done = await asyncio.gather(*(work(stores[n % 2], n) for n in range(400)))
        assert done == list(range(400))
    finally:
        for store in stores:
            await store.close()
