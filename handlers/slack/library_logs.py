"""What slack-bolt and slack-sdk's Socket Mode client may log, and what aye logs of an
interaction: never a payload.

Given no logger, bolt copies the root logger's level onto its own (`slack_bolt.AsyncApp`, and
one per listener named after the app), so at AYE_LOG_LEVEL=debug it would write every
envelope, a typed answer among them, whatever level its parent `slack_bolt` has. Given one, it
copies that logger's level onto every logger it makes, and Socket Mode logs through it too.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped

BOLT_LOGGER = "slack_bolt"
# bolt reads SLACK_BOT_TOKEN from the environment itself and, given aye's own client as well,
# warns at every start that the token "will be unused": true, expected, and only noise here.
TOKEN_UNUSED = warning_client_prioritized_and_token_skipped()


class TokenUnused(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != TOKEN_UNUSED


def library_logger() -> logging.Logger:
    """The logger bolt and Socket Mode write to: held at warning whatever the root level,
    without bolt's "token will be unused" line."""
    logger = logging.getLogger(BOLT_LOGGER)
    logger.setLevel(logging.WARNING)
    if not any(isinstance(f, TokenUnused) for f in logger.filters):
        logger.addFilter(TokenUnused())
    return logger


def received(body: dict[str, Any]) -> dict[str, Any]:
    """What a debug line may say of an interaction: its kind, who, and which control or
    modal; never a value, a state or a response_url."""
    actions = body.get("actions") or [{}]
    first = actions[0] if isinstance(actions[0], dict) else {}
    view = body.get("view") or {}
    return {
        "kind": body.get("type"), "user": (body.get("user") or {}).get("id"),
        "action": first.get("action_id"), "view": view.get("callback_id"),
    }
