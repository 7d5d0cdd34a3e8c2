"""Button presses on aye's messages: an option (approve/refuse too), or "Answer" for free text."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot import asks as rules
from bot.broker import Broker
from bot.responders import Responder, admitted
from handlers.slack import blocks
from handlers.slack.answering import SURFACE, answer_as, tell, where_pressed

OPTION_PRESS = re.compile(rf"^{blocks.OPTION_ACTION}\d+$")
ANY_AYE_ACTION = re.compile(rf"^{blocks.ACTION_PREFIX}")


def register(app: AsyncApp, broker: Broker) -> None:
    async def press_option(
        ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        user_id = body["user"]["id"]
        where = where_pressed(body)
        parsed = blocks.parse_option_value(str(action.get("value", "")))
        ask = await broker.find(parsed[0]) if parsed else None
        if parsed is None or ask is None:
            await tell(client, where, user_id, blocks.UNKNOWN_ASK_REPLY)
            return
        number = parsed[1]
        if not ask.options or not 1 <= number <= len(ask.options):
            await tell(client, where, user_id, blocks.STALE_BUTTON_REPLY)
            return
        # The option's text, not its number: with options like "1", "3", "5", the text "3"
        # means the option "3" (see bot.asks.match_answer).
        _, words = await answer_as(broker, ask, user_id, ask.options[number - 1])
        await tell(client, where, user_id, words)

    async def open_answer_form(
        ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        user_id = body["user"]["id"]
        where = where_pressed(body)
        ask_id = str(action.get("value", ""))
        ask = await broker.find(ask_id) if blocks.is_ask_id(ask_id) else None
        if ask is None:
            await tell(client, where, user_id, blocks.UNKNOWN_ASK_REPLY)
            return
        ref = broker.ref(ask)
        # Said before the form opens, so nobody types an answer that cannot be taken.
        if ask.status != rules.OPEN:
            await tell(client, where, user_id, blocks.not_open_reply(ask, ref))
            return
        if not admitted(Responder(SURFACE, user_id), broker.allowed(ask)):
            await tell(client, where, user_id, blocks.not_yours_reply(ref))
            return
        await client.views_open(trigger_id=body["trigger_id"], view=blocks.answer_modal(ask, ref))

    async def ack_only(ack: AsyncAck) -> None:
        # A press on an aye button this version does not know (an older message): without an
        # ack, Slack shows the person an error.
        await ack()

    app.action(OPTION_PRESS)(press_option)
    app.action(blocks.ANSWER_ACTION)(open_answer_form)
    app.action(ANY_AYE_ACTION)(ack_only)  # last: bolt runs the first listener that matches
