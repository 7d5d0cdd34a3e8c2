"""The one Retry-After parser the surfaces share (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def retry_after(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds from a Retry-After header (any case; one value or a list of them), or None
    when there is none or it is not a number of seconds."""
    for name, value in dict(headers or {}).items():
        if name.lower() == "retry-after":
            first = value[0] if isinstance(value, list) and value else value
            try:
                return max(float(first), 0.0)
            except (TypeError, ValueError):
                return None
    return None
