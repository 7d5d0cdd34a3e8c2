"""What every inbox request goes through: the session, looked up in the store (no session: to
/login), the CSRF token of every POST (checked before any handler runs, so a refused POST
changes nothing), a bounded form body, and the security headers on every response, errors and
redirects included."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import urlencode

from aiohttp import web
from multidict import MultiDictProxy

from core.app.service import SESSION_S, Session, Sessions
from handlers.kit.forms import BadForm, protect, read_form


class Inbox(Protocol):
    """What the guard needs of the inbox (handlers/web/pages.py): its sessions, and its page
    that says what went wrong."""

    sessions: Sessions

    def problem(self, request: web.Request, status: int, heading: str, words: str, link: str,
                link_words: str) -> web.Response: ...


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

LOGIN, LOGOUT, ASSETS = "/login", "/logout", "/inbox/assets/"
# The one route outside the inbox that takes its session: the page's live updates.
EVENTS = "/v1/events"
# Where a form may send the browser back to: an inbox page of this site, never elsewhere.
BACK = re.compile(r"/inbox(/[0-9A-Za-z]{1,32})?(\?[0-9A-Za-z=&_%.-]{0,200})?")
WEB: web.AppKey[Inbox] = web.AppKey("web_inbox")
# The request's session once looked up (None: none); absent until then.
SESSION: web.RequestKey[Session | None] = web.RequestKey("web_session")
FORM = web.RequestKey("web_form", MultiDictProxy[str])


def is_inbox(path: str) -> bool:
    return path in ("/", LOGIN, LOGOUT, "/inbox") or path.startswith(("/inbox/", f"{LOGIN}/"))


def is_sign_in(path: str) -> bool:
    """/login and a person's sign-in (`/login/<provider>` and its callback): open to anyone."""
    return path == LOGIN or path.startswith(f"{LOGIN}/")


def safe_back(text: str | None, default: str = "/inbox") -> str:
    """`text` when it is an inbox page of this site, else `default`: no open redirect."""
    return text if text and BACK.fullmatch(text) else default


def login_url(request: web.Request) -> str:
    here = request.path_qs
    return LOGIN if here == "/inbox" or not BACK.fullmatch(here) else f"{LOGIN}?{urlencode({'next': here})}"


def session_cookie(response: web.StreamResponse, sessions: Sessions, session: Session) -> None:
    """The session's cookie, however it was signed in: HttpOnly, SameSite=Strict, Path=/,
    Secure with https, for as long as the session lasts."""
    response.set_cookie(sessions.cookie, session.secret, max_age=SESSION_S, path="/",
                        httponly=True, samesite="Strict", secure=sessions.secure)


def inbox_of(request: web.Request) -> Inbox:
    return request.app[WEB]


async def session_of(request: web.Request) -> Session | None:
    """The request's live session: one lookup in the store, made once per request."""
    if SESSION in request:
        return request[SESSION]
    found, inbox = None, request.config_dict.get(WEB)
    if inbox is not None:  # without a cookie of ours, find() looks nothing up
        found = await inbox.sessions.find(request.cookies.get(inbox.sessions.cookie))
    request[SESSION] = found
    return found


# The two middlewares below are plain functions that hand back the awaitable of what they
# pass a request on to: on every request but theirs they add no coroutine of their own (CPU per
# request, and the memory a parked `wait` holds: bench/).


@web.middleware
def events_session(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """Before the API's bearer check: GET /v1/events takes the inbox's session, which that
    check reads without waiting (`operator_session`), so it is looked up here."""
    if request.path == EVENTS:
        return _with_session(request, handler)
    return handler(request)


async def _with_session(request: web.Request, handler: Handler) -> web.StreamResponse:
    await session_of(request)
    return await handler(request)


@web.middleware
def guard(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    return _protected(request, handler) if is_inbox(request.path) else handler(request)


async def _protected(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await _guarded(request, handler)
    except web.HTTPException as exc:
        protect(exc.headers)
        raise
    protect(response.headers)
    return response


async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    inbox = inbox_of(request)
    path, post = request.path, request.method == "POST"
    if path == "/" or path.startswith(ASSETS):
        return await handler(request)  # no session needed: no lookup
    session = await session_of(request)
    # Signing out of a session that has already ended (elsewhere, or expired) still deletes
    # the browser's cookie: nothing to protect, so no CSRF token to check.
    if is_sign_in(path) or (path == LOGOUT and session is None):
        return await handler(request)
    if session is None:
        if post:
            return inbox.problem(request, 403, "Your session has ended",
                                 "Nothing was changed. Sign in again, then answer once more.",
                                 LOGIN, "Sign in")
        raise web.HTTPFound(login_url(request))
    if post:
        try:
            form = await read_form(request)
        except BadForm as bad:
            return inbox.problem(request, bad.status, "That form could not be used", bad.words,
                                 "/inbox", "Back to the inbox")
        if not inbox.sessions.csrf_ok(session, form.get("csrf")):
            return inbox.problem(request, 403, "That form is stale",
                                 "It did not carry this session's token, so nothing was changed. "
                                 "Reload the page and try again.", "/inbox", "Back to the inbox")
        request[FORM] = form
    return await handler(request)
