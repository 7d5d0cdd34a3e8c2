"""Structured log lines: `event key=value …`. Callers pass ids and refs, never values or secrets.

The fields ride on the record under FIELDS; the process's formatter (bot/logs.py) writes them.
"""

from __future__ import annotations

import logging

FIELDS = "aye_fields"


def emit(logger: logging.Logger, event: str, *, level: int = logging.INFO, **fields: object) -> None:
    logger.log(level, event, extra={FIELDS: fields})
