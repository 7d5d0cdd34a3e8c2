"""The inbox's session: a signed, stateless cookie (no session store, so it holds across
processes and restarts), the CSRF token tied to it, the one-shot outcome ("flash") cookie, and
the limit on sign-in attempts.

Everything is signed with HMAC-SHA256 under one key that the process derives from the operator
token: a new operator token ends every session. A session cannot be revoked before it expires
(nothing is stored); "Sign out" deletes the browser's cookie.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SESSION_S = 12 * 3600
FLASH_S = 60
COOKIE = "aye_session"
# With https the cookie takes the __Host- prefix: the browser then refuses it without Secure,
# with a Domain or on a path other than /, so no sibling host can plant or widen it.
SECURE_COOKIE = "__Host-aye_session"
FLASH_COOKIE = "aye_flash"
SIGN_INS_PER_MINUTE = 10
SIGN_IN_WINDOW_S = 60.0
MAX_ADDRESSES = 10_000  # addresses remembered by the sign-in limit; the oldest go first
MAX_FLASH_TEXT = 600  # a cookie holds about 4 KB: the outcome's words are cut to this


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Flash:
    """What the page after an answer says: `ok` (answered) or not, and the words."""

    ok: bool
    text: str
    ref: str | None = None


class Sessions:
    """Issues and checks session cookies, CSRF tokens and flash cookies under `key`."""

    def __init__(self, key: bytes, secure: bool, now: Callable[[], float] = time.time) -> None:
        if len(key) < 16:
            raise ValueError("the session key must be at least 16 bytes")
        self._key = key
        self.secure = secure
        self.cookie = SECURE_COOKIE if secure else COOKIE
        self.now = now

    def _mac(self, purpose: str, text: str) -> str:
        digest = hmac.new(self._key, f"{purpose}|{text}".encode(), hashlib.sha256).digest()
        return _b64(digest)

    def issue(self) -> str:
        """A new session's cookie value: `<id>.<expires>.<mac>`."""
        sid = secrets.token_urlsafe(16)
        body = f"{sid}.{int(self.now()) + SESSION_S}"
        return f"{body}.{self._mac('session', body)}"

    def session_id(self, value: str | None) -> str | None:
        """The session's id when `value` is a session cookie of ours that has not expired."""
        if not value or len(value) > 200 or not value.isascii():
            return None
        body, _, mac = value.rpartition(".")
        sid, _, expires = body.partition(".")
        if not sid or not expires.isdigit() or not hmac.compare_digest(mac, self._mac("session", body)):
            return None
        return sid if int(expires) > self.now() else None

    def csrf(self, sid: str) -> str:
        """The CSRF token of a session: a function of its id, so nothing is stored."""
        return self._mac("csrf", sid)

    def csrf_ok(self, sid: str | None, token: str | None) -> bool:
        if sid is None or not token or not token.isascii():
            return False
        return hmac.compare_digest(token, self.csrf(sid))

    def flash(self, flash: Flash) -> str:
        text = flash.text if len(flash.text) <= MAX_FLASH_TEXT else flash.text[:MAX_FLASH_TEXT] + "…"
        data = {"ok": flash.ok, "text": text, "ref": flash.ref, "until": int(self.now()) + FLASH_S}
        body = _b64(json.dumps(data, separators=(",", ":")).encode())
        return f"{body}.{self._mac('flash', body)}"

    def read_flash(self, value: str | None) -> Flash | None:
        if not value or len(value) > 4096 or not value.isascii():
            return None
        body, _, mac = value.partition(".")
        if not hmac.compare_digest(mac, self._mac("flash", body)):
            return None
        raw = _unb64(body)
        try:
            data: Any = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("until"), int):
            return None
        if data["until"] < self.now():
            return None
        ref = data.get("ref")
        return Flash(bool(data.get("ok")), str(data.get("text", "")), ref if isinstance(ref, str) else None)


class SignInLimit:
    """At most SIGN_INS_PER_MINUTE sign-in attempts a minute per client address, so the
    operator token cannot be guessed online. Kept in memory: per process."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, address: str) -> bool:
        """Count one attempt from `address`; False when it is over the limit."""
        now = self.now()
        times = self._seen.pop(address, None) or deque()
        while times and times[0] <= now - SIGN_IN_WINDOW_S:
            times.popleft()
        allowed = len(times) < SIGN_INS_PER_MINUTE
        if allowed:
            times.append(now)
        self._seen[address] = times
        while len(self._seen) > MAX_ADDRESSES:
            self._seen.popitem(last=False)
        return allowed

    def retry_after(self, address: str) -> int:
        """Whole seconds until `address` may try again."""
        times = self._seen.get(address)
        if not times:
            return 1
        return max(1, int(times[0] + SIGN_IN_WINDOW_S - self.now()) + 1)
