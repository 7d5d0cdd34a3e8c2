"""What the inbox finds for whoever is signed in: how many asks wait for them (its title), and
the asks matching a search (`?q=`: words of the question, context or operation, a ref, an
agent). The store finds candidates; a person's are each checked exactly, as in reading.page_for."""

from __future__ import annotations

from core.app import reading
from core.app.parts import Parts
from core.domain import refs
from core.domain.responders import Responder
from store import search as q
from store.db import Conn
from store.models import AskRow

# A person's open asks are counted one by one (each checked exactly): past this, "N+".
COUNT_LIMIT = 1000
MAX_WORDS = 200  # what a search box takes


async def open_count(parts: Parts, who: Responder | None) -> tuple[int, bool]:
    """(how many asks are open for `who`, the operator when None; whether there are more)."""
    async with parts.store.read() as conn:
        if who is None:
            return await q.count_open(conn), False
        rows = await q.open_naming(conn, reading._names(parts, who), COUNT_LIMIT + 1)
    mine = [row for row in rows if reading.may_answer(parts, row, who)]
    return min(len(mine), COUNT_LIMIT), len(rows) > COUNT_LIMIT


async def search(
    parts: Parts, who: Responder | None, words: str, status: str | None, limit: int,
    cursor: int | None,
) -> tuple[list[AskRow], int | None]:
    """A page of the asks matching `words` that `who` may see, newest first, and the next
    page's cursor (None on the last)."""
    words = words.strip()[:MAX_WORDS]
    parsed = refs.parse_ref(words)
    ref = None if parsed is None else (parsed.kind, parsed.candidates)
    names = None if who is None else reading._names(parts, who)

    async def candidates(conn: Conn, size: int, before: int | None) -> list[AskRow]:
        return await q.page_matching(conn, words, ref, names, status, size, before)

    return await reading.checked_page(parts, candidates, who, limit, cursor)
