"""A form field's bounds in words, as the CLI and GitHub's answer guide both write them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def between(low: Any, high: Any, unit: str = "", *, shown: Callable[[Any], str] = str,
            lead: str = "") -> str:
    """"1 to 5", "at least 1", "at most 5", or "" when the field has no bound.

    Each bound is written by `shown` (the CLI passes its terminal-safe `line`), `unit` follows
    it, and `lead` goes before a range of both ("from ", as GitHub's answer guide writes it).
    """
    if low is not None and high is not None:
        return f"{lead}{shown(low)} to {shown(high)}{unit}"
    if low is not None:
        return f"at least {shown(low)}{unit}"
    if high is not None:
        return f"at most {shown(high)}{unit}"
    return ""
