"""How an outside system proves a delivery to an external ask's door is its own: a verifier
(the operator's `[[verifiers]]`) holds the shared secret, the header the signature comes in,
and a scheme that says how the header is made.

`hmac-sha256`: the header is `sha256=<hex HMAC-SHA256 of the exact body>`; with a
`timestamp_header`, that header carries Unix seconds and the HMAC covers `<timestamp>.<body>`,
and a timestamp missing or further than `tolerance` from now is refused. Another scheme (a
vendor's header format, e.g. Stripe's `t=…,v1=…`) is one small subclass of Scheme registered in
SCHEMES. Every comparison is constant-time; nothing here logs.

Pure standard library, so the Python client signs with the same code (aye_client.verify): it
lives in the client, a distribution of its own that imports nothing of the server, and the
server's external door (ask_api/external.py) and config (bot/config.py) import it from here.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

DEFAULT_TOLERANCE_S = 300.0


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, whatever its case (aiohttp's headers, or a plain dict)."""
    found = headers.get(name)
    if found is not None:
        return found
    wanted = name.lower()
    return next((value for key, value in headers.items() if key.lower() == wanted), None)


@dataclass(frozen=True)
class Verifier:
    """One `[[verifiers]]` entry with its secret read from the environment."""

    name: str
    secret: bytes = field(repr=False)
    header: str
    scheme: Scheme
    timestamp_header: str | None = None
    tolerance_s: float = DEFAULT_TOLERANCE_S

    def verify(self, headers: Mapping[str, str], body: bytes, now: float | None = None) -> bool:
        """Whether `body` with `headers` carries this verifier's signature (and, with a
        timestamp header, a fresh signed timestamp)."""
        return self.scheme.verify(self, headers, body, time.time() if now is None else now)

    def sign(self, body: bytes, timestamp: int | None = None) -> dict[str, str]:
        """The headers that make `body` pass `verify` (for the outside system's side, tests)."""
        return self.scheme.sign(self, body, timestamp)


class Scheme:
    """How a signature header is made and checked; subclasses set `name` and implement both."""

    name: ClassVar[str] = ""

    def verify(self, v: Verifier, headers: Mapping[str, str], body: bytes, now: float) -> bool:
        raise NotImplementedError

    def sign(self, v: Verifier, body: bytes, timestamp: int | None) -> dict[str, str]:
        raise NotImplementedError


class HmacSha256(Scheme):
    """`sha256=<hex HMAC-SHA256>` of the body, or of `<timestamp>.<body>` with a timestamp."""

    name = "hmac-sha256"
    prefix = "sha256="

    def signature(self, secret: bytes, message: bytes) -> str:
        return self.prefix + hmac.new(secret, message, hashlib.sha256).hexdigest()

    def verify(self, v: Verifier, headers: Mapping[str, str], body: bytes, now: float) -> bool:
        given = header(headers, v.header)
        if not given:
            return False
        message = body
        if v.timestamp_header is not None:
            stamp = fresh_timestamp(header(headers, v.timestamp_header), now, v.tolerance_s)
            if stamp is None:
                return False
            message = stamp.encode() + b"." + body
        expected = self.signature(v.secret, message).encode()
        return hmac.compare_digest(expected, given.strip().lower().encode("utf-8", "replace"))

    def sign(self, v: Verifier, body: bytes, timestamp: int | None) -> dict[str, str]:
        if v.timestamp_header is None:
            return {v.header: self.signature(v.secret, body)}
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        return {v.timestamp_header: stamp,
                v.header: self.signature(v.secret, stamp.encode() + b"." + body)}


def fresh_timestamp(text: str | None, now: float, tolerance_s: float) -> str | None:
    """The timestamp header's text when it is plain Unix seconds within `tolerance_s` of now
    (either way: a clock a little ahead is not an attack); None otherwise."""
    if text is None:
        return None
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 12):
        return None
    at = int(text)
    if not math.isfinite(at) or abs(now - at) > tolerance_s:
        return None
    return text


SCHEMES: dict[str, Scheme] = {scheme.name: scheme for scheme in (HmacSha256(),)}
