"""The process's log format: `time level logger event key=value …` (see bot.core.logs.emit)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from bot.core.logs import FIELDS

NOISY = ("aiohttp.access", "aiosqlite", "asyncpg", "sqlalchemy", "slack_bolt", "slack_sdk",
         "gidgethub", "asyncio")


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))
        line = f"{stamp} {record.levelname.lower()} {record.name} {record.getMessage()}"
        fields: dict[str, Any] = getattr(record, FIELDS, {})
        for key, value in fields.items():
            if value is None:
                continue
            text = str(value)
            if not text or any(c.isspace() or c in "\"=" for c in text):
                text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            line += f" {key}={text}"
        if record.exc_info and record.exc_info[0] is not None:
            # The exception's class only: its text may carry a value or a token.
            line += f" error={record.exc_info[0].__name__}"
        return line


def setup(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    quiet_libraries()


def quiet_libraries() -> None:
    """Libraries log SQL parameters and request bodies at debug (aiosqlite logs every
    statement with its values): keep them at warning whatever the root level, so no answer or
    token reaches a log through them."""
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)

