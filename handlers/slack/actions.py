"""Button presses on aye's messages: an option or Approve, Yes / No / Continue, "Answer" (a
modal by the ask's format) and an approval's Refuse (a modal asking why).

Listeners are module-level functions, registered by `register(app)`; they find the core in
bolt's context (handlers.slack.answer_taking.asks_of), so tests can call them directly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import AskRow
from core.domain import answering, formats, refs, vocabulary
from core.domain.ask import is_external
from core.domain.responders import Responder, admitted
from handlers.slack import buttons, modals, replies
from handlers.slack.answer_taking import (
    answer_as,
    asks_of,
    outsider,
    refuse_external,
    refuse_outsider,
    tell,
    where_pressed,
)
from handlers.slack.settings import SURFACE

OPTION_PRESS = re.compile(rf"^{buttons.OPTION_ACTION}\d+$")
WORD_PRESS = re.compile(rf"^{buttons.WORD_ACTION}[a-z]+$")
ANY_AYE_ACTION = re.compile(rf"^{buttons.ACTION_PREFIX}")
# Which words a format's buttons answer with.
FORMAT_WORDS = {fmt: {word for _, word, _ in choices} for fmt, choices in buttons.WORDS.items()}


async def _pressed_on(
    ask_id: str | None, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> AskRow | None:
    """The ask a button names, or None once the presser was told why not: aye does not know
    it, the presser is another organisation's member (Slack Connect), who never answers, or
    an outside system answers it (an external ask: its message has no buttons, so the press
    came from elsewhere, and is refused and recorded)."""
    asks = asks_of(context)
    user_id = body["user"]["id"]
    ask = await asks.find(ask_id) if ask_id else None
    if ask is None:
        await tell(client, where_pressed(body), user_id, replies.UNKNOWN_ASK_REPLY)
        return None
    if outsider(body, context):
        await tell(client, where_pressed(body), user_id, await refuse_outsider(asks, ask, body))
        return None
    if is_external(ask):
        await tell(client, where_pressed(body), user_id, await refuse_external(asks, ask, user_id))
        return None
    return ask


async def _answer_pressed(
    ask: AskRow, given: str, body: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    user_id = body["user"]["id"]
    _, words = await answer_as(asks_of(context), ask, user_id, given)
    await tell(client, where_pressed(body), user_id, words)


async def press_option(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await ack()
    parsed = buttons.parse_option_value(str(action.get("value", "")))
    ask = await _pressed_on(parsed[0] if parsed else None, body, client, context)
    if parsed is None or ask is None:
        return
    number = parsed[1]
    choice = ask.kind == vocabulary.APPROVAL or formats.format_of(ask) == formats.CHOICE
    if not choice or not ask.options or not 1 <= number <= len(ask.options):
        await tell(client, where_pressed(body), body["user"]["id"], replies.STALE_BUTTON_REPLY)
        return
    # The option's text, not its number: with options like "1", "3", "5", the text "3"
    # means the option "3" (see core.domain.formats.pick).
    await _answer_pressed(ask, ask.options[number - 1], body, client, context)


async def press_word(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Yes / No on a confirm, Continue on an ack: the button's word is the answer."""
    await ack()
    parsed = buttons.parse_word_value(str(action.get("value", "")))
    ask = await _pressed_on(parsed[0] if parsed else None, body, client, context)
    if parsed is None or ask is None:
        return
    word = parsed[1]
    if word not in FORMAT_WORDS.get(formats.format_of(ask), set()):
        await tell(client, where_pressed(body), body["user"]["id"], replies.STALE_BUTTON_REPLY)
        return
    await _answer_pressed(ask, word, body, client, context)


Build = Callable[[AskRow, str], dict[str, Any] | None]


async def _open_modal(
    body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext, build: Build,
) -> None:
    """Open the modal `build` makes for the pressed ask, once it can be answered by the
    presser; otherwise say why, before anyone types an answer that cannot be taken."""
    ask_id = str(action.get("value", ""))
    ask = await _pressed_on(ask_id if buttons.is_ask_id(ask_id) else None, body, client, context)
    if ask is None:
        return
    user_id = body["user"]["id"]
    where = where_pressed(body)
    ref = refs.ref(ask)
    if ask.status != vocabulary.OPEN:
        await tell(client, where, user_id, replies.not_open_reply(ask, ref))
        return
    if not admitted(Responder(SURFACE, user_id), answering.allowed(ask)):
        await tell(client, where, user_id, replies.not_yours_reply(ref))
        return
    view = build(ask, ref)
    if view is None:
        await tell(client, where, user_id, replies.STALE_BUTTON_REPLY)
        return
    await client.views_open(trigger_id=body["trigger_id"], view=view)


async def open_answer_form(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await ack()
    await _open_modal(body, action, client, context, modals.answer_modal)


async def open_refusal(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await ack()
    await _open_modal(body, action, client, context, modals.refusal_modal)


async def ack_only(ack: AsyncAck) -> None:
    # A press on an aye button this version does not know (an older message): without an
    # ack, Slack shows the person an error.
    await ack()


def register(app: AsyncApp) -> None:
    app.action(OPTION_PRESS)(press_option)
    app.action(WORD_PRESS)(press_word)
    app.action(buttons.ANSWER_ACTION)(open_answer_form)
    app.action(buttons.REFUSE_ACTION)(open_refusal)
    app.action(ANY_AYE_ACTION)(ack_only)  # last: bolt runs the first listener that matches
