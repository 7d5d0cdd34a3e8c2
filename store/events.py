"""The event stream's queries: events are written in the transaction of the change they
describe, in commit order, and read after an id (for one agent, or all)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select, text

from store.asks import ASKS, _row
from store.db import Conn
from store.models import AskRow, EventRow

EVENTS = EventRow.__table__  # type: ignore[attr-defined]
E = EVENTS.c
EVENT_INSERT = EVENTS.insert()
# Held from the event's insert to the commit: ids are then handed out in commit order, so a
# reader that has seen id N has seen every event below N (an id taken by a transaction that
# commits later would otherwise be skipped for good). PostgreSQL only: SQLite's writer is one.
EVENT_LOCK = text("SELECT pg_advisory_xact_lock(7315, 1)")


async def add(conn: Conn, ask_seq: int | None, agent: str, event: str, at: float,
              serialize: bool) -> None:
    """Record `event` on the ask; `serialize` (PostgreSQL) takes the commit-order lock."""
    if serialize:
        await conn.execute(EVENT_LOCK)
    await conn.execute(EVENT_INSERT, {"at": at, "ask_seq": ask_seq, "agent": agent, "event": event})


async def add_many(conn: Conn, rows: list[dict[str, Any]], serialize: bool) -> None:
    """Several events (`at`, `ask_seq`, `agent`, `event`) in one executemany, under the same
    commit-order lock as `add`."""
    if not rows:
        return
    if serialize:
        await conn.execute(EVENT_LOCK)
    await conn.execute(EVENT_INSERT, rows)


async def after(
    conn: Conn, last_id: int, agent: str | None, limit: int
) -> list[tuple[int, str, AskRow]]:
    """Events after `last_id` (of `agent`'s asks, or all), oldest first, with their ask as
    it stands now."""
    query: Any = (
        select(E.id.label("event_id"), E.event.label("event_name"), ASKS)
        .join(ASKS, ASKS.c.seq == E.ask_seq)
        .where(E.id > last_id)
        .order_by(E.id)
        .limit(limit)
    )
    if agent is not None:
        query = query.where(E.agent == agent)
    out = []
    for found in (await conn.execute(query)).all():
        values = dict(found._mapping)
        event_id, name = values.pop("event_id"), values.pop("event_name")
        out.append((int(event_id), str(name), _row(values)))
    return out


async def last_id(conn: Conn) -> int:
    found = await conn.scalar(select(func.max(E.id)))
    return int(found or 0)


async def prune(conn: Conn, before: float) -> int:
    """Forget events older than `before`; how many."""
    done = await conn.execute(delete(EVENTS).where(E.at < before))
    return int(done.rowcount or 0)
