"""The email surface: each `email:` responder of an ask (directly, or as a `person:`'s identity)
gets one mail about it, sent through the outbox.

Exactly once: before its first send, each mail is recorded (core.app.mailing) with its
Message-ID, which every retry carries, and each send first takes a lease on that record, so no
two processes (or a retry here) send it at once. The one gap left, a crash after the server
took the mail and before it was recorded sent, is closed on the reader's side: the retry is the
same message (same Message-ID, same link), which mail systems show once.

A slow SMTP server slows nobody else: `deliver` never waits on a send. It records the mails,
starts their sends in the background (paced) and hands the row back to the outbox for a moment
(RetryLater, `paced`); the row is finished on a later pass, once every mail was sent, or given
up (a dead letter) once one was refused for good (a 5xx). A 4xx waits with backoff."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import Sequence
from email.utils import make_msgid
from typing import Any

from core.app.ports import ESCALATE, POST, REMIND, AskRow, GiveUp, RetryLater
from core.app.service import MailRow, Service
from core.domain import refs, vocabulary
from core.domain.kinds import EMAIL_KIND
from core.domain.logline import emit
from core.domain.responders import Responder
from handlers.email import message, page
from handlers.email.sending import Outcome, Sender
from handlers.email.settings import SURFACE, EmailSettings

log = logging.getLogger("aye.email")

MAILED = (POST, ESCALATE, REMIND)
ASK_MAIL, REMIND_MAIL = "ask", "remind"
# How soon the outbox looks again at a row whose mails are being sent (at least, at most).
RECHECK_S, MAX_RECHECK_S = 0.5, 5.0
# A 4xx: tried again after 5 s, 10 s, 20 s … at most 10 minutes apart; given up after this many.
FIRST_BACKOFF_S, MAX_BACKOFF_S, MAX_TRIES = 5.0, 600.0, 12


def link_token(key: bytes, ask_id: str, recipient: str) -> str:
    """The recipient's capability for the ask: 256 bits derived from the process's key, so a
    retried or reminding mail carries the same link (the store keeps only its hash)."""
    digest = hmac.new(key, f"link\n{ask_id}\n{recipient}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class EmailSurface:
    name = SURFACE

    def __init__(self, settings: EmailSettings, asks: Service) -> None:
        self.settings, self.asks = settings, asks
        self.sender = Sender(settings.smtp)
        self._key = asks.derived_key(b"email links")
        self._domain = settings.sender.rpartition("@")[2]
        self._sending: dict[int, asyncio.Task[Outcome]] = {}
        self._started: dict[int, float] = {}  # when each send in flight began (monotonic)
        # (ask seq, purpose) whose mails this process recorded, while their row is pending.
        self._known: set[tuple[int, str]] = set()
        # After a 4xx: not tried again here before then (the clock's time), by mail id.
        self._not_before: dict[int, float] = {}
        self.pages = page.Pages(asks, self._key)

    # -- the seam ------------------------------------------------------------------------

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        if responder.kind == EMAIL_KIND:
            return responder.id is not None
        return any(r.kind == EMAIL_KIND for r in self.asks.identities([str(responder)])) \
            if responder.kind == "person" else False

    def wants(self, ask: AskRow, action: str) -> bool:
        return action in MAILED and bool(self.recipients(ask, action))

    def recipients(self, ask: AskRow, action: str) -> list[str]:
        """The addresses `action` mails: the ask's, the escalation's (those already asked are
        not asked again), or (a reminder, which comes before any escalation) the ask's who have
        not approved yet."""
        names = list(ask.escalate_responders or []) if action == ESCALATE else list(ask.responders)
        approved = {a.lower() for a in ask.approvers or []}
        found = [f"{r.kind}:{r.id}".lower() for r in self.asks.identities(names)
                 if r.kind == EMAIL_KIND and r.id]
        if action == REMIND:
            found = [f for f in found if f not in approved]
        return [f.partition(":")[2] for f in dict.fromkeys(found)]

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        if action not in MAILED or ask.status != vocabulary.OPEN:
            return  # closed before its mail went: there is nothing left to answer
        to = self.recipients(ask, action)
        if not to:
            return
        purpose = REMIND_MAIL if action == REMIND else ASK_MAIL
        mails = await self._recorded(ask, purpose, to)
        now = self.asks.clock.now()
        for mail in mails:
            ident = mail.id or 0
            if mail.sent_at is None and mail.refused_at is None and ident not in self._sending \
                    and self._not_before.get(ident, 0.0) <= now:
                self._started[ident] = time.monotonic()
                self._sending[ident] = asyncio.create_task(
                    self._send(ask, action, mail), name=f"aye-email-{ident}")
        await asyncio.sleep(0)  # the sends begin; never waited on here
        try:
            await self._settle(ask, mails)
        except RetryLater:
            raise
        except BaseException:
            self._known.discard((ask.seq or 0, purpose))
            raise
        self._known.discard((ask.seq or 0, purpose))

    async def _recorded(self, ask: AskRow, purpose: str, to: list[str]) -> list[MailRow]:
        """The ask's mails for `purpose` to `to`, recorded (with their links) on the first pass;
        a later pass of the same row only reads them."""
        key = (ask.seq or 0, purpose)
        if key in self._known:
            return [m for m in await self.asks.mails.of(ask)
                    if m.purpose == purpose and m.recipient in to]
        links = [(r, token_hash(link_token(self._key, ask.id, r))) for r in to]
        wanted = [(r, purpose, make_msgid(domain=self._domain)) for r in to]
        mails = await self.asks.mails.record(ask, links, wanted)
        self._known.add(key)
        return mails

    async def _settle(self, ask: AskRow, mails: Sequence[MailRow]) -> None:
        """Finished (every mail sent), a dead letter (one refused for good), or back to the
        outbox: for a moment while sends run, with backoff after a 4xx."""
        ours = {m.id for m in mails}
        now_rows = [m for m in await self.asks.mails.of(ask) if m.id in ours]
        pending = [m for m in now_rows if m.sent_at is None and m.refused_at is None]
        running = [m for m in pending if m.id in self._sending
                   or (m.sending_until or 0) > self.asks.clock.now()]
        if running:
            # Looked at again about as long as the sends have run so far (0.5 s to 5 s): a
            # quick server's row is finished at once, a slow one's is not read twice a second.
            since = min((self._started.get(m.id or 0, time.monotonic()) for m in running),
                        default=time.monotonic())
            after = min(max(time.monotonic() - since, RECHECK_S), MAX_RECHECK_S)
            raise RetryLater(after, "sending", kind="paced")
        if pending:
            now = self.asks.clock.now()
            wait = max(self._not_before.get(m.id or 0, now) - now for m in pending)
            raise RetryLater(max(wait, RECHECK_S), f"not sent yet: {pending[0].last_error}",
                             kind="error")
        refused = [m for m in now_rows if m.refused_at is not None]
        if refused:
            raise GiveUp(f"the SMTP server refused {len(refused)} of {len(now_rows)} mails: "
                         f"{refused[0].last_error}")

    async def _send(self, ask: AskRow, action: str, mail: MailRow) -> Outcome:
        try:
            await self.sender.pacer.turn()
            if not await self.asks.mails.lease(mail, self.sender.bound_s + 1.0):
                return Outcome("busy")  # sent, refused, or being sent by another process
            return await self._send_leased(ask, action, mail)
        except Exception as exc:  # the store, most likely: the row's next pass tries again
            emit(log, "email.failed", level=logging.WARNING, id=ask.id, ref=refs.ref(ask),
                 surface=SURFACE, mail=mail.id, error=type(exc).__name__)
            return Outcome("later", type(exc).__name__)
        finally:
            self._sending.pop(mail.id or 0, None)
            self._started.pop(mail.id or 0, None)

    async def _send_leased(self, ask: AskRow, action: str, mail: MailRow) -> Outcome:
        token = link_token(self._key, ask.id, mail.recipient)
        mailed = message.compose(ask, action, mail.recipient, self.settings.mail_from,
                                 mail.message_id, f"{self.settings.public_url}/e/{token}",
                                 self.asks.clock.now())
        try:
            outcome = await self.sender.send(mailed, self.settings.sender, mail.recipient)
        except asyncio.CancelledError:
            raise  # stopping mid-send: the lease runs out, and the same mail goes again
        fields = {"id": ask.id, "ref": refs.ref(ask), "surface": SURFACE, "mail": mail.id}
        self._not_before.pop(mail.id or 0, None)
        if outcome.result == "sent":
            await self.asks.mails.sent(mail)
            await self.asks.record_posted(ask, SURFACE, {"message_id": mail.message_id},
                                          f"a mail to {mail.recipient}")
        elif outcome.result == "refused" or (mail.attempts or 0) + 1 >= MAX_TRIES:
            await self.asks.mails.refused(mail, outcome.why)
            emit(log, "email.refused", level=logging.WARNING, why=outcome.why, **fields)
        else:
            await self.asks.mails.release(mail, outcome.why)
            backoff = min(FIRST_BACKOFF_S * 2 ** (mail.attempts or 0), MAX_BACKOFF_S)
            self._not_before[mail.id or 0] = self.asks.clock.now() + backoff
            emit(log, "email.retry", level=logging.WARNING, why=outcome.why, **fields)
        return outcome

    # -- the rest of a surface -----------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return {"on": True, "smtp": self.settings.smtp.describe(), "sending": len(self._sending)}

    def routes(self) -> Sequence[Any]:
        return self.pages.routes()

    async def start(self, session: Any) -> None:
        return None

    async def close(self) -> None:
        tasks = list(self._sending.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
