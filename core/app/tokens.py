"""Generated tokens that every process on one store accepts: the first process to start keeps
each generated token's SHA-256 in the store, and a process may serve with a generated token
only when its hash is the one kept. A token itself never reaches the store."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from store import tokens as q
from store.db import Duplicate, Store

TRIES = 3


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def keep_generated(store: Store, tokens: Mapping[str, str]) -> set[str]:
    """Keep the hash of each of `tokens` (by kind: operator, agent) whose kind has none kept
    yet; the kinds whose token is the one kept (for the others, another process's is)."""
    hashes = {kind: digest(token) for kind, token in tokens.items()}
    for _ in range(TRIES):
        try:
            await q.keep_token_hashes(store, hashes)
            break
        except Duplicate:
            continue  # another process kept one first: keep what is still missing, or read
    kept = await q.token_hashes(store, list(hashes))
    return {kind for kind, mine in hashes.items() if hmac.compare_digest(kept.get(kind, ""), mine)}
