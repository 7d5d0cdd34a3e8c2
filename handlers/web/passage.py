"""A sign-in under way, bound to the browser that began it: a short-lived signed cookie holds
the `state` sent to the provider, the provider's name and the page to go on to.

The cookie is SameSite=Lax, not Strict like the session's: the provider sends the browser back
with a cross-site navigation, on which a Strict cookie is not sent. Its `state` must come back
in the callback's query, so a callback begun in another browser (login CSRF) or with the state
changed finds no match. The nonce and the PKCE code verifier are not kept anywhere: both are
HMACs of the state under the process's key, so only this browser's cookie and aye's key give
them, and nothing is stored until the callback comes. That the state is used once is the
store's to say (the caller spends it there, for every process on the store).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handlers.web.urlsafe import b64, unb64

COOKIE = "aye_signin"
# With https the cookie takes the __Host- prefix, as the session's does.
SECURE_COOKIE = "__Host-aye_signin"
PASSAGE_S = 600  # how long a person may take at the provider before the sign-in is stale
MAX_COOKIE = 2048


@dataclass(frozen=True, slots=True)
class Passage:
    """One sign-in begun: with whom, its state, and where to go once signed in."""

    provider: str
    state: str
    following: str


class Passages:
    """Begins and reads sign-ins under `key` (derived from the operator token, as the
    sessions' key is: a new token also ends the sign-ins under way)."""

    def __init__(self, key: bytes, secure: bool, now: Callable[[], float]) -> None:
        self._key = key
        self.secure = secure
        self.cookie = SECURE_COOKIE if secure else COOKIE
        self.now = now

    def _mac(self, purpose: str, text: str) -> bytes:
        return hmac.new(self._key, f"sign-in {purpose}|{text}".encode(), hashlib.sha256).digest()

    def begin(self, provider: str, following: str) -> tuple[Passage, str]:
        """A new sign-in, and the value of the cookie that binds it to this browser."""
        passage = Passage(provider, secrets.token_urlsafe(32), following)
        data = {"p": provider, "s": passage.state, "n": following,
                "u": int(self.now()) + PASSAGE_S}
        body = b64(json.dumps(data, separators=(",", ":")).encode())
        return passage, f"{body}.{b64(self._mac('cookie', body))}"

    def read(self, value: str | None, provider: str, state: str | None) -> Passage | None:
        """The sign-in this browser began with `provider`, if the callback's `state` is its
        own and it is not stale; None otherwise (missing, changed, another's, too old)."""
        if not value or len(value) > MAX_COOKIE or not value.isascii() or not state:
            return None
        body, _, mac = value.partition(".")
        if not hmac.compare_digest(mac, b64(self._mac("cookie", body))):
            return None
        data = _json(body)
        if data is None or not isinstance(data.get("u"), int) or data["u"] < self.now():
            return None
        kept, following = data.get("s"), data.get("n")
        if data.get("p") != provider or not isinstance(kept, str) or not isinstance(following, str):
            return None
        if not hmac.compare_digest(kept.encode(), state.encode()):
            return None
        return Passage(provider, kept, following)

    def nonce(self, passage: Passage) -> str:
        return b64(self._mac("nonce", passage.state))

    def verifier(self, passage: Passage) -> str:
        """The PKCE code verifier (RFC 7636: 43 to 128 URL-safe characters; this is 43)."""
        return b64(self._mac("verifier", passage.state))


def _json(body: str) -> dict[str, Any] | None:
    raw = unb64(body)
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
