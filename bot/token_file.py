"""The generated-once token file for zero-config use (the tokens' book is ask_api.tokens)."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from store.database_url import canonical
from store.urls import sqlite_path

TOKEN_FILE_NAME = "aye-tokens.json"


def token_file_path(database_url: str) -> Path:
    """Beside the SQLite store; in the working folder for any other store. UnsupportedUrl
    (store.database_url) for a URL aye does not take: a path guessed from it would be wrong."""
    db = sqlite_path(canonical(database_url))
    folder = db.parent if db is not None else Path(".")
    return folder / TOKEN_FILE_NAME


def read_token_file(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _write_token_file(path: Path, tokens: dict[str, str]) -> None:
    # Created readable by the owner alone, before any token is written into it.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(tokens, out, indent=2)
    os.chmod(path, 0o600)


def ensure_tokens(
    path: Path, operator: str | None, agent: str | None, need_agent: bool
) -> tuple[str, str | None, bool]:
    """The operator token and the default agent's, generating (and keeping) what is unset.

    Returns (operator token, default agent token or None, whether the file was written).
    """
    stored = read_token_file(path)
    changed = False
    if operator is None:
        if "operator" not in stored:
            stored["operator"] = "aye_op_" + secrets.token_urlsafe(32)
            changed = True
        operator = stored["operator"]
    if need_agent and agent is None:
        if "agent" not in stored:
            stored["agent"] = "aye_ag_" + secrets.token_urlsafe(32)
            changed = True
        agent = stored["agent"]
    if changed:
        _write_token_file(path, stored)
    return operator, (agent if need_agent else None), changed
