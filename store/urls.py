"""Store URLs read without SQLAlchemy, so the CLI's commands start fast."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

DEFAULT_URL = "sqlite+aiosqlite:///./aye.db"


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL (`sqlite+aiosqlite:///./aye.db`, `sqlite:////abs/aye.db`),
    or None for another database or an in-memory one."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+", 1)[0] != "sqlite":
        return None
    database = unquote(rest[1:].split("?", 1)[0]) if rest.startswith("/") else ""
    if not database or database == ":memory:":
        return None
    return Path(database)
