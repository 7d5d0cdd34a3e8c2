"""Per-agent limits, as rules: open asks at once (`max_open`) and asks, calls and starts a
minute (`asks_per_minute`). What is past them is decided here; the counting itself is the
store's, in the change's transaction (core/app/counting.py), so that it holds across processes."""

from __future__ import annotations

import math

WINDOW_S = 60
OPEN_RETRY_S = 10  # an open ask may close any moment: come back soon
TOO_MANY_OPEN, RATE_LIMITED = "too_many_open_asks", "rate_limited"


class Limited(Exception):
    """Refused by a limit: the error code, when to try again, and why in words."""

    def __init__(self, code: str, retry_after: int, message: str) -> None:
        super().__init__(message)
        self.code, self.retry_after, self.message = code, retry_after, message


def window(now: float) -> int:
    """The minute `now` counts in (epoch seconds at its start)."""
    return int(now // WINDOW_S) * WINDOW_S


def check_rate(hits: int, per_minute: int, now: float) -> None:
    """Limited when `hits` this minute pass `per_minute`: retry once the minute is over."""
    if hits > per_minute:
        retry = max(1, math.ceil(window(now) + WINDOW_S - now))
        raise Limited(RATE_LIMITED, retry, f"more than {per_minute} asks, calls and starts a minute")


def check_open(now_open: int, max_open: int) -> None:
    """Limited when `now_open` asks would pass `max_open`."""
    if now_open > max_open:
        raise Limited(TOO_MANY_OPEN, OPEN_RETRY_S,
                      f"{max_open} asks are open already: wait for some to close")
