"""The GitHub surface: the webhook people answer through, and the comments aye writes back."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any, NoReturn

import aiohttp
import gidgethub
from aiohttp import web
from gidgethub.aiohttp import GitHubAPI

from core.app.ports import (
    CLOSE,
    POST,
    UPDATE,
    AskRow,
    AuthorUnknown,
    GiveUp,
    KindUnknown,
    RetryLater,
    SurfaceConfigError,
)
from core.app.service import Service
from core.domain import refs, vocabulary
from core.domain.logline import emit
from core.domain.responders import Responder
from core.domain.types import FollowUp

from .answer_desk import AnswerDesk
from .auth import GitHubAuth, NotInstalled
from .authors import IssueAuthors
from .facts import Written
from .faults import disposition
from .messages import closed_comment, marker, question_comment, shown_here
from .parsing import reaction_for
from .settings import SURFACE, GitHubSection, GitHubSettings
from .webhook import WEBHOOK_PATH, Webhook

log = logging.getLogger("aye.github")

REACT = "react"  # the surface's own outbox action: a reaction on an `/answer` comment
REACTIONS = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
ISSUE_COMMENTS = "/repos/{owner}/{repo}/issues/{number}/comments"
LIST_COMMENTS = ISSUE_COMMENTS + "{?since,per_page}"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
PER_PAGE = 100
# Comments older than the ask (less this, for clock skew) cannot be its post.
SINCE_SKEW_S = 600
# A reaction with no ask to carry it through the outbox (`no_open_ask`) is tried this often.
BACKGROUND_ATTEMPTS = 5
BACKGROUND_MAX_WAIT_S = 60.0


def github_work(work: dict[str, Any] | None) -> tuple[str, int] | None:
    """(owner/name, number) when the work is a GitHub issue or pull request."""
    gh = (work or {}).get("github")
    if not isinstance(gh, dict):
        return None
    repo, number = gh.get("repo"), gh.get("number")
    if not isinstance(repo, str) or not isinstance(number, int):
        return None
    return repo, number


def _vars(repo: str, **more: int | str) -> dict[str, str]:
    owner, _, name = repo.partition("/")
    return {"owner": owner, "repo": name, **{k: str(v) for k, v in more.items()}}


class GitHubSurface:
    name = SURFACE

    def __init__(self, settings: GitHubSettings, section: GitHubSection, asks: Service) -> None:
        self.section = section
        self.asks = asks
        self.auth = GitHubAuth(settings, asks.clock)
        try:
            self.auth.check()
        except Exception:
            raise SurfaceConfigError(
                "GITHUB_PRIVATE_KEY (or the file at GITHUB_PRIVATE_KEY_PATH) is not a PEM "
                "private key that can sign a GitHub App JWT"
            ) from None
        self.authors = IssueAuthors(self.auth, asks.clock)
        self.desk = AnswerDesk(asks, self._reaction, self._react_free, self._heard)
        self.webhook = Webhook(settings.webhook_secret, self.desk)
        self._session: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the Surface protocol --------------------------------------------------------------

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return responder.kind == SURFACE and github_work(work) is not None

    def wants(self, ask: AskRow, action: str) -> bool:
        if not self.section.post_questions or github_work(ask.work) is None:
            return False
        if action == POST:
            # Nobody could answer it here: publishing it would only expose it (but an external
            # ask, whose comment says what it waits on).
            return shown_here(ask)
        # On escalation nothing is posted: the comment already names who may answer here,
        # and Slack posts the escalation again. An update is a quorum's count so far.
        return action in (CLOSE, UPDATE)

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        installation_id = (payload or {}).get("installation_id")
        where = github_work(ask.work)
        repo = str((payload or {}).get("repo") or (where[0] if where else ""))
        try:
            if action == REACT and payload is not None:
                await self._react(payload)
            elif action == POST:
                await self._post(ask)
            elif action == CLOSE:
                await self._close(ask)
            elif action == UPDATE and ask.status == vocabulary.OPEN:
                await self._edit(ask, question_comment(ask, refs.ref(ask)))
        except NotInstalled:
            emit(log, "github.not_installed", level=logging.WARNING, ask=ask.id, repo=repo,
                 action=action)
            raise GiveUp(f"github {action}: the app is not installed on the repository") from None
        except gidgethub.HTTPException as exc:
            self._failed(exc, ask, action, repo, installation_id)

    async def author(self, work: dict[str, Any]) -> str | None:
        """Who opened the work's issue or pull request (core.app.ports.AuthorSource)."""
        where = github_work(work)
        if where is None:
            raise AuthorUnknown("the work is not a GitHub issue or pull request")
        return await self.authors.author(self._session, *where)

    async def work_kind(self, work: dict[str, Any]) -> str:
        """Whether the work is an issue or a pull request, as GitHub says, whatever `type` the
        agent gave (core.app.ports.KindSource)."""
        where = github_work(work)
        if where is None:
            raise KindUnknown("the work is not a GitHub issue or pull request")
        return await self.authors.kind(self._session, *where)

    def health(self) -> dict[str, Any]:
        return {
            "on": True,
            "auth": self.auth.mode,
            "webhook": WEBHOOK_PATH,
            "deliveries": self.webhook.stats.deliveries,
            "bad_signatures": self.webhook.stats.refused,
            "tokens_minted": self.auth.minted,
            "post_questions": self.section.post_questions,
        }

    def routes(self) -> list[web.RouteDef]:
        return self.webhook.routes()

    async def start(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- GitHub calls ----------------------------------------------------------------------

    async def _api(self, repo: str, installation_id: int | None = None) -> GitHubAPI:
        if self._session is None:
            raise RuntimeError("the GitHub surface is not started")
        return await self.auth.api(self._session, repo, installation_id)

    async def _react(self, payload: dict[str, Any]) -> None:
        repo = str(payload["repo"])
        gh = await self._api(repo, payload.get("installation_id"))
        # A relative path with url_vars: an absolute URL from the payload would leave base_url.
        await gh.post(
            REACTIONS, _vars(repo, comment_id=int(payload["comment_id"])),
            data={"content": _content(payload)},
        )
        emit(log, "github.reacted", repo=repo, comment=payload["comment_id"],
             content=_content(payload))

    async def _post(self, ask: AskRow) -> None:
        """Post the question once, even across a crash between posting and recording it."""
        where = github_work(ask.work)
        if where is None or ask.status != vocabulary.OPEN:
            return  # closed before its turn came: no need to publish it any more
        if await self.asks.post_location(ask, SURFACE) is not None:
            return
        repo, number = where
        gh = await self._api(repo)
        comment_id = await self._find_post(gh, ask, repo, number)
        if comment_id is None:
            comment = await gh.post(
                ISSUE_COMMENTS, _vars(repo, number=number),
                data={"body": question_comment(ask, refs.ref(ask))},
            )
            comment_id = int(comment["id"])
        await self.asks.record_posted(
            ask, SURFACE, {"repo": repo, "number": number, "comment_id": comment_id},
            where=f"{repo}#{number}",
        )

    async def _find_post(self, gh: GitHubAPI, ask: AskRow, repo: str, number: int) -> int | None:
        """The comment an earlier attempt posted but did not live to record, by its marker."""
        since = datetime.fromtimestamp(ask.created_at - SINCE_SKEW_S, UTC)
        url_vars = {**_vars(repo, number=number), "per_page": str(PER_PAGE),
                    "since": since.strftime("%Y-%m-%dT%H:%M:%SZ")}
        wanted = marker(ask.id)
        async for comment in gh.getiter(LIST_COMMENTS, url_vars):
            if wanted in str(comment.get("body") or ""):
                return int(comment["id"])
        return None

    async def _close(self, ask: AskRow) -> None:
        await self._edit(ask, closed_comment(ask, refs.ref(ask)))

    async def _edit(self, ask: AskRow, body: str) -> None:
        """Rewrite the ask's question comment (closed, or a quorum's count so far)."""
        location = await self.asks.post_location(ask, SURFACE)
        if location is None:
            return  # never posted here (post_questions was off, or nobody here could answer)
        repo = str(location["repo"])
        gh = await self._api(repo)
        await gh.patch(
            COMMENT, _vars(repo, comment_id=int(location["comment_id"])), data={"body": body},
        )
        emit(log, "github.updated", ask=ask.id, ref=refs.ref(ask), status=ask.status)

    def _failed(
        self, exc: gidgethub.HTTPException, ask: AskRow, action: str, repo: str,
        installation_id: int | None,
    ) -> NoReturn:
        """Wait, retry or give up: RetryLater or the error for the outbox to retry, GiveUp for
        a dead letter (retrying cannot help: 404, 410, 422, a missing permission)."""
        what = disposition(exc, self.asks.clock.now())
        status = int(exc.status_code)
        if what.reauth:
            self.auth.forget(installation_id, repo)
        if what.wait is not None:
            # GitHub's surface waits only for its rate limits (a 429, or a 403 saying so).
            raise RetryLater(what.wait, f"github {status}", "rate_limited") from None
        if what.retry:
            raise exc  # the outbox's backoff
        emit(log, "github.gave_up", level=logging.WARNING, ask=ask.id, action=action,
             repo=repo, status=status)
        raise GiveUp(f"github refused {action}: HTTP {status}") from None

    # -- reactions -------------------------------------------------------------------------

    def _heard(self, said: Written) -> None:
        self.auth.remember(said.repo, said.installation_id)

    def _reaction(self, said: Written) -> FollowUp:
        """The outbox work for a reaction on an `/answer` comment; `taken` is added by the core."""
        return FollowUp(SURFACE, REACT, {
            "repo": said.repo,
            "comment_id": said.comment_id,
            "installation_id": said.installation_id,
        })

    async def _react_free(self, said: Written, content: str) -> None:
        self._spawn(self._react_soon({
            "repo": said.repo, "comment_id": said.comment_id, "content": content,
            "installation_id": said.installation_id,
        }))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _react_soon(self, payload: dict[str, Any]) -> None:
        """A reaction with no ask behind it: a few tries here, since the outbox needs an ask."""
        for attempt in range(BACKGROUND_ATTEMPTS):
            try:
                await self._react(payload)
                return
            except gidgethub.HTTPException as exc:
                what = disposition(exc, self.asks.clock.now())
                if what.give_up:
                    break
                if what.reauth:
                    self.auth.forget(payload.get("installation_id"), str(payload["repo"]))
                wait = what.wait if what.wait is not None else 2.0**attempt
            except (aiohttp.ClientError, TimeoutError):
                wait = 2.0**attempt
            await asyncio.sleep(min(wait, BACKGROUND_MAX_WAIT_S))
        emit(log, "github.reaction_dropped", level=logging.WARNING, repo=payload["repo"],
             comment=payload["comment_id"])


def _content(payload: dict[str, Any]) -> str:
    """The reaction: given outright, or earned by the answer's outcome (`taken`)."""
    return str(payload.get("content") or reaction_for(bool(payload.get("taken"))))
