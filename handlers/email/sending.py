"""One mail handed to the SMTP server with aiosmtplib, paced, and what the server said, sorted:
sent, refused for good (a 5xx: never sent again), or not now (a 4xx, a timeout, the server
unreachable: tried again with backoff)."""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from email.message import EmailMessage

import aiosmtplib

from handlers.email.settings import SmtpServer

# Connections to the relay at once, from this process.
SENDS_AT_ONCE = 4
MAX_REASON = 200


@dataclass(frozen=True, slots=True)
class Outcome:
    """`sent`; `refused` (for good); or `later` (worth trying again); `why` in words safe to
    log (the server's code and reply, or the error's kind; never the mail)."""

    result: str
    why: str = ""


SENT = Outcome("sent")


class Pacer:
    """At most `rate` sends a second from this process: each send takes the next slot."""

    def __init__(self, rate: float) -> None:
        self._gap = 1.0 / rate
        self._next = 0.0

    async def turn(self) -> None:
        now = time.monotonic()
        at = max(now, self._next)
        self._next = at + self._gap
        if at > now:
            await asyncio.sleep(at - now)


class Sender:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server
        self.pacer = Pacer(server.rate)
        self._slots = asyncio.Semaphore(SENDS_AT_ONCE)
        # Built once: the system's trusted CAs (SSL_CERT_FILE honoured), names checked; also
        # for a STARTTLS that plain smtp:// takes when offered (a bad certificate is an error).
        self._tls = ssl.create_default_context()

    @property
    def bound_s(self) -> float:
        """How long one send may take at most, every step of it (connect, TLS, AUTH, DATA)."""
        return 3 * self.server.timeout_s

    async def send(self, message: EmailMessage, sender: str, recipient: str) -> Outcome:
        server = self.server
        async with self._slots:
            try:
                await asyncio.wait_for(aiosmtplib.send(
                    message, sender=sender, recipients=[recipient], hostname=server.host,
                    port=server.port, username=server.username, password=server.password,
                    timeout=server.timeout_s, use_tls=server.tls == "tls",
                    # plain: STARTTLS when offered (None); starttls: required.
                    start_tls=True if server.tls == "starttls" else None,
                    tls_context=self._tls,
                ), self.bound_s)
            except aiosmtplib.SMTPRecipientsRefused as exc:
                first = exc.recipients[0]
                return _coded(first.code, first.message)
            except aiosmtplib.SMTPResponseException as exc:
                return _coded(exc.code, exc.message)
            except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
                return Outcome("later", f"the SMTP server could not be reached or stopped "
                                        f"answering ({type(exc).__name__})")
        return SENT


def _coded(code: int, message: str) -> Outcome:
    words = " ".join(str(message).split())[:MAX_REASON]
    why = f"SMTP {code} {words}".strip()
    return Outcome("refused" if 500 <= code < 600 else "later", why)
