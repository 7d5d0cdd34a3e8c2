"""Taking an answer from a Slack user, and telling that user alone how it went."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.core import rules
from bot.core.asks import Asks
from bot.core.logs import emit
from bot.core.responders import Responder
from handlers.slack import blocks
from handlers.slack.plugin import SURFACE
from store.models import AskRow

log = logging.getLogger("aye.slack")

# Where the listeners find the core: put in bolt's context by one middleware (see use_asks).
ASKS = "aye_asks"


@dataclass(frozen=True, slots=True)
class Where:
    """A channel, and a thread in it (None: the channel itself, or a new thread at its top)."""

    channel: str
    thread_ts: str | None = None


def asks_of(context: AsyncBoltContext) -> Asks:
    asks = context.get(ASKS)
    assert isinstance(asks, Asks), "the middleware of handlers.slack.surface puts it there"
    return asks


def where_pressed(body: dict[str, Any]) -> Where | None:
    """The channel and thread of the message whose button was pressed."""
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    if not channel:
        return None
    # A reply in a thread carries its thread_ts; a top-level post is told at channel level.
    return Where(channel, (body.get("message") or {}).get("thread_ts"))


def where_posted(location: dict[str, Any] | None) -> Where | None:
    """The thread of aye's own post of an ask (see Posts), for replies from the modal."""
    if not location:
        return None
    return Where(location["channel"], location.get("thread_ts"))


async def tell(client: AsyncWebClient, where: Where | None, user_id: str, text: str) -> None:
    """An ephemeral line to one person. `respond()` is not used: it ignores base_url,
    the shared session and the retry handlers, and does not raise on failure."""
    if where is None:
        emit(log, "slack.untold", level=logging.WARNING, user=user_id, why="no channel")
        return
    await client.chat_postEphemeral(
        channel=where.channel, user=user_id, text=text, thread_ts=where.thread_ts
    )


async def answer_as(asks: Asks, ask: AskRow, user_id: str, text: str) -> tuple[bool, str]:
    """Answer `ask` as `slack:<user_id>`; (taken, the words to tell them)."""
    result = await asks.answer(ask, Responder(SURFACE, user_id), text, None, surface=SURFACE)
    ref = rules.ref(ask)
    emit(log, "slack.answer", id=ask.id, ref=ref, user=user_id, taken=result.taken,
         reason=result.reason)
    return result.taken, blocks.reply(ask, ref, result)
