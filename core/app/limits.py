"""Per-agent limits: open asks at once (`max_open`) and asks, calls and starts a minute
(`asks_per_minute`), counted by the store so that they hold across processes. A request past
either is refused before anything is created or posted."""

from __future__ import annotations

import math

from core.domain.types import AgentInfo
from store import rates
from store.db import Conn

WINDOW_S = 60
OPEN_RETRY_S = 10  # an open ask may close any moment: come back soon
TOO_MANY_OPEN, RATE_LIMITED = "too_many_open_asks", "rate_limited"


class Limited(Exception):
    """Refused by a limit: the error code, when to try again, and why in words."""

    def __init__(self, code: str, retry_after: int, message: str) -> None:
        super().__init__(message)
        self.code, self.retry_after, self.message = code, retry_after, message


async def count(conn: Conn, agent: AgentInfo, now: float, postgres: bool, k: int = 1) -> None:
    """`k` more asks, calls or starts this minute; Limited past `asks_per_minute` (the hits
    are rolled back with the transaction, so refusals do not count)."""
    window = int(now // WINDOW_S) * WINDOW_S
    hits = await rates.hit(conn, agent.name, window, postgres, k)
    if hits > agent.asks_per_minute:
        retry = max(1, math.ceil(window + WINDOW_S - now))
        raise Limited(RATE_LIMITED, retry,
                      f"more than {agent.asks_per_minute} asks, calls and starts a minute")


async def counted_and_opened(
    conn: Conn, name: str, agent: AgentInfo | None, now: float, hits: int, new_open: int,
    postgres: bool,
) -> None:
    """`count` (`hits` of them) and `opened` (`new_open` asks) at once, for a batch of creates:
    one round trip on PostgreSQL. Limited past either."""
    if agent is None or hits == 0:
        await opened(conn, name, agent, postgres, new_open)
        return
    window = int(now // WINDOW_S) * WINDOW_S
    now_hits, now_open = await rates.hit_and_open(conn, name, window, hits, new_open, postgres)
    if now_hits > agent.asks_per_minute:
        raise Limited(RATE_LIMITED, max(1, math.ceil(window + WINDOW_S - now)),
                      f"more than {agent.asks_per_minute} asks, calls and starts a minute")
    if now_open > agent.max_open:
        raise Limited(TOO_MANY_OPEN, OPEN_RETRY_S,
                      f"{agent.max_open} asks are open already: wait for some to close")


async def opened(
    conn: Conn, name: str, agent: AgentInfo | None, postgres: bool, k: int = 1
) -> None:
    """`k` more open asks for `name`, in the create's transaction; Limited (rolling it back)
    when that passes the agent's `max_open`."""
    now_open = await rates.bump_open(conn, name, k, postgres)
    if agent is not None and now_open > agent.max_open:
        raise Limited(TOO_MANY_OPEN, OPEN_RETRY_S,
                      f"{agent.max_open} asks are open already: wait for some to close")


async def closed(conn: Conn, name: str, postgres: bool) -> None:
    """One open ask fewer for `name`, in the closing transaction."""
    await rates.bump_open(conn, name, -1, postgres)


async def forget_old(conn: Conn, now: float) -> None:
    await rates.forget(conn, int(now // WINDOW_S) * WINDOW_S - 3600)
