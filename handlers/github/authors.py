"""Who opened a GitHub issue or pull request (for `prevent_self_approval`: its `user.login`)
and which it is (for start gates' `kinds`: a pull request carries a `pull_request` key), read
from GitHub itself (`GET /repos/{owner}/{repo}/issues/{number}`, which serves pull requests
too), never from the agent. Fails closed: when GitHub cannot say, AuthorUnknown (the approval
that asked is refused, never taken on a guess) or KindUnknown (the start is gated as either
kind would be)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import cachetools
import gidgethub

from core.app.ports import AuthorUnknown, Clock, KindUnknown
from core.domain.logline import emit

from .auth import GitHubAuth, NotInstalled
from .settings import LOGIN, SURFACE

log = logging.getLogger("aye.github")

ISSUE = "/repos/{owner}/{repo}/issues/{number}"
# An issue keeps its author, and never turns into a pull request (nor back): remember them a
# while rather than ask GitHub on every approval or start. Only answers are kept; a failure is
# asked again next time.
CACHE_TTL_S = 600.0
CACHE_SIZE = 4096
# GitHub gives up on a webhook after 10 s, and an `/answer` waits for this look-up: stay well
# within it (the installation's token included).
LOOKUP_TIMEOUT_S = 5.0
BOT_TYPE = "Bot"
ISSUE_KIND, PULL_KIND = "github.issue", "github.pull"


class Unreadable(Exception):
    """GitHub could not say (down, no access, a reply it never sends): why, safe to log."""


@dataclass(frozen=True, slots=True)
class IssueFacts:
    """What one read of an issue tells: its author (None for an app's; `author_problem` says
    why it cannot be told, when it cannot) and its kind."""

    author: str | None
    author_problem: str | None
    kind: str


class IssueAuthors:
    def __init__(self, auth: GitHubAuth, clock: Clock) -> None:
        self.auth = auth
        self._cache: cachetools.TTLCache[tuple[str, int], IssueFacts] = cachetools.TTLCache(
            maxsize=CACHE_SIZE, ttl=CACHE_TTL_S, timer=clock.now
        )

    async def author(
        self, session: aiohttp.ClientSession | None, repo: str, number: int
    ) -> str | None:
        """`github:<login>` of whoever opened `repo`#`number`; None when an app opened it (a
        bot is no person); AuthorUnknown when GitHub cannot say."""
        try:
            facts = await self.facts(session, repo, number)
        except Unreadable as exc:
            raise AuthorUnknown(str(exc)) from None
        if facts.author_problem is not None:
            raise AuthorUnknown(facts.author_problem)
        return facts.author

    async def kind(self, session: aiohttp.ClientSession | None, repo: str, number: int) -> str:
        """`github.pull` for a pull request, `github.issue` for an issue, as GitHub says;
        KindUnknown when it cannot say."""
        try:
            return (await self.facts(session, repo, number)).kind
        except Unreadable as exc:
            raise KindUnknown(str(exc)) from None

    async def facts(
        self, session: aiohttp.ClientSession | None, repo: str, number: int
    ) -> IssueFacts:
        """The issue's facts, from the cache or one read (Unreadable when GitHub cannot say)."""
        key = (repo.lower(), number)
        if key in self._cache:
            return self._cache[key]
        if session is None:
            raise Unreadable("github is not started")
        facts = facts_of(await self._issue(session, repo, number))
        if facts.author_problem is None:  # a reply naming no author is asked again next time
            self._cache[key] = facts
        emit(log, "github.issue_read", repo=repo, number=number, author=facts.author,
             kind=facts.kind)
        return facts

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
                raise Unreadable(f"the GitHub App is not installed on {repo}") from None
            except gidgethub.HTTPException as exc:
                if int(exc.status_code) == 401 and not renewed:
                    self.auth.forget(None, repo)
                    continue
                raise Unreadable(f"GitHub answered {int(exc.status_code)}") from None
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise Unreadable(f"GitHub unreachable: {exc.__class__.__name__}") from None
            except (ValueError, KeyError, TypeError):
                raise Unreadable("GitHub's reply was not what it always sends") from None
            if not isinstance(reply, Mapping):
                break
            return reply
        raise Unreadable("GitHub's reply was not what it always sends")

    async def _get(
        self, session: aiohttp.ClientSession, repo: str, url_vars: dict[str, str]
    ) -> Any:
        gh = await self.auth.api(session, repo)
        return await gh.getitem(ISSUE, url_vars)


def facts_of(issue: Mapping[str, Any]) -> IssueFacts:
    """What an issue GitHub served tells (its author may be untellable; its kind always is)."""
    kind = PULL_KIND if issue.get("pull_request") is not None else ISSUE_KIND
    try:
        return IssueFacts(author_of(issue), None, kind)
    except AuthorUnknown as exc:
        return IssueFacts(None, str(exc), kind)


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
