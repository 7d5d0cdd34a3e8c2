"""Bearer tokens: which caller is which, and the generated-once token file for zero-config use."""

from __future__ import annotations

import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from bot.broker import AgentInfo
from bot.config import Config
from store.db import sqlite_path

TOKEN_FILE_NAME = "aye-tokens.json"
DEFAULT_AGENT = "default"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling the API: the operator, or an agent."""

    agent: AgentInfo | None  # None for the operator

    @property
    def is_operator(self) -> bool:
        return self.agent is None


def token_file_path(database_url: str) -> Path:
    """Beside the SQLite store; in the working folder for any other store."""
    db = sqlite_path(database_url)
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


class TokenBook:
    """Maps bearer tokens to callers, comparing in constant time."""

    def __init__(self, operator: str, agents: list[tuple[str, AgentInfo]]) -> None:
        self._operator = operator.encode()
        self._agents = [(t.encode(), a) for t, a in agents]

    @classmethod
    def build(cls, config: Config, operator: str, default_agent: str | None) -> TokenBook:
        if config.agents:
            agents = [
                (a.token(), AgentInfo(a.name, list(a.responders) if a.responders else None))
                for a in config.agents
            ]
        else:
            agents = [(default_agent or "", AgentInfo(DEFAULT_AGENT))]
        return cls(operator, [(t, a) for t, a in agents if t])

    def caller(self, token: str) -> Caller | None:
        given = token.encode()
        found: Caller | None = None
        if hmac.compare_digest(given, self._operator):
            found = Caller(None)
        for known, agent in self._agents:
            if hmac.compare_digest(given, known):
                found = Caller(agent)
        return found
