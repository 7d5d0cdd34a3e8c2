"""GitHub credentials: a plain token, or a GitHub App's installation tokens cached until near expiry."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
import cachetools
import gidgethub
from gidgethub import apps
from gidgethub.aiohttp import GitHubAPI

from core.app.ports import Clock
from core.domain.logline import emit

from .settings import GitHubSettings

log = logging.getLogger("aye.github")

USER_AGENT = "aye"
APP, TOKEN = "app", "token"
# Renew an installation token this long before GitHub says it expires (they last an hour), so
# a call never starts with a token that dies on the way.
REFRESH_BEFORE_S = 5 * 60
MAX_INSTALLATIONS = 1024
# Which installation serves a repository changes rarely (uninstall, transfer): look it up again
# after this long.
INSTALLATION_TTL_S = 60 * 60


class NotInstalled(Exception):
    """The GitHub App is not installed on the repository: nothing can be done there."""


@dataclass(frozen=True, slots=True)
class InstallationToken:
    token: str
    expires_at: float  # epoch seconds
    refresh_at: float


def token_from_reply(reply: Mapping[str, Any], now: float) -> InstallationToken:
    """The token GitHub minted and when to renew it (pure)."""
    token = reply.get("token")
    expires_text = reply.get("expires_at")
    if not isinstance(token, str) or not isinstance(expires_text, str):
        raise ValueError("GitHub's access_tokens reply lacks token or expires_at")
    expires_at = datetime.fromisoformat(expires_text.replace("Z", "+00:00")).timestamp()
    # A token shorter-lived than the margin is used for this call alone, never cached long.
    refresh_at = max(expires_at - REFRESH_BEFORE_S, now)
    return InstallationToken(token, expires_at, refresh_at)


class GitHubAuth:
    """Hands out a ready GitHubAPI for a repository, with the right credentials for it."""

    def __init__(self, settings: GitHubSettings, clock: Clock) -> None:
        self.base_url = settings.api_url
        self.app_id = settings.app_id
        self.private_key = settings.private_key
        self.plain_token = settings.token
        self.mode = APP if self.app_id and self.private_key else TOKEN
        self.clock = clock
        self.minted = 0
        self._tokens: cachetools.TLRUCache[int, InstallationToken] = cachetools.TLRUCache(
            maxsize=MAX_INSTALLATIONS, ttu=_renew_at, timer=clock.now
        )
        self._installations: cachetools.TTLCache[str, int] = cachetools.TTLCache(
            maxsize=MAX_INSTALLATIONS, ttl=INSTALLATION_TTL_S, timer=clock.now
        )
        self._locks: dict[int, asyncio.Lock] = {}

    def check(self) -> None:
        """Fail at start, not at the first delivery, on a private key that cannot sign."""
        if self.mode == APP:
            apps.get_jwt(app_id=str(self.app_id), private_key=str(self.private_key))

    async def api(
        self, session: aiohttp.ClientSession, repo: str, installation_id: int | None = None
    ) -> GitHubAPI:
        """A client for calls on `repo`; `installation_id` from the webhook saves a look-up."""
        if self.mode == TOKEN:
            return self._client(session, self.plain_token)
        if installation_id is None:
            installation_id = await self.installation_for(session, repo)
        token = await self._installation_token(session, installation_id)
        return self._client(session, token)

    def remember(self, repo: str, installation_id: int | None) -> None:
        """A signed webhook named the installation that serves `repo`: a later call on it
        (an author read for an answer given elsewhere) need not look it up."""
        if self.mode == APP and installation_id is not None:
            self._installations[repo.lower()] = installation_id

    def forget(self, installation_id: int | None, repo: str) -> None:
        """GitHub refused the token (401): mint a new one next time."""
        if installation_id is None:
            installation_id = self._installations.get(repo.lower())
        if installation_id is not None:
            self._tokens.pop(installation_id, None)

    async def installation_for(self, session: aiohttp.ClientSession, repo: str) -> int:
        key = repo.lower()
        found = self._installations.get(key)
        if found is not None:
            return found
        owner, _, name = repo.partition("/")
        jwt = apps.get_jwt(app_id=str(self.app_id), private_key=str(self.private_key))
        try:
            reply = await self._client(session, None).getitem(
                "/repos/{owner}/{repo}/installation", {"owner": owner, "repo": name}, jwt=jwt
            )
        except gidgethub.BadRequest as exc:
            if exc.status_code == 404:
                raise NotInstalled(repo) from None
            raise
        installation_id = int(reply["id"])
        self._installations[key] = installation_id
        return installation_id

    async def _installation_token(
        self, session: aiohttp.ClientSession, installation_id: int
    ) -> str:
        cached = self._tokens.get(installation_id)
        if cached is not None:
            return cached.token
        # One mint per installation at a time: concurrent deliveries share its token.
        lock = self._locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation_id)
            if cached is not None:
                return cached.token
            reply = await apps.get_installation_access_token(
                self._client(session, None),
                installation_id=str(installation_id),
                app_id=str(self.app_id),
                private_key=str(self.private_key),
            )
            minted = token_from_reply(reply, self.clock.now())
            self.minted += 1
            if minted.refresh_at > self.clock.now():
                self._tokens[installation_id] = minted
            emit(log, "github.token_minted", installation=installation_id,
                 expires_at=int(minted.expires_at))
            return minted.token

    def _client(self, session: aiohttp.ClientSession, token: str | None) -> GitHubAPI:
        return GitHubAPI(session, USER_AGENT, base_url=self.base_url, oauth_token=token)


def _renew_at(_key: int, value: InstallationToken, _now: float) -> float:
    return value.refresh_at
