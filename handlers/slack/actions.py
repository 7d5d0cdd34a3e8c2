"""Button presses on aye's messages: an option (approve/refuse too), or "Answer" for free text.

Listeners are module-level functions, registered by `register(app)`; they find the core in
bolt's context (handlers.slack.answering.asks_of), so tests can call them directly.
"""

from __future__ import annotations

import re
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.core import answering, rules
from bot.core.responders import Responder, admitted
from handlers.slack import blocks, replies
from handlers.slack.answering import (
    answer_as,
    asks_of,
    outsider,
    refuse_outsider,
    tell,
    where_pressed,
)
from handlers.slack.plugin import SURFACE
from store.models import AskRow

OPTION_PRESS = re.compile(rf"^{blocks.OPTION_ACTION}\d+$")
ANY_AYE_ACTION = re.compile(rf"^{blocks.ACTION_PREFIX}")


async def _pressed_on(
    ask_id: str | None, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> AskRow | None:
    """The ask a button names, or None once the presser was told why not: aye does not know
    it, or the presser is another organisation's member (Slack Connect), who never answers."""
    asks = asks_of(context)
    user_id = body["user"]["id"]
    ask = await asks.find(ask_id) if ask_id else None
    if ask is None:
        await tell(client, where_pressed(body), user_id, replies.UNKNOWN_ASK_REPLY)
        return None
    if outsider(body, context):
        await tell(client, where_pressed(body), user_id, await refuse_outsider(asks, ask, body))
        return None
    return ask


async def press_option(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await ack()
    parsed = blocks.parse_option_value(str(action.get("value", "")))
    ask = await _pressed_on(parsed[0] if parsed else None, body, client, context)
    if parsed is None or ask is None:
        return
    asks = asks_of(context)
    user_id = body["user"]["id"]
    where = where_pressed(body)
    number = parsed[1]
    if not ask.options or not 1 <= number <= len(ask.options):
        await tell(client, where, user_id, replies.STALE_BUTTON_REPLY)
        return
    # The option's text, not its number: with options like "1", "3", "5", the text "3"
    # means the option "3" (see bot.core.rules.match_answer).
    _, words = await answer_as(asks, ask, user_id, ask.options[number - 1])
    await tell(client, where, user_id, words)


async def open_answer_form(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await ack()
    ask_id = str(action.get("value", ""))
    ask = await _pressed_on(ask_id if blocks.is_ask_id(ask_id) else None, body, client, context)
    if ask is None:
        return
    user_id = body["user"]["id"]
    where = where_pressed(body)
    ref = rules.ref(ask)
    # Said before the form opens, so nobody types an answer that cannot be taken.
    if ask.status != rules.OPEN:
        await tell(client, where, user_id, replies.not_open_reply(ask, ref))
        return
    if not admitted(Responder(SURFACE, user_id), answering.allowed(ask)):
        await tell(client, where, user_id, replies.not_yours_reply(ref))
        return
    await client.views_open(trigger_id=body["trigger_id"], view=blocks.answer_modal(ask, ref))


async def ack_only(ack: AsyncAck) -> None:
    # A press on an aye button this version does not know (an older message): without an
    # ack, Slack shows the person an error.
    await ack()


def register(app: AsyncApp) -> None:
    app.action(OPTION_PRESS)(press_option)
    app.action(blocks.ANSWER_ACTION)(open_answer_form)
    app.action(ANY_AYE_ACTION)(ack_only)  # last: bolt runs the first listener that matches
