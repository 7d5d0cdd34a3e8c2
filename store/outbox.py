"""The outbox: what surfaces must show, written in the change's own transaction, then claimed,
delivered and marked done (or retried) by the delivery loop."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update

from store.db import Conn, Store
from store.models import OutboxRow

OUTBOX = OutboxRow.__table__  # type: ignore[attr-defined]
COL = OUTBOX.c
OUTBOX_INSERT = OUTBOX.insert()
MAX_ERROR = 300


async def add(conn: Conn, rows: list[dict[str, Any]]) -> None:
    """Rows of `ask_seq`, `surface`, `action`, `payload`, `created_at`, `due_at`."""
    if rows:
        await conn.execute(OUTBOX_INSERT, rows)


async def claim(store: Store, now: float, limit: int, hold_s: float) -> list[OutboxRow]:
    """Due rows this process may deliver now, oldest first, each claimed for `hold_s`.

    A row waits while an earlier row of the same ask and surface is pending: a message is
    posted before it is updated, whatever retries the post needed.
    """
    earlier = OUTBOX.alias("earlier")
    blocked = (
        select(earlier.c.id)
        .where(
            earlier.c.ask_seq == COL.ask_seq,
            earlier.c.surface == COL.surface,
            earlier.c.due_at.is_not(None),
            earlier.c.id < COL.id,
        )
        .exists()
    )
    unclaimed = (COL.claimed_until.is_(None)) | (COL.claimed_until < now)
    async with store.read() as conn:
        candidates = (
            await conn.execute(
                select(OUTBOX).where(COL.due_at <= now, ~blocked, unclaimed)
                .order_by(COL.due_at).limit(limit)
            )
        ).all()
    if not candidates:
        return []
    claimed: list[OutboxRow] = []
    async with store.write() as conn:
        for found in candidates:
            won = await conn.execute(
                update(OUTBOX)
                .where(COL.id == found.id, COL.due_at.is_not(None), unclaimed)
                .values(claimed_until=now + hold_s, attempts=COL.attempts + 1)
            )
            if won.rowcount == 1:
                claimed.append(OutboxRow.model_construct(**dict(found._mapping)))
    return claimed


async def finish(store: Store, row_id: int | None, now: float) -> None:
    async with store.write() as conn:
        await conn.execute(
            update(OUTBOX).where(COL.id == row_id)
            .values(due_at=None, done_at=now, claimed_until=None, last_error=None)
        )


async def retry(store: Store, row_id: int | None, due_at: float, why: str) -> None:
    async with store.write() as conn:
        await conn.execute(
            update(OUTBOX).where(COL.id == row_id)
            .values(due_at=due_at, claimed_until=None, last_error=why[:MAX_ERROR])
        )


async def bury(conn: Conn, row_id: int | None, now: float, why: str) -> None:
    """Give the row up: done, never tried again, kept as a dead letter with its reason (in
    the transaction that also says so in the ask's history)."""
    await conn.execute(
        update(OUTBOX).where(COL.id == row_id)
        .values(due_at=None, done_at=now, dead_at=now, claimed_until=None,
                last_error=why[:MAX_ERROR])
    )


async def dead_letters(store: Store) -> int:
    async with store.read() as conn:
        found = await conn.scalar(select(func.count()).select_from(OUTBOX).where(COL.dead_at.is_not(None)))
    return int(found or 0)


async def next_due(store: Store) -> float | None:
    async with store.read() as conn:
        found = await conn.scalar(select(func.min(COL.due_at)))
    return float(found) if found is not None else None


async def forget_done(conn: Conn, before: float) -> None:
    await conn.execute(
        OUTBOX.delete().where(COL.due_at.is_(None), COL.done_at < before, COL.dead_at.is_(None))
    )
