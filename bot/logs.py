"""Structured log lines: `event key=value …`. Callers pass ids and refs, never values or secrets."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

FIELDS = "aye_fields"


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
    # Libraries log request URLs and payloads at debug; keep them at warning.
    for noisy in ("aiohttp.access", "slack_bolt", "slack_sdk", "sqlalchemy", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def emit(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: Any) -> None:
    logger.log(level, event, extra={FIELDS: fields})
