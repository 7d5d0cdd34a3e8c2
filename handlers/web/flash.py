"""The one-shot outcome of an answer ("flash"): a short-lived signed cookie that the page after
the 303 shows once, then deletes. Nothing is stored: it says only what this browser just did."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handlers.web.urlsafe import b64, unb64

FLASH_COOKIE = "aye_flash"
FLASH_S = 60
MAX_FLASH_TEXT = 600  # a cookie holds about 4 KB: the outcome's words are cut to this


@dataclass(frozen=True, slots=True)
class Flash:
    """What the page after an answer says: `ok` (answered) or not, and the words."""

    ok: bool
    text: str
    ref: str | None = None
    reason: str | None = None  # why not answered (core.domain.rules.REASONS); not in the cookie


class Flashes:
    """Signs and reads flash cookies under `key` (a key of their own, derived like the
    sessions' from the operator token)."""

    def __init__(self, key: bytes, now: Callable[[], float]) -> None:
        self._key = key
        self.now = now

    def _mac(self, body: str) -> str:
        return b64(hmac.new(self._key, f"flash|{body}".encode(), hashlib.sha256).digest())

    def sign(self, flash: Flash) -> str:
        text = flash.text if len(flash.text) <= MAX_FLASH_TEXT else flash.text[:MAX_FLASH_TEXT] + "…"
        data = {"ok": flash.ok, "text": text, "ref": flash.ref, "until": int(self.now()) + FLASH_S}
        body = b64(json.dumps(data, separators=(",", ":")).encode())
        return f"{body}.{self._mac(body)}"

    def read(self, value: str | None) -> Flash | None:
        if not value or len(value) > 4096 or not value.isascii():
            return None
        body, _, mac = value.partition(".")
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        raw = unb64(body)
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
