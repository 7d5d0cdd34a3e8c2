"""The web inbox's sessions: one row per signed-in browser, found by the keyed hash of its
cookie's secret. That hash is the primary key, so checking a request is one indexed lookup, and
every process on the store sees a Sign out at once. Callers pass the transaction and the time."""

from __future__ import annotations

from sqlalchemy import bindparam, delete, select

from store.db import Conn
from store.models import SessionRow

SESSIONS = SessionRow.__table__  # type: ignore[attr-defined]
S = SESSIONS.c
# Built once: the lookup runs on every inbox request.
FIND = select(S.identity, S.method, S.signed_in_at, S.expires_at).where(
    S.id_hash == bindparam("id_hash"), S.expires_at > bindparam("now")
)
END = delete(SESSIONS).where(S.id_hash == bindparam("id_hash"))
INSERT = SESSIONS.insert()


async def create(
    conn: Conn, id_hash: str, identity: str, method: str, now: float, expires_at: float
) -> None:
    """A new session, signed in `now` as `identity` by `method` (`token`: the operator token)."""
    await conn.execute(INSERT, {"id_hash": id_hash, "identity": identity, "method": method,
                                "signed_in_at": now, "expires_at": expires_at})


async def valid(conn: Conn, id_hash: str, now: float) -> SessionRow | None:
    """The session whose id hashes to `id_hash`, while it has not expired; None otherwise."""
    found = (await conn.execute(FIND, {"id_hash": id_hash, "now": now})).first()
    if found is None:
        return None
    return SessionRow.model_construct(id_hash=id_hash, **dict(found._mapping))


async def end(conn: Conn, id_hash: str) -> bool:
    """Sign out: the session is gone for every process. False when there was none."""
    return bool((await conn.execute(END, {"id_hash": id_hash})).rowcount)


async def purge_expired(conn: Conn, now: float) -> int:
    """Forget the sessions that have expired (they open nothing already); how many went."""
    return int((await conn.execute(delete(SESSIONS).where(S.expires_at <= now))).rowcount or 0)
