"""Signing in: the web inbox's sessions, kept in the store (store/sessions.py), and the CSRF
token tied to each.

The cookie holds a random 256-bit secret; the store keeps only an HMAC of it under a key the
process derives from the operator token. So a copy of the store opens nothing, a new operator
token ends every session (no row matches any more), Sign out deletes the row for every process
on the store, and a restart keeps what has not expired. Each request costs one lookup by primary
key and nothing is cached: a cache would outlive a Sign out made on another process.

The inbox (handlers/web/) gets its Sessions from the service and never reaches the store.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from store import sessions as rows
from store.db import Store

SESSION_S = 12 * 3600
COOKIE = "aye_session"
# With https the cookie takes the __Host- prefix: the browser then refuses it without Secure,
# with a Domain or on a path other than /, so no sibling host can plant or widen it.
SECURE_COOKIE = "__Host-aye_session"
# How someone signed in: the operator token (Slack, GitHub and OIDC will join it).
BY_TOKEN = "token"
SECRET_BYTES = 32
# What secrets.token_urlsafe(SECRET_BYTES) gives: anything else is no session, without a lookup.
SECRET = re.compile(r"[A-Za-z0-9_-]{43}")


@dataclass(frozen=True, slots=True)
class Session:
    """A signed-in browser: the cookie's secret (never stored), who and how and when."""

    secret: str = field(repr=False)  # the cookie's: never in a log line or a repr
    identity: str
    method: str
    signed_in_at: float
    expires_at: float


class Sessions:
    """Starts, finds and ends the sessions kept in `store`; `key` hashes their secrets and
    makes their CSRF tokens."""

    def __init__(self, store: Store, key: bytes, secure: bool, now: Callable[[], float]) -> None:
        if len(key) < 16:
            raise ValueError("the session key must be at least 16 bytes")
        self.store = store
        self._key = key
        self.secure = secure
        self.cookie = SECURE_COOKIE if secure else COOKIE
        self.now = now

    def _mac(self, purpose: str, text: str) -> str:
        return hmac.new(self._key, f"{purpose}|{text}".encode(), hashlib.sha256).hexdigest()

    async def start(self, identity: str, method: str) -> Session:
        """A new session for `identity`, signed in now by `method`; the sessions that have
        expired are forgotten in the same transaction."""
        now = self.now()
        session = Session(secrets.token_urlsafe(SECRET_BYTES), identity, method, now, now + SESSION_S)
        async with self.store.write() as conn:
            await rows.purge_expired(conn, now)
            await rows.create(conn, self._mac("session", session.secret), identity, method, now,
                              session.expires_at)
        return session

    async def find(self, cookie: str | None) -> Session | None:
        """The live session whose secret `cookie` holds: one lookup by its hash."""
        if not cookie or not SECRET.fullmatch(cookie):
            return None
        async with self.store.read() as conn:
            found = await rows.valid(conn, self._mac("session", cookie), self.now())
        if found is None:
            return None
        return Session(cookie, found.identity, found.method, found.signed_in_at, found.expires_at)

    async def end(self, session: Session) -> None:
        """Sign out: the row goes, so the cookie (and any copy of it) opens nothing, anywhere."""
        async with self.store.write() as conn:
            await rows.end(conn, self._mac("session", session.secret))

    def csrf(self, session: Session) -> str:
        """The session's CSRF token: a function of its secret, so nothing more is stored."""
        return self._mac("csrf", session.secret)

    def csrf_ok(self, session: Session | None, token: str | None) -> bool:
        if session is None or not token or not token.isascii():
            return False
        return hmac.compare_digest(token, self.csrf(session))
