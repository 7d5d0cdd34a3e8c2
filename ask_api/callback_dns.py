"""The callbacks' resolver: a callback connects only to an address it may reach
(core.domain.callback_urls.may_reach), and to the very address that was checked.

Checking a name's addresses and then letting the HTTP client look the name up again would let a
DNS server answer the check with a public address and the connection with 127.0.0.1 (DNS
rebinding). So the check is the lookup: aiohttp's connector asks this resolver, which resolves
once, keeps the allowed addresses, and hands aiohttp those and only those to connect to. A host
that is a literal address never reaches a resolver; the match has already made it equal to the
literal its prefix names.
"""

from __future__ import annotations

import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from core.domain.callback_urls import may_reach

BLOCKED = "blocked_address"


class BlockedAddress(OSError):
    """Every address the callback's host resolved to is one a callback may not reach.
    An OSError, so aiohttp hands it back inside its ClientConnectorDNSError."""


class GuardedResolver(AbstractResolver):
    """Resolves with `lookup` (getaddrinfo in a thread by default; a fake in tests) and
    returns only the addresses a callback to that host may reach."""

    def __init__(self, lookup: AbstractResolver | None = None) -> None:
        self.lookup = lookup

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if self.lookup is None:
            self.lookup = ThreadedResolver()  # it needs the running loop: made on first use
        name = host.rstrip(".").lower()
        found = await self.lookup.resolve(host, port, family)
        kept = [result for result in found if _allowed(name, result["host"])]
        if not kept:
            raise BlockedAddress(f"{BLOCKED}: no address of the callback's host may be reached")
        return kept

    async def close(self) -> None:
        if self.lookup is not None:
            await self.lookup.close()


def _allowed(host: str, address: str) -> bool:
    try:
        return may_reach(host, ipaddress.ip_address(address))
    except ValueError:
        return False  # not an address at all: nothing to connect to that was checked
