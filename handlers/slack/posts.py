"""Showing asks in Slack for the outbox: post once, update on a quorum's count and on close,
post again on escalation, remind once in the thread.

Exactly once: every post carries message metadata with the ask id, and before posting aye looks
in the thread (or the channel's recent history) for a message carrying it. A crash between
Slack's reply and `record_posted` therefore adopts the earlier post instead of repeating it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import AskRow
from core.app.service import Service
from core.domain import refs, vocabulary
from core.domain.ask import is_external
from core.domain.logline import emit
from handlers.slack import blocks, media
from handlers.slack.answer_taking import Where
from handlers.slack.buttons import DEFAULT_INBOX
from handlers.slack.errors import slack_error
from handlers.slack.pacing import Turn
from handlers.slack.settings import SURFACE

log = logging.getLogger("aye.slack")

PAGE_LIMIT = 200
# conversations.history is scanned from a little before the ask was created: Slack's clock and
# aye's may differ, and a post cannot be older than its ask.
LOOKBACK_MARGIN_S = 600.0
# A message someone deleted cannot be updated; retrying would never end.
GONE = frozenset({"message_not_found", "cant_update_message", "is_archived"})


def work_thread(work: dict[str, Any] | None) -> Where | None:
    slack = (work or {}).get(SURFACE)
    if not slack:
        return None
    return Where(str(slack["channel"]), str(slack["thread_ts"]))


class Posts:
    def __init__(
        self,
        asks: Service,
        client: AsyncWebClient,
        poster: AsyncWebClient,
        default_channel: str | None,
        inbox: str = DEFAULT_INBOX,
    ) -> None:
        self.asks = asks
        self.inbox = inbox  # the web inbox's address: a step-up approval links there
        self.client = client  # retries 429s, 5xx and cut connections: for idempotent calls
        self.poster = poster  # retries 429s only: a retried post might post twice
        self.default_channel = default_channel
        self.bot_id: str | None = None  # set from auth.test: only our own posts are adopted

    def target(self, ask: AskRow) -> Where | None:
        """The ask's thread, or a new thread in the default channel."""
        thread = work_thread(ask.work)
        if thread is not None:
            return thread
        return Where(self.default_channel, None) if self.default_channel else None

    # -- the outbox actions ------------------------------------------------------------------

    async def post(self, ask: AskRow, turn: Turn) -> None:
        if ask.status != vocabulary.OPEN:
            return  # closed before it could be shown: there is nothing left to ask
        if await self.asks.post_location(ask, SURFACE) is not None:
            return
        target = self.target(ask)
        if target is None:
            emit(log, "slack.no_target", level=logging.WARNING, id=ask.id)
            return
        ref = refs.ref(ask)
        ts = await self._find(target, ask, blocks.ASK_EVENT, ask.created_at)
        if ts is None:
            ts = await self._send(target, blocks.question_message(ask, ref, self.inbox), turn)
        else:
            emit(log, "slack.adopted", id=ask.id, ref=ref, channel=target.channel, ts=ts)
        location: dict[str, Any] = {"channel": target.channel, "ts": ts}
        if target.thread_ts:
            location["thread_ts"] = target.thread_ts
        await self.asks.record_posted(
            ask, SURFACE, location, where=f"{target.channel}/{target.thread_ts or ts}"
        )

    async def close(self, ask: AskRow) -> None:
        ref = refs.ref(ask)
        await self._rewrite(ask, lambda again: blocks.closed_message(ask, ref, again))

    async def update(self, ask: AskRow) -> None:
        """Still open, but changed (a quorum's count): show it again in each of its messages,
        buttons kept. Once closed there is nothing to do: the close shows the end."""
        if ask.status != vocabulary.OPEN:
            return
        ref = refs.ref(ask)

        def shown(again: bool) -> blocks.Message:
            build = blocks.escalation_message if again else blocks.question_message
            return build(ask, ref, self.inbox)

        await self._rewrite(ask, shown)

    async def _rewrite(self, ask: AskRow, render: Callable[[bool], blocks.Message]) -> None:
        """Update each of the ask's messages with `render(is_the_escalation)`: its first post,
        and the escalation posted again in its thread."""
        location = await self.asks.post_location(ask, SURFACE)
        if location is None:
            return  # never shown in Slack
        channel, ts = location["channel"], location["ts"]
        first_is_escalation = bool(location.get("escalation"))
        await self._update(ask, channel, ts, render(first_is_escalation))
        if ask.escalated_at is not None and not first_is_escalation:
            thread = Where(channel, location.get("thread_ts") or ts)
            again = await self._find(thread, ask, blocks.ESCALATION_EVENT, ask.escalated_at)
            if again is not None:
                await self._update(ask, channel, again, render(True))

    async def remind(self, ask: AskRow, turn: Turn) -> None:
        """Once, in the ask's thread: who it still waits for. Nothing for an ask closed since,
        or never shown in Slack, or waiting on an outside system (an external ask: nobody here
        can answer it); a reminder already posted (a crash before the outbox knew) is not
        posted again."""
        if ask.status != vocabulary.OPEN or is_external(ask):
            return
        location = await self.asks.post_location(ask, SURFACE)
        if location is None:
            return
        thread = Where(location["channel"], location.get("thread_ts") or location["ts"])
        since = ask.reminded_at or ask.created_at
        if await self._find(thread, ask, blocks.REMINDER_EVENT, since) is not None:
            return
        await self._send(thread, blocks.reminder_message(ask, refs.ref(ask)), turn)
        emit(log, "slack.reminded", id=ask.id, ref=refs.ref(ask), channel=thread.channel)

    async def escalate(self, ask: AskRow, turn: Turn) -> None:
        if ask.status != vocabulary.OPEN:
            return
        ref = refs.ref(ask)
        location = await self.asks.post_location(ask, SURFACE)
        if location is not None:
            target = Where(location["channel"], location.get("thread_ts") or location["ts"])
        else:
            # Not posted before (no Slack responder until now): the escalation starts a thread.
            found = self.target(ask)
            if found is None:
                emit(log, "slack.no_target", level=logging.WARNING, id=ask.id)
                return
            target = found
        since = ask.escalated_at or ask.created_at
        ts = await self._find(target, ask, blocks.ESCALATION_EVENT, since)
        if ts is None:
            ts = await self._send(target, blocks.escalation_message(ask, ref, self.inbox), turn)
        where = f"{target.channel}/{target.thread_ts or ts} (escalated)"
        new = {"channel": target.channel, "ts": ts, "escalation": True}
        if target.thread_ts:
            new["thread_ts"] = target.thread_ts
        # With a post already recorded this only adds "posted" to the history.
        await self.asks.record_posted(ask, SURFACE, location or new, where=where)

    # -- Slack calls -------------------------------------------------------------------------

    async def _send(self, target: Where, message: blocks.Message, turn: Turn) -> str:
        """Post in the channel's turn (handlers.slack.pacing): each call waits for its slot."""

        async def post(shown: list[dict[str, Any]]) -> Any:
            return await turn.post(lambda: self.poster.chat_postMessage(
                channel=target.channel,
                thread_ts=target.thread_ts,
                text=message.text,
                blocks=shown,
                metadata=message.metadata,
                unfurl_links=False,
                unfurl_media=False,
            ))

        sent = await self._pictures_or_links(message, post)
        return str(sent["ts"])

    async def _update(self, ask: AskRow, channel: str, ts: str, message: blocks.Message) -> None:
        async def update(shown: list[dict[str, Any]]) -> Any:
            return await self.client.chat_update(
                channel=channel, ts=ts, text=message.text, blocks=shown, metadata=message.metadata
            )

        try:
            await self._pictures_or_links(message, update)
        except SlackApiError as exc:
            if slack_error(exc) not in GONE:
                raise
            emit(log, "slack.update_skipped", level=logging.WARNING, id=ask.id, channel=channel,
                 ts=ts, slack_error=slack_error(exc))

    async def _pictures_or_links(
        self, message: blocks.Message, call: Callable[[list[dict[str, Any]]], Awaitable[Any]]
    ) -> Any:
        """Send the message with its pictures; when Slack refuses it for one of them (it could
        not download it: the whole message is refused), once more with them as links. Nothing
        was posted by the refused call, so sending again posts once."""
        try:
            return await call(message.blocks)
        except SlackApiError as exc:
            if message.links_only is None or slack_error(exc) != "invalid_blocks":
                raise
            metadata = exc.response.get("response_metadata") or {}
            said = [*(metadata.get("messages") or []), *(exc.response.get("errors") or [])]
            if not media.refused_an_image(map(str, said), message.blocks):
                raise
            emit(log, "slack.pictures_refused", level=logging.WARNING,
                 id=(message.metadata.get("event_payload") or {}).get("ask_id"),
                 effect="shown as links")
        return await call(message.links_only)

    async def _find(self, target: Where, ask: AskRow, event: str, since: float) -> str | None:
        """The ts of our message in the thread (or channel) that carries this ask under `event`."""
        cursor: str | None = None
        while True:
            if target.thread_ts:
                page = await self.client.conversations_replies(
                    channel=target.channel, ts=target.thread_ts, include_all_metadata=True,
                    limit=PAGE_LIMIT, cursor=cursor,
                )
            else:
                page = await self.client.conversations_history(
                    channel=target.channel, oldest=f"{since - LOOKBACK_MARGIN_S:.6f}",
                    include_all_metadata=True, limit=PAGE_LIMIT, cursor=cursor,
                )
            for message in page.get("messages") or []:
                if blocks.marked_ask_id(message, event) == ask.id and self._ours(message):
                    return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not page.get("has_more") or not cursor:
                return None

    def _ours(self, message: dict[str, Any]) -> bool:
        return self.bot_id is None or message.get("bot_id") in (None, self.bot_id)
