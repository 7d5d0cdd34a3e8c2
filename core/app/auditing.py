"""Reading the audit trail: the chain every change appends to (core/app/change.py,
store/chain.py), a page at a time; its head, signed with the receipts' key (`GET
/v1/audit/head`, and the log at an interval) so that a copy kept outside shows a tail deleted
or rewritten later; and a walk of the whole chain that names the first entry that does not
match."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from core.app.parts import Parts
from core.domain import refs, replay
from core.domain.receipts import ALG
from store import audit, chain

PAGE = 1000
HEAD_TYP = "aye-audit-head+jwt"
# A compact JWS (header.payload.signature), found in a file that holds it alone or in a line
# of aye's log (text or JSON) that carries it.
COMPACT_JWS = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
HASH = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class Head:
    """The chain's newest entry (seq 0 and 64 zeros for an empty chain), signed."""

    seq: int
    hash: str
    jws: str


async def head(parts: Parts) -> Head:
    """The chain's head now, as a compact JWS (`typ` aye-audit-head+jwt, the receipts' key)
    of `{"iss", "seq", "hash", "iat"}`."""
    import jwt  # PyJWT and cryptography: loaded when a head is first signed

    async with parts.store.read() as conn:
        seq, last = await audit.head(conn, serialize=False)
    hashed = last or chain.GENESIS
    claims = {"iss": parts.keys.issuer, "seq": seq, "hash": hashed, "iat": int(parts.clock.now())}
    key = await parts.keys.signer()
    signed = jwt.encode(claims, key.private, algorithm=ALG,
                        headers={"typ": HEAD_TYP, "kid": key.kid})
    return Head(seq, hashed, signed)


class UnusableHead(Exception):
    """The saved head cannot be read as one (not a JWS, not a head): a usage error."""


class ForgedHead(Exception):
    """The saved head's signature does not verify with any key of the store."""


def saved_head(text: str, public_keys: list[dict[str, Any]]) -> tuple[int, str]:
    """The seq and hash of a head saved earlier (the JWS as served, or a log line holding
    one), once its signature verifies with one of `public_keys` (the store's JWKS)."""
    import jwt

    found = COMPACT_JWS.findall(text)
    if len(found) != 1:
        raise UnusableHead("it holds no signed head" if not found else
                           f"it holds {len(found)} signed heads: keep the one to check")
    try:
        header = jwt.get_unverified_header(found[0])
    except jwt.PyJWTError:
        raise UnusableHead("it holds no signed head") from None
    if header.get("typ") != HEAD_TYP:
        raise UnusableHead(f"it is not an audit head (typ {header.get('typ')!r})")
    jwk = next((k for k in public_keys if k.get("kid") == header.get("kid")), None)
    try:
        if jwk is None:
            raise jwt.InvalidSignatureError
        claims = jwt.decode(found[0], jwt.PyJWK(jwk).key, algorithms=[ALG],
                            options={"verify_iat": False})
    except jwt.InvalidSignatureError:
        raise ForgedHead("its signature does not verify with any of the store's keys "
                         "(a forged head, or another aye's)") from None
    except jwt.PyJWTError as exc:
        raise UnusableHead(f"it cannot be read ({exc.__class__.__name__})") from None
    seq, hashed = claims.get("seq"), claims.get("hash")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0 or not (
            isinstance(hashed, str) and HASH.match(hashed)):
        raise UnusableHead("its seq or hash is not one of a chain's")
    return seq, hashed


async def page(parts: Parts, after: int, limit: int) -> tuple[list[dict[str, Any]], int | None]:
    """The chain's entries after seq `after`, at most `limit`, and the seq to read on from
    (None once the chain's end is reached)."""
    async with parts.store.read() as conn:
        rows = await audit.entries(conn, after, limit + 1)
    more = len(rows) > limit
    found = [audit.as_entry(row) for row in rows[:limit]]
    return found, (found[-1]["seq"] if more and found else None)


async def walk(store: Any) -> AsyncIterator[dict[str, Any]]:
    """Every entry of the chain from the first, read a page at a time from `store`."""
    after = 0
    while True:
        async with store.read() as conn:
            rows = await audit.entries(conn, after, PAGE)
        for row in rows:
            yield audit.as_entry(row)
        if len(rows) < PAGE:
            return
        after = int(rows[-1]["chain_seq"])


async def verify(store: Any) -> chain.Checked:
    """Recompute the chain from `store`: every hash and link, and no history entry left out."""
    return (await report(store)).checked


@dataclass(frozen=True, slots=True)
class Verified:
    """What `aye audit verify` found: the chain's walk, why a head saved earlier is not held
    (None when it is, or none was given), and each ask whose row contradicts its history."""

    checked: chain.Checked
    head: str | None = None
    asks: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.checked.broken_at is None and self.head is None and not self.asks


async def report(store: Any, saved: tuple[int, str] | None = None) -> Verified:
    """The chain recomputed, held to a head saved earlier (`saved`: its seq and hash), and
    every ask's row held to its replayed history, all as of one moment of the store."""
    async with audit.snapshot(store) as conn:
        entries = [audit.as_entry(row) for row in await _all(audit.entries, conn, "chain_seq")]
        loose = await audit.unchained(conn)
        rows = await _all(audit.asks_after, conn, "seq")
    checked = chain.check(entries)
    if checked.broken_at is None and loose:
        checked = chain.Checked(checked.count, checked.head, checked.count + 1,
                                f"{loose} history entries are in no place of the chain")
    held = None if saved is None else chain.holds(entries, *saved)
    return Verified(checked, held, tuple(contradicted(rows, entries)))


async def _all(read: Any, conn: Any, key: str) -> list[dict[str, Any]]:
    """Every row `read` gives, a page at a time, in one transaction."""
    found: list[dict[str, Any]] = []
    while True:
        rows = await read(conn, int(found[-1][key]) if found else 0, PAGE)
        found += rows
        if len(rows) < PAGE:
            return found


def contradicted(rows: list[dict[str, Any]], entries: list[dict[str, Any]]) -> list[str]:
    """`ref: why` for each ask whose row contradicts its history in the chain."""
    by_ask: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        by_ask.setdefault(str(entry.get("ask")), []).append(entry)
    said = []
    for row in rows:
        found = replay.contradictions(row, by_ask.get(str(row["id"]), []))
        if found:
            ref = refs.ref_for(int(row["seq"]), str(row["kind"]), bool(row.get("ref_base36")))
            said.append(f"{ref}: {'; '.join(found)}")
    return said
