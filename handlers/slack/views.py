"""Modal submissions: an answer (text, multi, form), and the reason for refusing an approval
(module-level listeners, like actions.py).

A submission is checked and answered BEFORE its ack: a `response_action: errors` can only be
sent in the ack, and it is the one way to keep a refusal where the person is, under the field
that did not fit (nothing is recorded then) or, for an answer the store refused (already
answered, expired, not theirs), under the first input. The store calls are all that runs
before the ack: Slack waits 3 s for it. The "Thanks" goes to the thread after the ack.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import AskRow
from core.domain import formats, vocabulary
from core.domain.ask import is_external
from core.domain.forms import Misfit
from core.domain.logline import emit
from handlers.slack import buttons, modals, replies, submitted
from handlers.slack.answer_taking import (
    answer_as,
    asks_of,
    outsider,
    refuse_external,
    refuse_outsider,
    tell,
    where_posted,
)
from handlers.slack.settings import SURFACE
from handlers.slack.text import clip

log = logging.getLogger("aye.slack")

ERROR_MAX = 2000  # an error shown under a field: a misfit's words, a reason


@dataclass(frozen=True, slots=True)
class Answer:
    """What a modal gives: the answer for formats.fit, and a note beside it."""

    given: Any
    note: str | None = None


def _answer(ask: AskRow, values: dict[str, Any]) -> Answer:
    return Answer(submitted.given(ask, values))


def _refusal(ask: AskRow, values: dict[str, Any]) -> Answer:
    if ask.kind != vocabulary.APPROVAL:
        raise Misfit(replies.STALE_MODAL_ERROR)
    return Answer(vocabulary.REFUSE, submitted.reason(values))


async def _errors(ack: AsyncAck, block: str, words: str) -> None:
    await ack(response_action="errors", errors={block: clip(words, ERROR_MAX)})


async def _submit(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext, read: Callable[[AskRow, dict[str, Any]], Answer],
) -> None:
    asks = asks_of(context)
    user_id = body["user"]["id"]
    ask_id = str(view.get("private_metadata", ""))
    ask = await asks.find(ask_id) if buttons.is_ask_id(ask_id) else None
    first = submitted.first_input(view)
    if ask is None:
        emit(log, "slack.unknown_ask", level=logging.WARNING, user=user_id)
        await _errors(ack, first, replies.UNKNOWN_ASK_ERROR)
        return
    if outsider(body, context):  # another organisation's member (Slack Connect): recorded
        await refuse_outsider(asks, ask, body)
        await _errors(ack, first, replies.OUTSIDER_ERROR)
        return
    if is_external(ask):  # no modal answers an external ask: refused, recorded
        await refuse_external(asks, ask, user_id)
        await _errors(ack, first, replies.external_error(ask))
        return
    try:
        answer = read(ask, view["state"]["values"])
        formats.fit(ask, answer.given)  # a misfit is said under its field; nothing recorded
    except Misfit as misfit:
        await _errors(ack, submitted.error_block(view, misfit), misfit.words)
        return
    result, words = await answer_as(asks, ask, user_id, answer.given, answer.note)
    if not result.taken:
        await _errors(ack, first, replies.not_taken_error(result))
        return
    await ack()
    # A modal has no channel: tell them in the thread where the question was posted.
    where = where_posted(await asks.post_location(ask, SURFACE))
    await tell(client, where, user_id, words)


async def submit_answer(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await _submit(ack, body, view, client, context, _answer)


async def submit_refusal(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    await _submit(ack, body, view, client, context, _refusal)


def register(app: AsyncApp) -> None:
    app.view(modals.ANSWER_CALLBACK)(submit_answer)
    app.view(modals.REFUSE_CALLBACK)(submit_refusal)
