"""The Slack surface: a Socket Mode connection in this process, and the Web API for the outbox.

Start-up never stops the HTTP API: a refused token is one clear log line and an unhealthy
/healthz, with posts left waiting in the outbox; an unreachable Slack is retried in the
background with backoff. Once connected, slack-sdk reconnects a lost connection by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import CLOSE, ESCALATE, POST, RAN, REMIND, UPDATE, GiveUp, RetryLater
from core.app.service import Service
from core.domain.logline import emit
from core.domain.responders import Responder
from handlers.slack import actions, errors, pacing, views
from handlers.slack.answer_taking import ASKS, TEAMS
from handlers.slack.authors import ThreadAuthors
from handlers.slack.errors import retry_after, slack_error
from handlers.slack.library_logs import library_logger, received
from handlers.slack.posts import Posts, work_thread
from handlers.slack.settings import SURFACE, SlackSection, SlackSettings

if TYPE_CHECKING:
    from aiohttp import web

    from core.app.ports import AskRow

log = logging.getLogger("aye.slack")

AUTH_TIMEOUT_S = 10.0
# connect_async() retries a refused or unreachable Socket Mode endpoint forever: bound it.
CONNECT_TIMEOUT_S = 10.0
PING_INTERVAL_S = 10.0
HTTP_TIMEOUT_S = 20
FIRST_RETRY_S = 2.0
MAX_RETRY_S = 300.0
RATE_LIMIT_RETRIES = 2
SERVER_ERROR_RETRIES = 2
CONNECTION_ERROR_RETRIES = 2
# A 429 asking to wait longer than this goes back to the outbox (RetryLater) instead of
# holding a delivery slot and the outbox row's claim while it sleeps.
MAX_INLINE_RETRY_AFTER_S = 10.0
# A refused bot token cannot get better without a restart; look again now and then anyway,
# as another process with a good token may have delivered meanwhile.
REFUSED_RETRY_S = 300.0
# What posts a message (chat.postMessage), paced per channel (handlers.slack.pacing); a close
# and a quorum's count update one (chat.update), which is not.
PACED = frozenset({POST, ESCALATE, REMIND})

# Slack errors that no retry can mend: the row becomes a dead letter (see core.app.ports).
PERMANENT = frozenset({
    "channel_not_found", "not_in_channel", "is_archived", "invalid_blocks", "msg_too_long",
    "missing_scope", "no_permission", "restricted_action", "invalid_metadata_format",
    "invalid_metadata_schema", "metadata_too_large", "invalid_arguments", "too_many_attachments",
    "thread_not_found", "user_not_in_channel", "team_access_not_granted",
})
OK, UNCHECKED, UNREACHABLE = "ok", "unchecked", "unreachable"
TOKEN_REFUSED_EFFECT = {
    "SLACK_BOT_TOKEN": "Slack is off until the token is fixed and aye restarted; the HTTP API "
    "keeps serving and Slack posts wait in the outbox",
    "SLACK_APP_TOKEN": "no Socket Mode: questions are posted but buttons do not answer until "
    "the token is fixed and aye restarted",
}


class ShortRateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """Waits out a 429's Retry-After in place, but only a short one."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        return retry_after(response.headers) <= MAX_INLINE_RETRY_AFTER_S


def _row_time(ask: AskRow, action: str) -> float:
    """When the outbox row for `action` was written: the order a channel's posts keep."""
    if action == ESCALATE and ask.escalated_at is not None:
        return ask.escalated_at
    if action == REMIND and ask.reminded_at is not None:
        return ask.reminded_at
    return ask.created_at


def _refused(status: str) -> bool:
    return status not in (OK, UNCHECKED, UNREACHABLE)


