"""The inbox's finding queries: how many asks are open, and the asks whose words, ref or agent
match what a person typed. Callers pass the transaction; the inbox narrows a person's exactly."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, Text, cast, func, or_, select

from store.asks import ASKS, OPEN, A, _all, named_by
from store.db import Conn
from store.models import AskRow

LIKE_ESCAPE = "\\"


def _naming(names: list[str]) -> ColumnElement[bool]:
    """As store.asks.page_naming: a candidate filter on the responders' JSON text."""
    def naming(column: Any) -> Any:
        folded = func.lower(cast(column, Text))
        return or_(*(folded.like(f'%"{name.lower()}"%') for name in names))

    return or_(naming(A.responders), naming(A.escalate_responders))


async def count_open(conn: Conn) -> int:
    """Every open ask (the operator's count)."""
    found = await conn.execute(select(func.count()).select_from(ASKS).where(A.status == OPEN))
    return int(found.scalar_one())


async def open_naming(conn: Conn, names: list[str], limit: int) -> list[AskRow]:
    """The open asks that may name one of `names` (candidates), at most `limit`."""
    query = select(ASKS).where(A.status == OPEN, _naming(names))
    return await _all(conn, query.order_by(A.seq.desc()).limit(limit))


def _contains(column: Any, words: str) -> Any:
    escaped = words.lower().replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
    escaped = escaped.replace("%", LIKE_ESCAPE + "%").replace("_", LIKE_ESCAPE + "_")
    return func.lower(column).like(f"%{escaped}%", escape=LIKE_ESCAPE)


async def page_matching(
    conn: Conn, words: str, ref: tuple[str, Iterable[tuple[int, bool]]] | None,
    names: list[str] | None,
    status: str | None, limit: int, before: int | None,
) -> list[AskRow]:
    """Newest first: the asks whose question, context, operation or agent holds `words` (case
    folded), or whose ref is `ref` (its kind and candidates, as store.asks.named_by takes
    them); only candidates naming `names` when given."""
    matches = [_contains(A.question, words), _contains(A.context, words),
               _contains(A.operation, words), _contains(A.agent, words)]
    if ref is not None:
        matches.append(named_by(*ref))
    query = select(ASKS).where(or_(*matches))
    if names is not None:
        query = query.where(_naming(names))
    if status is not None:
        query = query.where(A.status == status)
    if before is not None:
        query = query.where(A.seq < before)
    return await _all(conn, query.order_by(A.seq.desc()).limit(limit))
