"""The audit chain's queries: history rows carry their place in one chain (chain_seq, prev,
hash); the head is read and the next entries written in the change's transaction, under the
commit-order lock the event stream takes, so the chain is one unbroken line across processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import func, select

from store.asks import ASKS, HISTORY
from store.db import Conn, Store
from store.events import EVENT_LOCK

H, A = HISTORY.c, ASKS.c
HEAD = select(H.chain_seq, H.hash).where(H.chain_seq.is_not(None)).order_by(
    H.chain_seq.desc()).limit(1)


async def head(conn: Conn, serialize: bool) -> tuple[int, str | None]:
    """The chain's last seq and hash ((0, None) when empty). `serialize` (PostgreSQL) takes
    the commit-order lock first: held to the commit, so the next appender reads this one's."""
    if serialize:
        await conn.execute(EVENT_LOCK)
    found = (await conn.execute(HEAD)).first()
    return (0, None) if found is None else (int(found[0]), str(found[1]))


async def entries(conn: Conn, after: int, limit: int) -> list[dict[str, Any]]:
    """Chain entries after seq `after`, in order, as stored (each history row's columns and
    its ask's id)."""
    query = (
        select(H.id, H.chain_seq, H.at, H.event, H.detail, H.prev, H.hash, A.id.label("ask"))
        .join(ASKS, ASKS.c.seq == H.ask_seq, isouter=True)
        .where(H.chain_seq > after).order_by(H.chain_seq).limit(limit)
    )
    return [dict(row._mapping) for row in (await conn.execute(query)).all()]


def as_entry(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row (from `entries`) as the chain's entry: what was hashed, and the hash."""
    body = {k: v for k, v in (row.get("detail") or {}).items()}
    body.update(seq=row["chain_seq"], at=row["at"], ask=row["ask"] or "", event=row["event"],
                prev=row["prev"], hash=row["hash"])
    return body


async def unchained(conn: Conn) -> int:
    """History rows with no place in the chain (none, unless one was written around aye)."""
    return int(await conn.scalar(
        select(func.count()).select_from(HISTORY).where(H.chain_seq.is_(None))) or 0)


# What a replay of an ask's history is compared with (core/domain/replay.py): the columns of
# these names that the store has.
REPLAYED = ("seq", "id", "kind", "status", "outcome", "answer_value", "answered_by",
            "answer_surface", "approvers", "erased", "approval_used_at", "approval_uses",
            "run_outcome", "run_detail", "receipt", "ref_base36")


@asynccontextmanager
async def snapshot(store: Store) -> AsyncIterator[Conn]:
    """One read transaction that sees the chain and the asks as of one moment, while a
    running aye goes on appending: SQLite's reads already do (one deferred transaction, WAL);
    PostgreSQL's are per statement, so here REPEATABLE READ."""
    if not store.is_postgres:
        async with store.read() as conn:
            yield conn
        return
    async with store.engine.connect() as raw:
        conn = await raw.execution_options(isolation_level="REPEATABLE READ")
        async with conn.begin():
            yield conn


async def asks_after(conn: Conn, after: int, limit: int) -> list[dict[str, Any]]:
    """Asks after seq `after`, in order: the columns a replay compares."""
    columns = [c for c in ASKS.c if c.name in REPLAYED]
    query = select(*columns).where(A.seq > after).order_by(A.seq).limit(limit)
    return [dict(row._mapping) for row in (await conn.execute(query)).all()]
