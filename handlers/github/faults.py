"""What to do when a GitHub call fails: wait as told, retry with backoff, or give up (pure)."""

from __future__ import annotations

from dataclasses import dataclass

import gidgethub

from handlers.retry import retry_after

# GitHub's advice for a secondary rate limit that names no Retry-After: wait at least a minute.
SECONDARY_DEFAULT_WAIT_S = 60.0
MIN_WAIT_S = 1.0
RATE_LIMIT_STATUSES = (403, 429)


@dataclass(frozen=True, slots=True)
class Disposition:
    """`wait` seconds as GitHub asked; `retry` with the outbox's backoff; or neither: give up."""

    wait: float | None = None
    retry: bool = False
    reauth: bool = False

    @property
    def give_up(self) -> bool:
        return self.wait is None and not self.retry


def disposition(exc: gidgethub.HTTPException, now: float) -> Disposition:
    if isinstance(exc, gidgethub.RateLimitExceeded):
        # The primary limit is spent: nothing works until it resets.
        limit = exc.rate_limit
        reset = limit.reset_datetime.timestamp() if limit is not None else now
        return Disposition(wait=max(reset - now, MIN_WAIT_S))
    if isinstance(exc, gidgethub.GitHubBroken):
        return Disposition(retry=True)
    status = int(exc.status_code)
    if status >= 500:
        return Disposition(retry=True)
    wait = retry_after(exc.headers)
    if status in RATE_LIMIT_STATUSES and wait is not None:
        return Disposition(wait=wait)
    if status == 429 or (status == 403 and "rate limit" in str(exc).lower()):
        return Disposition(wait=SECONDARY_DEFAULT_WAIT_S)
    if status == 401:
        # A token revoked or expired early: mint a fresh one and try again.
        return Disposition(retry=True, reauth=True)
    # 403 without a rate limit (missing permission), 404 (deleted comment, unknown repo),
    # 410, 422: retrying cannot help.
    return Disposition()

