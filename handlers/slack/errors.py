"""What happens when a listener fails: a log line with ids only, and a plain word to the presser."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.domain.logline import emit
from handlers import retry
from handlers.slack import replies
from handlers.slack.answer_taking import tell, where_pressed

log = logging.getLogger("aye.slack")

DEFAULT_RETRY_AFTER_S = 30.0


def retry_after(headers: Any, default: float = DEFAULT_RETRY_AFTER_S) -> float:
    """Seconds from a 429's Retry-After header, or `default` when Slack gave none."""
    seconds = retry.retry_after(headers)
    return default if seconds is None else seconds


def slack_error(exc: BaseException) -> str | None:
    """Slack's error code of a failed Web API call (`not_in_channel`…), safe to log."""
    if isinstance(exc, SlackApiError):
        code = exc.response.get("error")
        return str(code) if code else f"http_{exc.response.status_code}"
    return None


def register(app: AsyncApp) -> None:
    @app.error
    async def on_error(error: Exception, body: dict[str, Any], client: AsyncWebClient) -> None:
        # The exception's class and Slack's code only: its text may hold a typed answer.
        user_id = (body.get("user") or {}).get("id")
        emit(log, "slack.listener_failed", level=logging.ERROR, kind=body.get("type"),
             user=user_id, error=error.__class__.__name__, slack_error=slack_error(error))
        if body.get("type") != "block_actions" or not user_id:
            return
        try:
            await tell(client, where_pressed(body), user_id, replies.FAILED_REPLY)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            emit(log, "slack.untold", level=logging.WARNING, user=user_id,
                 error=exc.__class__.__name__, slack_error=slack_error(exc))
