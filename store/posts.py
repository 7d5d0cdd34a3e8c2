"""Where surfaces showed asks (to update them later), and the webhook deliveries already acted on."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from store.db import Conn, Store
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


async def first_delivery(store: Store, delivery_id: str, source: str, now: float) -> bool:
    """True the first time a webhook delivery id is seen, False for a redelivery."""
    try:
        async with store.write() as conn:
            await conn.execute(
                DELIVERIES.insert().values(delivery_id=delivery_id, source=source, received_at=now)
            )
    except IntegrityError:
        return False
    return True


async def forget_deliveries(conn: Conn, before: float) -> None:
    await conn.execute(DELIVERIES.delete().where(DELIVERIES.c.received_at < before))
