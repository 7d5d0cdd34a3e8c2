"""Where a limit is counted: per agent, asks, calls and starts a minute and open asks at once,
counted by the store in the transaction of the change they concern, so that they hold across
processes and a refusal (rolled back) does not count. A change is the one caller
(core.app.change: `Change.count`, and the close's conditional write); what is past a limit is
the domain's rule (core/domain/limits.py)."""

from __future__ import annotations

from typing import Any

from core.domain.limits import Limited, check_open, check_rate, window
from core.domain.types import AgentInfo
from store import asks, rates
from store.db import Conn, Store

__all__ = ["Limited", "add", "close_if_open", "closed", "count", "counted_and_opened",
           "forget_old", "opened"]


async def add(
    conn: Conn, name: str, agent: AgentInfo | None, now: float, postgres: bool, hits: int = 0,
    new_open: int = 0,
) -> None:
    """`hits` more asks, calls or starts this minute (only with `agent`, whose limits they
    are) and `new_open` more open asks for `name`; Limited past either. Each counter is
    touched only when it moves, and both at once in one round trip on PostgreSQL."""
    if agent is None or hits == 0:
        if new_open:
            await opened(conn, name, agent, postgres, new_open)
    elif new_open:
        await counted_and_opened(conn, name, agent, now, hits, new_open, postgres)
    else:
        await count(conn, agent, now, postgres, hits)


async def count(conn: Conn, agent: AgentInfo, now: float, postgres: bool, k: int = 1) -> None:
    """`k` more asks, calls or starts this minute; Limited past `asks_per_minute` (the hits
    are rolled back with the transaction, so refusals do not count)."""
    hits = await rates.hit(conn, agent.name, window(now), postgres, k)
    check_rate(hits, agent.asks_per_minute, now)


async def counted_and_opened(
    conn: Conn, name: str, agent: AgentInfo | None, now: float, hits: int, new_open: int,
    postgres: bool,
) -> None:
    """`count` (`hits` of them) and `opened` (`new_open` asks) at once, for a batch of creates:
    one round trip on PostgreSQL. Limited past either."""
    if agent is None or hits == 0:
        await opened(conn, name, agent, postgres, new_open)
        return
    now_hits, now_open = await rates.hit_and_open(conn, name, window(now), hits, new_open, postgres)
    check_rate(now_hits, agent.asks_per_minute, now)
    check_open(now_open, agent.max_open)


async def opened(
    conn: Conn, name: str, agent: AgentInfo | None, postgres: bool, k: int = 1
) -> None:
    """`k` more open asks for `name`, in the create's transaction; Limited (rolling it back)
    when that passes the agent's `max_open`."""
    now_open = await rates.bump_open(conn, name, k, postgres)
    if agent is not None:
        check_open(now_open, agent.max_open)


async def close_if_open(
    conn: Conn, seq: int | None, name: str, values: dict[str, Any], postgres: bool
) -> bool:
    """The close's one conditional write (store.asks.close_if_open) and, when it won, one open
    ask fewer for `name`, in the closing transaction: one round trip on PostgreSQL."""
    if postgres:
        return await rates.close_and_count(conn, seq, name, values)
    won = await asks.close_if_open(conn, seq, values)
    if won:
        await closed(conn, name, postgres)
    return won


async def closed(conn: Conn, name: str, postgres: bool) -> None:
    """One open ask fewer for `name`, in the closing transaction."""
    await rates.bump_open(conn, name, -1, postgres)


async def forget_old(store: Store, now: float) -> None:
    """The counts of minutes long past."""
    async with store.write() as conn:
        await rates.forget(conn, window(now) - 3600)
