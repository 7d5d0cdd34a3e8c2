"""The generated-once token file for zero-config use (the tokens' book is ask_api.tokens)."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from store.database_url import canonical
from store.urls import sqlite_path

TOKEN_FILE_NAME = "aye-tokens.json"
PREFIX = {"operator": "aye_op_", "agent": "aye_ag_"}
# Given the generated tokens by kind, the kinds whose token the store keeps (keep_in_store).
Keep = Callable[[dict[str, str]], set[str]]


class TokenFileError(Exception):
    """The tokens cannot be settled: one line for the operator, and `aye serve` exits 2."""


class TokensElsewhere(TokenFileError):
    """The store keeps generated tokens this folder's file does not hold."""


def settle_tokens(
    path: Path, database_url: str, operator: str | None, agent: str | None, need_agent: bool,
    listen_url: str | None = None,
) -> tuple[str, str | None]:
    """ensure_tokens, checked against the store at `database_url`; TokenFileError (or the
    store's StoreError) with one line when they cannot be settled."""
    try:
        return ensure_tokens(path, operator, agent, need_agent,
                             keep=lambda mine: asyncio.run(
                                 keep_in_store(database_url, mine, listen_url)))
    except OSError as exc:
        raise TokenFileError(f"cannot write the token file {path}: {exc.strerror}") from None


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
    path: Path, operator: str | None, agent: str | None, need_agent: bool, keep: Keep,
) -> tuple[str, str | None]:
    """The operator token and the default agent's (None when not needed), generating what is
    unset. A generated token is used only when `keep` says its hash is the one the store keeps
    (the first process's), and only then written to the file: TokensElsewhere when the store
    keeps another process's tokens that this folder's file does not hold.

    The folder is locked meanwhile, so two processes started in it share one pair."""
    wanted = [kind for kind, given in (("operator", operator), ("agent", agent))
              if given is None and (kind == "operator" or need_agent)]
    if wanted:
        with _folder_turn(path.parent):
            on_file = read_token_file(path)
            mine = {kind: on_file.get(kind) or PREFIX[kind] + secrets.token_urlsafe(32)
                    for kind in wanted}
            if keep(mine) != set(wanted):
                raise TokensElsewhere(_elsewhere(path, on_file))
            if any(kind not in on_file for kind in wanted):
                _write_token_file(path, {**on_file, **mine})
        operator, agent = mine.get("operator", operator), mine.get("agent", agent)
    return operator or "", (agent if need_agent else None)


def _elsewhere(path: Path, on_file: dict[str, str]) -> str:
    held = f"{path.resolve()} holds others" if on_file else f"{path.resolve()} is not here"
    return (f"the store keeps the tokens another aye serve generated, and {held}: set "
            "AYE_OPERATOR_TOKEN and AYE_AGENT_TOKEN, or copy that process's aye-tokens.json here")


@contextmanager
def _folder_turn(folder: Path) -> Iterator[None]:
    """The folder locked (flock on its own descriptor: no file is made) while one process
    reads, keeps and writes its tokens."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


async def keep_in_store(
    database_url: str, tokens: dict[str, str], listen_url: str | None = None
) -> set[str]:
    """core.app.tokens.keep_generated on the store at `database_url` (opened, and migrated, for
    it; `listen_url` given says it may be a transaction pooler): StoreError when it cannot be used."""
    # Here: the CLI reads the token file without loading the store's libraries.
    from core.app.tokens import keep_generated
    from store.db import Store

    store = Store(database_url, listen_url)
    try:
        await store.open()
        return await keep_generated(store, tokens)
    finally:
        await store.close()
