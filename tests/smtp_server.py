"""A real SMTP server on 127.0.0.1 for the email tests (aiosmtpd's SMTP on the test's own loop):
it keeps every message as the MIME a mail reader gets, and can answer a DATA as a relay would,
with a 451 (try later) or a 550 (refused for good), or take its time."""

from __future__ import annotations

import asyncio
import email
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

MAIL_FROM = "aye <aye@example.test>"
PUBLIC_URL = "https://aye.example.test"


@dataclass
class Received:
    mail_from: str
    to: list[str]
    message: EmailMessage

    def part(self, subtype: str) -> str:
        found = self.message.get_body(preferencelist=(subtype,))
        assert found is not None, f"no text/{subtype} part"
        return str(found.get_content())


@dataclass
class Mailbox:
    """aiosmtpd's handler: what arrived, and how the next DATAs are answered."""

    received: list[Received] = field(default_factory=list)
    # Replies to the next DATAs instead of taking them ("451 4.3.0 Try again later").
    replies: list[str] = field(default_factory=list)
    datas: int = 0  # every DATA, taken or not
    tried: list[tuple[str, str]] = field(default_factory=list)  # each DATA's Message-ID, reply
    # Called when a message was taken, before the 250 goes back (a test's kill -9).
    on_taken: Callable[[], None] | None = None
    # While set, each DATA waits for it to be set (a slow server).
    hold: asyncio.Event | None = None
    delay_s: float = 0.0

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.datas += 1
        if self.hold is not None:
            await self.hold.wait()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        content = envelope.content if isinstance(envelope.content, bytes) else b""
        message = email.message_from_bytes(content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        reply = self.replies.pop(0) if self.replies else "250 2.0.0 OK"
        self.tried.append((str(message["Message-ID"]), reply))
        if not reply.startswith("250"):
            return reply
        self.received.append(Received(str(envelope.mail_from), list(envelope.rcpt_tos), message))
        if self.on_taken is not None:
            self.on_taken()
        return reply

    def to(self, address: str) -> list[Received]:
        return [r for r in self.received if address in r.to]


@dataclass
class SmtpServer:
    mailbox: Mailbox
    port: int
    server: asyncio.Server

    def url(self, scheme: str = "smtp", userinfo: str = "", query: str = "") -> str:
        return f"{scheme}://{userinfo}127.0.0.1:{self.port}{'?' + query if query else ''}"


@asynccontextmanager
async def smtp_server(
    mailbox: Mailbox | None = None, implicit_tls: ssl.SSLContext | None = None, **smtp: Any
) -> AsyncIterator[SmtpServer]:
    """aiosmtpd on 127.0.0.1 (a free port), on this loop; `smtp`: its SMTP class's options
    (tls_context and require_starttls for STARTTLS, authenticator …)."""
    box = mailbox or Mailbox()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(box, hostname="smtp.example.test", **smtp), "127.0.0.1", 0, ssl=implicit_tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield SmtpServer(box, port, server)
    finally:
        server.close()
        await server.wait_closed()


def email_env(server: SmtpServer | None, url: str | None = None) -> dict[str, str]:
    """What turns email on for aye, sending to `server` (or to `url`)."""
    assert server is not None or url is not None
    return {"AYE_SMTP_URL": url or server.url(), "AYE_MAIL_FROM": MAIL_FROM,  # type: ignore[union-attr]
            "AYE_PUBLIC_URL": PUBLIC_URL}