class SlackSurface:
    name = SURFACE

    def __init__(self, settings: SlackSettings, section: SlackSection, asks: Service) -> None:
        self._bot_token = settings.bot_token
        self._app_token = settings.app_token
        self._api_url = settings.api_url
        self._inbox_url = settings.inbox_url
        self._default_channel = section.default_channel
        self._other_teams = frozenset(section.teams)
        self._own_team: str | None = None  # from auth.test: until then nobody may answer
        self._asks = asks
        self._posts: Posts | None = None
        self._pacer = pacing.Pacer(pacing.DEFAULT_PACE)
        self._authors = ThreadAuthors()
        self._app: AsyncApp | None = None
        self._handler: AsyncSocketModeHandler | None = None
        self._retrying: asyncio.Task[None] | None = None
        self._auth = UNCHECKED
        self._app_auth = UNCHECKED

    # -- who and what ----------------------------------------------------------------------

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        if responder.kind != SURFACE:
            return False
        return work_thread(work) is not None or self._default_channel is not None

    def wants(self, ask: AskRow, action: str) -> bool:
        """A Slack thread's ask always; otherwise the default channel's, for Slack responders.
        The same for every action (a quorum's update and a reminder too): `deliver` does
        nothing for an ask that was never posted here."""
        if work_thread(ask.work) is not None:
            return True
        if self._default_channel is None:
            return False
        names = list(ask.responders)
        if action != POST:  # an escalation may be the first time a Slack person is asked
            names += ask.escalate_responders or []
        return any(name.partition(":")[0] == SURFACE for name in names)

    async def author(self, work: dict[str, Any]) -> str | None:
        """Who opened a Slack thread (see core.app.ports.AuthorSource): its first message's
        author, read from Slack; AuthorUnknown when Slack cannot say."""
        return await self._authors.author(self._posts.client if self._posts else None, work)

    def routes(self) -> list[web.RouteDef]:
        return []  # Socket Mode: Slack needs no route into this process

    def health(self) -> dict[str, Any]:
        return {
            "on": True,
            "connected": self._connected(),
            "auth": self._auth,
            "app_token": self._app_auth,
        }

    def _connected(self) -> bool:
        if self._handler is None:
            return False
        client = self._handler.client
        session = client.current_session
        return not client.closed and not client.stale and session is not None and not session.closed

    # -- start and stop ----------------------------------------------------------------------

    def _web_client(
        self, session: aiohttp.ClientSession, retries: list[AsyncRetryHandler]
    ) -> AsyncWebClient:
        return AsyncWebClient(
            token=self._bot_token,
            base_url=self._api_url,
            session=session,
            timeout=HTTP_TIMEOUT_S,
            retry_handlers=retries,
        )

    async def start(self, session: aiohttp.ClientSession) -> None:
        client = self._web_client(
            session,
            [
                ShortRateLimitRetry(max_retry_count=RATE_LIMIT_RETRIES),
                AsyncServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
                AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_ERROR_RETRIES),
            ],
        )
        # A post retried after a 5xx or a cut connection may already have been made: only a
        # 429 (certainly not posted) is retried in place; the outbox retries the rest, and
        # looks for the earlier post first.
        poster = self._web_client(
            session, [ShortRateLimitRetry(max_retry_count=RATE_LIMIT_RETRIES)]
        )
        self._posts = Posts(self._asks, client, poster, self._default_channel,
                            self._inbox_url)
        # bolt builds each listener's client from this one: same base_url, session, retries.
        # Its logger is given, held at warning: see handlers.slack.library_logs.
        self._app = AsyncApp(client=client, logger=library_logger())
        self._app.use(self._with_asks)
        actions.register(self._app)
        views.register(self._app)
        errors.register(self._app)
        if not await self._open():
            self._retrying = asyncio.create_task(self._keep_trying(), name="aye-slack-connect")

    async def _with_asks(
        self, context: AsyncBoltContext, next: Callable[[], Awaitable[None]],
        body: dict[str, Any] | None = None,
    ) -> None:
        """The one middleware: every listener finds the core, and the teams whose members may
        answer, in its context. (bolt passes each argument by its name.)"""
        emit(log, "slack.received", level=logging.DEBUG, **received(body or {}))
        context[ASKS] = self._asks
        context[TEAMS] = self.answering_teams()
        await next()

    def answering_teams(self) -> frozenset[str]:
        """aye's own team and the configured ones; none while aye's own is unknown (fail
        closed: a press is never taken on a guess about who pressed)."""
        if self._own_team is None:
            return frozenset()
        return self._other_teams | {self._own_team}

    async def close(self) -> None:
        if self._retrying is not None:
            self._retrying.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retrying
        if self._handler is not None:
            await self._handler.close_async()  # type: ignore[no-untyped-call]
            self._handler = None

    async def _keep_trying(self) -> None:
        wait = FIRST_RETRY_S
        while True:
            await asyncio.sleep(wait)
            if await self._open():
                return
            wait = min(wait * 2, MAX_RETRY_S)

    async def _open(self) -> bool:
        """One attempt at the whole start; True when done (connected, or a token refused)."""
        if self._auth != OK:
            self._auth = await self._check_bot_token()
            if self._auth != OK:
                return _refused(self._auth)
        if self._app_auth != OK:
            self._app_auth = await self._check_app_token()
            if self._app_auth != OK:
                return _refused(self._app_auth)
        return await self._connect()

    async def _check(self, call: str, token_env: str) -> tuple[str, dict[str, Any]]:
        """Call `auth.test` or `apps.connections.open`: ("ok", data), or why not."""
        assert self._posts is not None
        client = self._posts.client
        try:
            if call == "auth.test":
                reply = await asyncio.wait_for(client.auth_test(), AUTH_TIMEOUT_S)
            else:
                reply = await asyncio.wait_for(
                    client.apps_connections_open(app_token=self._app_token), AUTH_TIMEOUT_S
                )
        except SlackApiError as exc:
            status = exc.response.status_code
            if status == 429 or status >= 500:
                self._unreachable(call, slack_error(exc))
                return UNREACHABLE, {}
            code = slack_error(exc) or "refused"
            self._token_refused(token_env, code)
            return code, {}
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            self._unreachable(call, exc.__class__.__name__)
            return UNREACHABLE, {}
        return OK, dict(reply.data) if isinstance(reply.data, dict) else {}

    async def _check_bot_token(self) -> str:
        # AsyncApp does not check its token: ask Slack, to fail clearly on invalid_auth.
        status, data = await self._check("auth.test", "SLACK_BOT_TOKEN")
        if status == OK and self._posts is not None:
            self._posts.bot_id = data.get("bot_id")
            team = data.get("team_id")
            self._own_team = team if isinstance(team, str) and team else None
        return status

    async def _check_app_token(self) -> str:
        # With a refused xapp- token connect_async() would retry forever without a word.
        status, _ = await self._check("apps.connections.open", "SLACK_APP_TOKEN")
        return status

    async def _connect(self) -> bool:
        assert self._app is not None
        # Built here, inside the running loop: it creates a session and a task on creation.
        handler = AsyncSocketModeHandler(self._app, self._app_token, ping_interval=PING_INTERVAL_S)
        connecting = handler.connect_async()  # type: ignore[no-untyped-call]
        try:
            await asyncio.wait_for(connecting, CONNECT_TIMEOUT_S)
        except TimeoutError:
            await handler.close_async()  # type: ignore[no-untyped-call]
            self._unreachable("socket mode", "timeout")
            return False
        except asyncio.CancelledError:
            # Shut down mid-connect: the handler's own session and tasks must not outlive us.
            await handler.close_async()  # type: ignore[no-untyped-call]
            raise
        self._handler = handler
        emit(log, "slack.connected", api=self._api_url)
        return True

    def _token_refused(self, token_env: str, code: str) -> None:
        # One line, however often deliveries meet the same refusal afterwards.
        effect = TOKEN_REFUSED_EFFECT.get(token_env, "")
        emit(log, "slack.token_refused", level=logging.ERROR, token=token_env, slack_error=code,
             effect=effect)

    def _unreachable(self, what: str, why: str | None) -> None:
        emit(log, "slack.unreachable", level=logging.WARNING, call=what, error=why,
             effect="retrying in the background")

    # -- the outbox --------------------------------------------------------------------------

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        if _refused(self._auth):
            raise RetryLater(REFUSED_RETRY_S, f"slack bot token refused: {self._auth}")
        if self._posts is None:
            raise RetryLater(FIRST_RETRY_S, "slack is not started")
        emit(log, "slack.delivering", level=logging.DEBUG, id=ask.id, action=action)
        try:
            if action in PACED:
                await self._post(self._posts, ask, action)
            elif action in (CLOSE, RAN):  # what ran shows beside how it closed
                await self._posts.close(ask)
            elif action == UPDATE:
                await self._posts.update(ask)
            else:
                emit(log, "slack.unknown_action", level=logging.WARNING, id=ask.id, action=action)
        except SlackApiError as exc:
            raise self._failed(ask, action, exc) from None

    async def _post(self, posts: Posts, ask: AskRow, action: str) -> None:
        """A delivery that posts takes its place in its channel's line first, before it looks
        for an earlier post: the line keeps the order the outbox gave. The ask's channel is
        where its escalation and reminder go too (its thread); should the default channel
        change meanwhile, they are paced in the new one's line."""
        target = posts.target(ask)
        channel = target.channel if target else None
        async with self._pacer.turn(channel, (ask.id, action), _row_time(ask, action)) as turn:
            if action == POST:
                await posts.post(ask, turn)
            elif action == ESCALATE:
                await posts.escalate(ask, turn)
            else:
                await posts.remind(ask, turn)

    def _failed(self, ask: AskRow, action: str, exc: SlackApiError) -> Exception:
        """What to raise to the delivery loop for a failed Slack call."""
        code = slack_error(exc)
        status = exc.response.status_code
        emit(log, "slack.call_failed", level=logging.WARNING, id=ask.id, action=action,
             status=status, slack_error=code)
        if status == 429:
            return RetryLater(retry_after(exc.response.headers), "slack rate limited",
                              "rate_limited")
        if code in ("invalid_auth", "not_authed", "account_inactive", "token_revoked",
                    "token_expired"):
            if not _refused(self._auth):
                self._auth = code or "refused"
                self._token_refused("SLACK_BOT_TOKEN", self._auth)
            return RetryLater(REFUSED_RETRY_S, f"slack bot token refused: {code}")
        if code in PERMANENT:
            # Retrying cannot help: the channel, the permission or the message is what it is.
            return GiveUp(f"slack refused {action}: {code}")
        return exc
