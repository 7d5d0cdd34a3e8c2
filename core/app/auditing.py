"""Reading the audit trail: the chain every change appends to (core/app/change.py,
store/chain.py), a page at a time, and a walk of the whole chain that names the first entry
that does not match."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from core.app.parts import Parts
from store import audit, chain

PAGE = 1000


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
    entries = [entry async for entry in walk(store)]
    checked = chain.check(entries)
    if checked.broken_at is None:
        async with store.read() as conn:
            loose = await audit.unchained(conn)
        if loose:
            return chain.Checked(checked.count, checked.head, checked.count + 1,
                                 f"{loose} history entries are in no place of the chain")
    return checked
