"""URL-safe base64 without padding, as the inbox's signed cookies carry their parts (flash.py,
passage.py)."""

from __future__ import annotations

import base64
import binascii


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes | None:
    """The bytes of `text`, or None when it is not URL-safe base64."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
