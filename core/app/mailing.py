"""Email's records, for the email surface (handlers/email): the links it mails (only their
tokens' hashes are kept) and each mail, recorded before its first send so that a retry, in this
process or after a crash in another, carries the same Message-ID and no two processes send it at
once (a lease). The link is used up by one conditional write, before its answer is given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.app.parts import Parts
from store import mails
from store.models import AskRow
from store.models import EmailLinkRow as LinkRow
from store.models import EmailMailRow as MailRow

__all__ = ["LinkRow", "MailRow", "Mails"]


class Mails:
    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def _now(self) -> float:
        return self._parts.clock.now()

    async def record(
        self, ask: AskRow, links: Sequence[tuple[str, str]], wanted: Sequence[tuple[str, str, str]]
    ) -> list[MailRow]:
        """`links` of (recipient, token_hash) and mails of (recipient, purpose, message_id),
        each recorded unless it already was; the mails as recorded (the first Message-ID)."""
        now = self._now()
        link_rows = [{"token_hash": h, "ask_seq": ask.seq, "recipient": r, "created_at": now}
                     for r, h in links]
        mail_rows: list[dict[str, Any]] = [
            {"ask_seq": ask.seq, "recipient": r, "purpose": p, "message_id": m,
             "created_at": now, "attempts": 0} for r, p, m in wanted]
        return await mails.record(self._parts.store, ask.seq or 0, link_rows, mail_rows)

    async def lease(self, mail: MailRow, hold_s: float) -> bool:
        """This process may send `mail` for `hold_s`: False when it is sent, refused for good,
        or another is sending it."""
        now = self._now()
        return await mails.lease(self._parts.store, mail.id, now, now + hold_s)

    async def sent(self, mail: MailRow) -> None:
        await mails.sent(self._parts.store, mail.id, self._now())

    async def refused(self, mail: MailRow, why: str) -> None:
        await mails.refused(self._parts.store, mail.id, self._now(), why)

    async def release(self, mail: MailRow, why: str) -> None:
        await mails.release(self._parts.store, mail.id, why)

    async def of(self, ask: AskRow) -> list[MailRow]:
        return await mails.mails_of(self._parts.store, ask.seq)

    async def link(self, token_hash: str) -> LinkRow | None:
        return await mails.link(self._parts.store, token_hash)

    async def use(self, token_hash: str) -> bool:
        return await mails.use(self._parts.store, token_hash, self._now())

    async def unuse(self, token_hash: str) -> None:
        await mails.unuse(self._parts.store, token_hash)
