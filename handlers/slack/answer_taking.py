"""Taking an answer from a Slack user, and telling that user alone how it went.

Only members of aye's own workspace (the team of its bot token, from `auth.test`) and of the
teams listed in `[slack] teams` may answer: in a Slack Connect channel, people of another
organisation press the same buttons as colleagues. Their presses are refused (`not_a_responder`),
whatever the ask's responders, and so is everyone's while aye's own team is not known yet: the
surface only says it cannot vouch for them (`member=False`), the core refuses and records it
(core.domain.answering.judge).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import AnswerResult, AskRow
from core.app.service import Service
from core.domain import refs
from core.domain.answering import Attempt
from core.domain.logline import emit
from core.domain.responders import Responder
from handlers.slack import replies
from handlers.slack.settings import SURFACE

log = logging.getLogger("aye.slack")

# Where the listeners find the core and the teams whose members may answer: put in bolt's
# context by one middleware (SlackSurface._with_asks).
ASKS = "aye_asks"
TEAMS = "aye_teams"


@dataclass(frozen=True, slots=True)
class Where:
    """A channel, and a thread in it (None: the channel itself, or a new thread at its top)."""

    channel: str
    thread_ts: str | None = None


def asks_of(context: AsyncBoltContext) -> Service:
    asks = context.get(ASKS)
    assert isinstance(asks, Service), "the middleware of handlers.slack.surface puts it there"
    return asks


def teams_of(context: AsyncBoltContext) -> frozenset[str]:
    """The teams whose members may answer; none (everyone refused) when not known."""
    teams = context.get(TEAMS)
    return teams if isinstance(teams, frozenset) else frozenset()


def team_of(body: dict[str, Any]) -> str | None:
    """The presser's own team: `user.team_id` (their organisation's, in a Slack Connect
    channel too), else the payload's `team.id`."""
    team = (body.get("user") or {}).get("team_id") or (body.get("team") or {}).get("id")
    return team if isinstance(team, str) and team else None


def outsider(body: dict[str, Any], context: AsyncBoltContext) -> bool:
    """Whether the person of this press or submission may not answer here at all: of another
    team, of no team said, or aye's own team not known yet (fail closed)."""
    team = team_of(body)
    return team is None or team not in teams_of(context)


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


async def answer_as(
    asks: Service, ask: AskRow, user_id: str, given: Any, note: str | None = None
) -> tuple[AnswerResult, str]:
    """Answer `ask` as `slack:<user_id>` with `given` (a button's word or option, or what a
    modal gives); the result, and the words to tell them."""
    result = await asks.answer(ask, Attempt(Responder(SURFACE, user_id), SURFACE), given, note)
    ref = refs.ref(ask)
    emit(log, "slack.answer", id=ask.id, ref=ref, user=user_id, taken=result.taken,
         reason=result.reason)
    return result, replies.reply(ask, ref, result)


async def refuse_outsider(asks: Service, ask: AskRow, body: dict[str, Any]) -> str:
    """A person of another organisation tried to answer `ask`: answered through the core as
    not vouched for (`member=False`), which refuses it as not a responder and records it in
    the ask's history; the words to tell them. Nothing of what they pressed or typed is
    passed (`given=None`): the history records who and why, never their answer."""
    user_id = body["user"]["id"]
    await asks.answer(ask, Attempt(Responder(SURFACE, user_id), SURFACE, member=False), None)
    ref = refs.ref(ask)
    emit(log, "slack.outsider", level=logging.WARNING, id=ask.id, ref=ref, user=user_id,
         team=team_of(body))
    return replies.outsider_reply(ref)


async def refuse_external(asks: Service, ask: AskRow, user_id: str) -> str:
    """A person tried to answer an external ask here: answered through the core, which refuses
    it as not a responder (only its outside system answers it, through its signed door) and
    records it, without what they gave (`given=None`); the words to tell them."""
    await asks.answer(ask, Attempt(Responder(SURFACE, user_id), SURFACE), None)
    ref = refs.ref(ask)
    emit(log, "slack.external", id=ask.id, ref=ref, user=user_id)
    return replies.external_reply(ask, ref)
