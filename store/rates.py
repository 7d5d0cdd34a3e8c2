"""Per-agent limits' counts: one row per agent and minute, bumped atomically by the store, so
every process on one PostgreSQL counts against the same number."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, literal, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from store import asks
from store.asks import ASKS
from store.db import Conn
from store.models import OpenCountRow, RateRow

RATES = RateRow.__table__  # type: ignore[attr-defined]
R = RATES.c
OPEN = OpenCountRow.__table__  # type: ignore[attr-defined]
OC = OPEN.c


def _hit(insert: Any) -> Any:
    return (
        insert(RATES)
        .values(agent=bindparam("agent"), window=bindparam("window"), hits=bindparam("k"))
        .on_conflict_do_update(index_elements=[R.agent, R.window],
                               set_={"hits": R.hits + bindparam("k")})
        .returning(R.hits)
    )


def _bump(insert: Any) -> Any:
    return (
        insert(OPEN)
        .values(agent=bindparam("agent"), open=bindparam("start"))
        .on_conflict_do_update(index_elements=[OC.agent],
                               set_={"open": OC.open + bindparam("delta")})
        .returning(OC.open)
    )


# Built once per dialect: these run on every create and close.
HIT = {True: _hit(pg_insert), False: _hit(sqlite_insert)}
BUMP = {True: _bump(pg_insert), False: _bump(sqlite_insert)}


# PostgreSQL: both counters in one round trip (a batch of creates takes them once).
HIT_AND_OPEN = text(
    "WITH hit AS (INSERT INTO rates (agent, \"window\", hits) VALUES (:agent, :window, :k) "
    "ON CONFLICT (agent, \"window\") DO UPDATE SET hits = rates.hits + :k RETURNING hits), "
    "opened AS (INSERT INTO open_counts (agent, open) VALUES (:agent, :n) "
    "ON CONFLICT (agent) DO UPDATE SET open = open_counts.open + :n RETURNING open) "
    "SELECT hit.hits, opened.open FROM hit, opened"
)


async def hit_and_open(
    conn: Conn, agent: str, window: int, k: int, n: int, postgres: bool
) -> tuple[int, int]:
    """`k` more hits in `agent`'s window and `n` more open asks: both counts after."""
    if not postgres:
        return await hit(conn, agent, window, postgres, k), await bump_open(conn, agent, n, postgres)
    found = (await conn.execute(
        HIT_AND_OPEN, {"agent": agent, "window": window, "k": k, "n": n}
    )).one()
    return int(found[0]), int(found[1])


async def close_and_count(conn: Conn, seq: int | None, agent: str, values: dict[str, Any]) -> bool:
    """PostgreSQL: the close's conditional write (store.asks.close_if_open) and, when it won,
    one open ask fewer for `agent`, in one round trip (rows locked in the same order as the
    two statements would: the ask's, then the count's). True when it won."""
    columns = tuple(values)
    statement = _CLOSE_AND_COUNT.get(columns)
    if statement is None:  # built once for each set of columns, as store.asks.closing
        closing = asks.closing(columns).returning(ASKS.c.seq).cte("closing")
        counted = (
            pg_insert(OPEN).from_select(
                [OC.agent, OC.open],
                select(bindparam("count_agent", type_=OC.agent.type), literal(0))
                .select_from(closing),
            )
            .on_conflict_do_update(index_elements=[OC.agent], set_={"open": OC.open - 1})
            .returning(OC.open).cte("counted")
        )
        won = select(func.count()).select_from(closing).scalar_subquery()
        statement = _CLOSE_AND_COUNT[columns] = select(
            won, select(func.count()).select_from(counted).scalar_subquery()
        )
    done = await conn.execute(statement, {**asks.close_params(seq, values), "count_agent": agent})
    return bool(done.one()[0] == 1)


_CLOSE_AND_COUNT: dict[tuple[str, ...], Any] = {}


async def hit(conn: Conn, agent: str, window: int, postgres: bool, k: int = 1) -> int:
    """`k` more hits in `agent`'s window; the window's count after them."""
    found = await conn.execute(HIT[postgres], {"agent": agent, "window": window, "k": k})
    return int(found.scalar_one())


async def bump_open(conn: Conn, agent: str, delta: int, postgres: bool) -> int:
    """`agent`'s open asks, moved by `delta` (+1 on a create, -1 on a close); the count after."""
    params = {"agent": agent, "start": max(delta, 0), "delta": delta}
    return int((await conn.execute(BUMP[postgres], params)).scalar_one())


async def open_count(conn: Conn, agent: str) -> int:
    """Counted from the asks themselves (for checks and tests; the limit uses bump_open)."""
    found = await conn.scalar(
        select(func.count()).select_from(ASKS).where(ASKS.c.agent == agent, ASKS.c.status == "open")
    )
    return int(found or 0)


async def forget(conn: Conn, before: int) -> None:
    await conn.execute(delete(RATES).where(R.window < before))
