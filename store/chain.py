"""The audit trail: every history entry of every ask, one chain. Each entry carries `seq` (1,
2, 3, … with no gap), `at`, `ask` (the ask's id), `event`, the history entry's other fields,
`prev` (the previous entry's `hash`; 64 zeros for the first) and `hash`: the hex SHA-256 of the
entry's canonical JSON (RFC 8785) without its `hash`. Changing, removing or reordering any
entry breaks every hash or link after it. A sensitive value is never in a history entry, so
never in the chain. Pure functions: the store keeps the chain (history's chain_seq, prev and
hash columns, store/audit.py), the unit of work appends to it (core/app/change.py), revision
0012 chains a store's earlier history, and `aye audit verify` walks it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import rfc8785

GENESIS = "0" * 64
# The entry's own keys: a history detail's field of the same name cannot shadow them.
OWN = ("seq", "at", "ask", "event", "prev", "hash")


def entry(seq: int, at: float, ask: str, event: str, detail: Mapping[str, Any],
          prev: str) -> dict[str, Any]:
    """The chain's entry for one history entry, its `hash` computed. The detail is taken as
    the store gives it back (JSON), so that a walk of the stored chain hashes the same."""
    body = {k: v for k, v in json.loads(json.dumps(detail)).items() if k not in OWN}
    body.update(seq=seq, at=at, ask=ask, event=event, prev=prev)
    body["hash"] = digest(body)
    return body


def digest(body: Mapping[str, Any]) -> str:
    """The hex SHA-256 of the entry's canonical JSON without its `hash`."""
    return hashlib.sha256(rfc8785.dumps({k: v for k, v in body.items() if k != "hash"})).hexdigest()


@dataclass(frozen=True, slots=True)
class Checked:
    """What a walk of the chain found: how many entries, the head's hash, and the first entry
    that does not match (its seq as stored, and why), if any."""

    count: int
    head: str
    broken_at: int | None = None
    why: str | None = None


def check(entries: Iterable[Mapping[str, Any]]) -> Checked:
    """Walk the chain from its first entry: each seq one more than the last, each `prev` the
    last `hash`, each `hash` its content's. Stops at the first entry that does not match."""
    prev, count = GENESIS, 0
    for found in entries:
        seq = found.get("seq")
        if seq != count + 1:
            return Checked(count, prev, seq if isinstance(seq, int) else None,
                           f"expected entry {count + 1}, found {seq} (an entry is missing)")
        if found.get("prev") != prev:
            return Checked(count, prev, seq, "its prev is not the hash of the entry before")
        if digest(found) != found.get("hash"):
            return Checked(count, prev, seq, "its hash does not match its content")
        prev, count = str(found["hash"]), count + 1
    return Checked(count, prev)


def holds(entries: Sequence[Mapping[str, Any]], seq: int, hashed: str) -> str | None:
    """Why the chain `entries` (from the first, in order) no longer holds the entry `seq` with
    hash `hashed`, a head saved earlier; None when it does (the chain is that head, or extends
    it). A tail deleted, or an entry rewritten with every hash after it recomputed, shows here
    though the chain is whole."""
    if seq == 0:
        return None if hashed == GENESIS else "the saved head (entry 0) is not an empty chain's"
    found = entries[seq - 1] if 0 < seq <= len(entries) else None
    if found is None or found.get("seq") != seq:
        found = next((e for e in entries if e.get("seq") == seq), None)
    if found is None:
        last = entries[-1].get("seq") if entries else 0
        return f"the chain no longer holds entry {seq} of the saved head (it ends at {last})"
    if found.get("hash") != hashed:
        return f"entry {seq} is not the one the saved head signed (its hash differs)"
    return None
