"""Who opened a Slack thread, for `prevent_self_approval`: the author of its first message, read
from Slack itself (`conversations.replies`), never from the agent. Fails closed: when Slack
cannot say, AuthorUnknown, and the approval that asked is refused, never taken on a guess."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import cachetools
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import AuthorUnknown
from core.domain.logline import emit
from handlers.slack.errors import slack_error
from handlers.slack.posts import work_thread
from handlers.slack.settings import SURFACE

log = logging.getLogger("aye.slack")

# A thread's first message keeps its author: remember it a while rather than ask Slack on
# every press. Only answers are kept; a failure is asked again next time.
CACHE_TTL_S = 600.0
CACHE_SIZE = 4096
LOOKUP_TIMEOUT_S = 10.0


class ThreadAuthors:
    def __init__(self) -> None:
        self._cache: cachetools.TTLCache[tuple[str, str], str | None] = cachetools.TTLCache(
            maxsize=CACHE_SIZE, ttl=CACHE_TTL_S
        )

    async def author(self, client: AsyncWebClient | None, work: dict[str, Any]) -> str | None:
        """`slack:<user id>` of the thread's first message; None when an app posted it (a bot
        is no person, so nobody is its author); AuthorUnknown when Slack cannot say."""
        thread = work_thread(work)
        if thread is None or thread.thread_ts is None:
            raise AuthorUnknown("the work is not a Slack thread")
        key = (thread.channel, thread.thread_ts)
        if key in self._cache:
            return self._cache[key]
        if client is None:
            raise AuthorUnknown("slack is not started")
        first = await _first_message(client, thread.channel, thread.thread_ts)
        found = _author_of(first)
        self._cache[key] = found
        emit(log, "slack.thread_author", channel=thread.channel, thread_ts=thread.thread_ts,
             author=found)
        return found


async def _first_message(client: AsyncWebClient, channel: str, ts: str) -> dict[str, Any]:
    try:
        reply = await asyncio.wait_for(
            client.conversations_replies(channel=channel, ts=ts, limit=1), LOOKUP_TIMEOUT_S
        )
    except SlackApiError as exc:
        raise AuthorUnknown(f"Slack refused conversations.replies: {slack_error(exc)}") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise AuthorUnknown(f"Slack unreachable: {exc.__class__.__name__}") from None
    messages = reply.get("messages") or []
    if not messages or not isinstance(messages[0], dict):
        raise AuthorUnknown("Slack returned no message for the thread")
    return messages[0]


def _author_of(message: dict[str, Any]) -> str | None:
    user = message.get("user")
    if isinstance(user, str) and user:
        return f"{SURFACE}:{user}"
    if message.get("bot_id"):
        return None  # an app's post: no person opened it
    raise AuthorUnknown("the thread's first message names no author")
