"""Email's records: the links mailed to people (kept as the hash of their token) and each mail,
recorded before its first send. Callers pass the time; `Store` methods are one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from store.db import Store
from store.models import EmailLinkRow, EmailMailRow

LINKS = EmailLinkRow.__table__  # type: ignore[attr-defined]
MAILS = EmailMailRow.__table__  # type: ignore[attr-defined]
L, M = LINKS.c, MAILS.c
MAX_ERROR = 300


def _insert_absent(store: Store, table: Any) -> Any:
    """An INSERT that leaves a row already there (another process's, or a retry's) as it is."""
    insert = pg_insert if store.is_postgres else sqlite_insert
    return insert(table).on_conflict_do_nothing()


async def record(
    store: Store, ask_seq: int, links: Sequence[dict[str, Any]], mails: Sequence[dict[str, Any]]
) -> list[EmailMailRow]:
    """Each link (recipient, token_hash) and mail (recipient, purpose, message_id) of the ask
    unless already recorded, in one transaction; the mails as they stand (the first record of
    each wins: its Message-ID is the one every retry carries). A link whose token no longer
    matches (the key it is derived from changed) takes the new token's hash while unused."""
    async with store.write() as conn:
        if links:
            await conn.execute(_insert_absent(store, LINKS), list(links))
            for link in links:
                await conn.execute(
                    update(LINKS).where(L.ask_seq == ask_seq, L.recipient == link["recipient"],
                                        L.token_hash != link["token_hash"], L.used_at.is_(None))
                    .values(token_hash=link["token_hash"])
                )
        if mails:
            await conn.execute(_insert_absent(store, MAILS), list(mails))
        wanted = [and_(M.recipient == m["recipient"], M.purpose == m["purpose"]) for m in mails]
        if not wanted:
            return []
        rows = (await conn.execute(select(MAILS).where(M.ask_seq == ask_seq, or_(*wanted)))).all()
    return [EmailMailRow.model_construct(**dict(r._mapping)) for r in rows]


async def lease(store: Store, mail_id: int | None, now: float, until: float) -> bool:
    """This process sends the mail until `until`, unless it was sent, refused, or another holds
    it: the record that stops a second send while this one may be under way."""
    async with store.write() as conn:
        won = await conn.execute(
            update(MAILS).where(
                M.id == mail_id, M.sent_at.is_(None), M.refused_at.is_(None),
                or_(M.sending_until.is_(None), M.sending_until < now),
            ).values(sending_until=until, attempts=M.attempts + 1)
        )
    return bool(won.rowcount == 1)


async def sent(store: Store, mail_id: int | None, now: float) -> None:
    async with store.write() as conn:
        await conn.execute(update(MAILS).where(M.id == mail_id)
                           .values(sent_at=now, sending_until=None, last_error=None))


async def refused(store: Store, mail_id: int | None, now: float, why: str) -> None:
    """Refused for good (an SMTP 5xx): never sent again."""
    async with store.write() as conn:
        await conn.execute(update(MAILS).where(M.id == mail_id).values(
            refused_at=now, sending_until=None, last_error=why[:MAX_ERROR]))


async def release(store: Store, mail_id: int | None, why: str) -> None:
    """Not sent this time (a 4xx, the server unreachable): free for the next try at once."""
    async with store.write() as conn:
        await conn.execute(update(MAILS).where(M.id == mail_id)
                           .values(sending_until=None, last_error=why[:MAX_ERROR]))


async def mails_of(store: Store, ask_seq: int | None) -> list[EmailMailRow]:
    async with store.read() as conn:
        rows = (await conn.execute(select(MAILS).where(M.ask_seq == ask_seq).order_by(M.id))).all()
    return [EmailMailRow.model_construct(**dict(r._mapping)) for r in rows]


async def link(store: Store, token_hash: str) -> EmailLinkRow | None:
    async with store.read() as conn:
        found = (await conn.execute(select(LINKS).where(L.token_hash == token_hash))).first()
    return EmailLinkRow.model_construct(**dict(found._mapping)) if found else None


async def use(store: Store, token_hash: str, now: float) -> bool:
    """The one conditional write that uses the link up: True for the one request that did."""
    async with store.write() as conn:
        won = await conn.execute(update(LINKS).where(L.token_hash == token_hash,
                                                     L.used_at.is_(None)).values(used_at=now))
    return bool(won.rowcount == 1)


async def unuse(store: Store, token_hash: str) -> None:
    """The answer it carried did not fit (a form to fix): the link may be used again."""
    async with store.write() as conn:
        await conn.execute(update(LINKS).where(L.token_hash == token_hash).values(used_at=None))
