"""Where surfaces showed asks (to update them later), and the webhook deliveries already acted on."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from store.db import Conn, Duplicate, Store
from store.models import DeliveryRow, PostRow

POSTS = PostRow.__table__  # type: ignore[attr-defined]
DELIVERIES = DeliveryRow.__table__  # type: ignore[attr-defined]


async def location(conn: Conn, ask_seq: int | None, surface: str) -> dict[str, Any] | None:
    query = select(POSTS.c.location).where(POSTS.c.ask_seq == ask_seq, POSTS.c.surface == surface)
    found = (await conn.execute(query)).first()
    return dict(found.location) if found else None


async def record_first(
    conn: Conn, ask_seq: int | None, surface: str, where: dict[str, Any], now: float
) -> None:
    """Keep the first place a surface showed the ask; a later one (posted twice) is not kept."""
    if await location(conn, ask_seq, surface) is None:
        await conn.execute(
            POSTS.insert().values(ask_seq=ask_seq, surface=surface, location=where, posted_at=now)
        )


async def record_delivery(conn: Conn, key: str, source: str, now: float) -> None:
    """Remember that a webhook's event (a delivery, a comment) was acted on, in the same
    transaction as what it did; Duplicate when it already was."""
    try:
        await conn.execute(DELIVERIES.insert().values(delivery_id=key, source=source, received_at=now))
    except IntegrityError as exc:
        raise Duplicate from exc


async def first_delivery(store: Store, key: str, source: str, now: float) -> bool:
    """True the first time `key` is seen (recorded alone), False when it was before."""
    try:
        async with store.write() as conn:
            await record_delivery(conn, key, source, now)
    except Duplicate:
        return False
    return True


async def forget_deliveries(conn: Conn, before: float) -> None:
    await conn.execute(DELIVERIES.delete().where(DELIVERIES.c.received_at < before))
