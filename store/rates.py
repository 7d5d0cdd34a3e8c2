"""Per-agent limits' counts: one row per agent and minute, bumped atomically by the store, so
every process on one PostgreSQL counts against the same number."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from store.asks import ASKS
from store.db import Conn
from store.models import RateRow

RATES = RateRow.__table__  # type: ignore[attr-defined]
R = RATES.c


async def hit(conn: Conn, agent: str, window: int, postgres: bool) -> int:
    """One more hit in `agent`'s window; the window's count after it."""
    insert = pg_insert if postgres else sqlite_insert
    query = (
        insert(RATES)
        .values(agent=agent, window=window, hits=1)
        .on_conflict_do_update(index_elements=[R.agent, R.window], set_={"hits": R.hits + 1})
        .returning(R.hits)
    )
    return int((await conn.execute(query)).scalar_one())


async def open_count(conn: Conn, agent: str) -> int:
    found = await conn.scalar(
        select(func.count()).select_from(ASKS).where(ASKS.c.agent == agent, ASKS.c.status == "open")
    )
    return int(found or 0)


async def forget(conn: Conn, before: int) -> None:
    await conn.execute(delete(RATES).where(R.window < before))
