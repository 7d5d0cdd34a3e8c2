"""The limit on failed sign-ins: FAILURES_PER_MINUTE wrong tokens a minute per client address;
past it a wrong token is answered 429 with Retry-After.

Only failures count, and only after the token was checked: the right token signs in whatever
this address (or anyone behind the same proxy) got wrong before, so nobody can lock the
operator out by guessing. The limit thus slows a guessing client down and keeps its noise
small; what makes guessing hopeless is the token's size (the generated one has 256 bits).

Counted in this process's memory (bounded), not in the store: a flood of wrong tokens must not
turn into a flood of writes. With several processes each counts its own.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import deque
from collections.abc import Callable

from cachetools import TTLCache

FAILURES_PER_MINUTE = 10
WINDOW_S = 60.0
MAX_ADDRESSES = 10_000  # addresses remembered at once; the least recent go first


def client_address(peer: str | None) -> str:
    """Whose failure it is: the connection's peer. aye has no trusted-proxy setting, so
    X-Forwarded-For is not believed (anyone could send one); behind a proxy every client
    shares its address. An IPv6 peer counts by its /64, which one client usually holds whole."""
    if not peer:
        return "unknown"
    try:
        ip = ipaddress.ip_address(peer)
    except ValueError:
        return peer
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class SignInFailures:
    """The failed sign-ins of the last minute, per client address."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        # Each address's latest failures, at most FAILURES_PER_MINUTE of them; an address
        # that failed nothing for a minute is forgotten.
        self._seen: TTLCache[str, deque[float]] = TTLCache(MAX_ADDRESSES, ttl=WINDOW_S, timer=now)

    def fail(self, address: str) -> int | None:
        """Count one failure from `address`. None while it is within the limit; past it, the
        whole seconds until its next failure would be within it again."""
        now = self.now()
        times = self._seen.get(address) or deque(maxlen=FAILURES_PER_MINUTE)
        while times and times[0] <= now - WINDOW_S:
            times.popleft()
        over = len(times) >= FAILURES_PER_MINUTE
        times.append(now)  # a failure past the limit counts too: guessing on keeps it limited
        self._seen[address] = times
        if not over:
            return None
        return max(1, math.ceil(times[0] + WINDOW_S - now))
