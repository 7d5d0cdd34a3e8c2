"""The keys receipts are signed with (signing_keys): every key aye has signed with, its public
half always, the highest generation current. A new current key takes the next generation; the
unique generation decides a race (two processes generating at first start, or a rotation beside
a start), so all processes sign with one key."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from store.db import Conn, Duplicate, Store
from store.models import SigningKeyRow

KEYS = SigningKeyRow.__table__  # type: ignore[attr-defined]
K = KEYS.c


async def current(store: Store) -> dict[str, Any] | None:
    """The current key's row (generation, kid, public_jwk, private_pem), or None."""
    async with store.read() as conn:
        found = (await conn.execute(select(KEYS).order_by(K.generation.desc()).limit(1))).first()
    return None if found is None else dict(found._mapping)


async def public_keys(store: Store) -> list[dict[str, Any]]:
    """Every key's public JWK, the current one first."""
    async with store.read() as conn:
        rows = await conn.execute(select(K.public_jwk).order_by(K.generation.desc()))
        return [dict(row[0]) for row in rows.all()]


async def make_current(
    store: Store, kid: str, jwk: dict[str, Any], private_pem: str | None, now: float
) -> int:
    """Make the key `kid` current: a new generation above every other, for a new key or one
    signed with before (its row moves up). Duplicate when another process took that
    generation first (read the current key again, and try again if it is still not this one)."""
    try:
        async with store.write() as conn:
            top = int(await conn.scalar(select(func.max(K.generation))) or 0)
            moved = await conn.execute(
                update(KEYS).where(K.kid == kid).values(generation=top + 1))
            if moved.rowcount == 0:
                await conn.execute(KEYS.insert().values(
                    generation=top + 1, kid=kid, public_jwk=jwk, private_pem=private_pem,
                    created_at=now))
    except IntegrityError as exc:
        raise Duplicate from exc
    return top + 1


async def first(store: Store, kid: str, jwk: dict[str, Any], private_pem: str, now: float) -> bool:
    """Keep a generated key as the first one: True when it is, False when another process's
    came first (a unique generation 1 decides)."""
    try:
        async with store.write() as conn:
            await conn.execute(KEYS.insert().values(
                generation=1, kid=kid, public_jwk=jwk, private_pem=private_pem, created_at=now))
    except IntegrityError:
        return False
    return True


async def count(conn: Conn) -> int:
    return int(await conn.scalar(select(func.count()).select_from(KEYS)) or 0)
