"""Who opened a GitHub issue or pull request, for `prevent_self_approval`: its `user.login`,
read from GitHub itself (`GET /repos/{owner}/{repo}/issues/{number}`, which serves pull
requests too), never from the agent. Fails closed: when GitHub cannot say, AuthorUnknown, and
the approval that asked is refused, never taken on a guess."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import aiohttp
import cachetools
import gidgethub

from bot.core.clock import Clock
from bot.core.logs import emit
from bot.core.surface import AuthorUnknown

from .auth import GitHubAuth, NotInstalled
from .plugin import LOGIN, SURFACE

log = logging.getLogger("aye.github")

ISSUE = "/repos/{owner}/{repo}/issues/{number}"
# An issue keeps its author: remember it a while rather than ask GitHub on every approval.
# Only answers are kept; a failure is asked again next time.
CACHE_TTL_S = 600.0
CACHE_SIZE = 4096
# GitHub gives up on a webhook after 10 s, and an `/answer` waits for this look-up: stay well
# within it (the installation's token included).
LOOKUP_TIMEOUT_S = 5.0
BOT_TYPE = "Bot"


class IssueAuthors:
    def __init__(self, auth: GitHubAuth, clock: Clock) -> None:
        self.auth = auth
        self._cache: cachetools.TTLCache[tuple[str, int], str | None] = cachetools.TTLCache(
            maxsize=CACHE_SIZE, ttl=CACHE_TTL_S, timer=clock.now
        )

    async def author(
        self, session: aiohttp.ClientSession | None, repo: str, number: int
    ) -> str | None:
        """`github:<login>` of whoever opened `repo`#`number`; None when an app opened it (a
        bot is no person); AuthorUnknown when GitHub cannot say."""
        key = (repo.lower(), number)
        if key in self._cache:
            return self._cache[key]
        if session is None:
            raise AuthorUnknown("github is not started")
        found = author_of(await self._issue(session, repo, number))
        self._cache[key] = found
        emit(log, "github.issue_author", repo=repo, number=number, author=found)
        return found

    async def _issue(
        self, session: aiohttp.ClientSession, repo: str, number: int
    ) -> Mapping[str, Any]:
        """The issue as GitHub serves it; a token GitHub refused (401) is renewed once."""
        owner, _, name = repo.partition("/")
        url_vars = {"owner": owner, "repo": name, "number": str(number)}
        for renewed in (False, True):
            try:
                reply = await asyncio.wait_for(self._get(session, repo, url_vars),
                                               LOOKUP_TIMEOUT_S)
            except NotInstalled:
                raise AuthorUnknown(f"the GitHub App is not installed on {repo}") from None
            except gidgethub.HTTPException as exc:
                if int(exc.status_code) == 401 and not renewed:
                    self.auth.forget(None, repo)
                    continue
                raise AuthorUnknown(f"GitHub answered {int(exc.status_code)}") from None
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise AuthorUnknown(f"GitHub unreachable: {exc.__class__.__name__}") from None
            except (ValueError, KeyError, TypeError):
                raise AuthorUnknown("GitHub's reply was not what it always sends") from None
            if not isinstance(reply, Mapping):
                break
            return reply
        raise AuthorUnknown("GitHub's reply was not what it always sends")

    async def _get(
        self, session: aiohttp.ClientSession, repo: str, url_vars: dict[str, str]
    ) -> Any:
        gh = await self.auth.api(session, repo)
        return await gh.getitem(ISSUE, url_vars)


def author_of(issue: Mapping[str, Any]) -> str | None:
    """`github:<login>` of the issue's `user`; None for an app's (a `Bot`)."""
    user = issue.get("user")
    if not isinstance(user, Mapping):
        raise AuthorUnknown("GitHub's issue names no author")
    if user.get("type") == BOT_TYPE:
        return None
    login = user.get("login")
    if not isinstance(login, str) or not LOGIN.match(login):
        raise AuthorUnknown("GitHub's issue names no author")
    return f"{SURFACE}:{login}"
