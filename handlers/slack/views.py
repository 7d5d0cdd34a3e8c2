"""The free-text answer modal's submission (a module-level listener, like actions.py)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.core import posts
from bot.core.logs import emit
from handlers.slack import blocks, replies
from handlers.slack.answering import (
    answer_as,
    asks_of,
    outsider,
    refuse_outsider,
    tell,
    where_posted,
)
from handlers.slack.plugin import SURFACE

log = logging.getLogger("aye.slack")


async def submit_answer(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    text = blocks.answer_text(view["state"]["values"])
    refused = outsider(body, context)
    # The refusals shown in the form itself need no lookup, so they are the ack. A person of
    # another organisation is refused there, and the refusal then recorded below.
    if refused:
        await ack(response_action="errors", errors={blocks.ANSWER_BLOCK: replies.OUTSIDER_ERROR})
    elif not text.strip():
        await ack(response_action="errors", errors={blocks.ANSWER_BLOCK: replies.EMPTY_ANSWER_ERROR})
        return
    else:
        await ack()
    asks = asks_of(context)
    user_id = body["user"]["id"]
    ask_id = str(view.get("private_metadata", ""))
    ask = await asks.find(ask_id) if blocks.is_ask_id(ask_id) else None
    if ask is None:
        emit(log, "slack.unknown_ask", level=logging.WARNING, user=user_id)
        return
    if refused:  # another organisation's member (Slack Connect): recorded, told in the form
        await refuse_outsider(asks, ask, body)
        return
    # A modal has no channel: tell them in the thread where the question was posted.
    where = where_posted(await posts.post_location(asks, ask, SURFACE))
    _, words = await answer_as(asks, ask, user_id, text)
    await tell(client, where, user_id, words)


def register(app: AsyncApp) -> None:
    app.view(blocks.MODAL_CALLBACK)(submit_answer)
