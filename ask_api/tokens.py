"""Bearer tokens: which caller is which, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.domain.responders import Responder
from core.domain.types import AgentInfo

DEFAULT_AGENT = "default"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling the API: the operator, or an agent."""

    agent: AgentInfo | None  # None for the operator

    @property
    def is_operator(self) -> bool:
        return self.agent is None


class AgentEntry(Protocol):
    """An `[[agents]]` entry of the config."""

    @property
    def name(self) -> str: ...
    @property
    def responders(self) -> list[Responder] | None: ...
    @property
    def callback_urls(self) -> list[str]: ...
    @property
    def callback_secret_env(self) -> str | None: ...
    @property
    def max_open(self) -> int: ...
    @property
    def asks_per_minute(self) -> int: ...
    @property
    def verifiers(self) -> list[str]: ...
    def token(self) -> str: ...


class HasAgents(Protocol):
    @property
    def agents(self) -> Sequence[AgentEntry]: ...


class TokenBook:
    """Maps bearer tokens to callers, comparing in constant time."""

    def __init__(self, operator: str, agents: list[tuple[str, AgentInfo]]) -> None:
        self._operator = operator.encode()
        self._agents = [(t.encode(), a) for t, a in agents]

    @classmethod
    def build(cls, config: HasAgents, operator: str, default_agent: str | None) -> TokenBook:
        """The config's agents, or one agent `default` with the generated token."""
        if config.agents:
            agents = [
                (a.token(), AgentInfo(
                    a.name, list(a.responders) if a.responders else None,
                    tuple(a.callback_urls), a.callback_secret_env is not None,
                    a.max_open, a.asks_per_minute, tuple(a.verifiers),
                ))
                for a in config.agents
            ]
        else:
            agents = [(default_agent or "", AgentInfo(DEFAULT_AGENT))]
        return cls(operator, [(t, a) for t, a in agents if t])

    def derived_key(self, purpose: bytes) -> bytes:
        """A key for `purpose` (the web inbox's session cookies) derived from the operator
        token, so a new token ends what the old one signed, and the token never leaves here."""
        return hmac.new(self._operator, b"aye: " + purpose, hashlib.sha256).digest()

    def is_operator(self, token: str) -> bool:
        found = self.caller(token)
        return found is not None and found.is_operator

    def caller(self, token: str) -> Caller | None:
        given = token.encode()
        found: Caller | None = None
        if hmac.compare_digest(given, self._operator):
            found = Caller(None)
        for known, agent in self._agents:
            if hmac.compare_digest(given, known):
                found = Caller(agent)
        return found
