"""The agent reads its closed ask: recorded once, and a sensitive answer erased by the read
that shows it (the store decides which read wins)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from bot.core import rules
from bot.core.logs import emit
from store import asks as q
from store.models import AskRow

if TYPE_CHECKING:
    from bot.core.asks import Asks

log = logging.getLogger("aye.asks")


async def mark_read(asks: Asks, ask: AskRow) -> bool:
    """The agent has seen its closed ask: record it once, and erase a sensitive answer.

    False when `ask` (as the caller read it) holds a sensitive answer that another read
    erased first: the caller must not show it. The store decides which read wins."""
    erase = _erasable(ask)
    if ask.status == rules.OPEN or (ask.read_at is not None and not erase):
        return True
    now = asks.clock.now()
    values: dict[str, Any] = {"read_at": now}
    if erase:
        values.update(answer_value=None, answer_option=None, answer_note=None, erased=True)
    async with asks.store.write() as conn:
        won = await q.mark_read(conn, ask.seq, values)
        if won:
            await q.add_history(conn, ask.seq, now, "read", {"erased": True} if erase else {})
    if erase and won:
        await asks.store.checkpoint()
        emit(log, "ask.erased", id=ask.id, ref=rules.ref(ask))
    return won or not erase


def read_later(asks: Asks, ask: AskRow, background: set[asyncio.Task[None]]) -> None:
    """Record the agent's read after its response: off the wake path. A sensitive answer is
    erased before the response instead (mark_read), so a crash cannot leave it behind."""
    if ask.status == rules.OPEN or ask.read_at is not None:
        return
    task = asyncio.create_task(_read_quietly(asks, ask))
    background.add(task)
    task.add_done_callback(background.discard)


async def _read_quietly(asks: Asks, ask: AskRow) -> None:
    try:
        await asks.mark_read(ask)
    except Exception:  # a missed 'read' entry must not surface as an error anywhere
        log.warning("could not record a read ask=%s", ask.id)


def _erasable(ask: AskRow) -> bool:
    return bool(ask.sensitive and ask.status == rules.ANSWERED and not ask.erased)
