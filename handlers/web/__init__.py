"""The web inbox: the operator signs in with the operator token, sees what waits for an answer
and answers it from a browser. Server-rendered HTML (Jinja2, autoescaped) that works with plain
forms; one small script adds live updates from the event stream (`/v1/events`, which accepts
the inbox's session cookie through `operator_session`, once `events_session` has looked it up).

People sign in as themselves through the providers set up (handlers/web/signin.py): the
composition root reads them (handlers/web/providers.py), hands them to `setup` with the origin
their redirect URIs start with, and gives the sign-ins its one HTTP session at start
(`sign_ins(app).http.use(session)`).

The composition root calls `setup(app, asks, operator_ok, secure, session_key, …)` once, before
the app starts, and puts `events_session` among its middlewares before the API's bearer check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources

from aiohttp import web

from core.app.service import Service
from core.domain.responders import OPERATOR
from handlers.web.failures import SignInFailures
from handlers.web.flash import Flashes
from handlers.web.guard import SESSION, WEB, events_session, guard
from handlers.web.pages import TEMPLATES, Inbox
from handlers.web.passage import Passages
from handlers.web.providers import Provider
from handlers.web.rendering import Templates
from handlers.web.signin import SIGN_INS, SignIns

__all__ = ["events_session", "operator_session", "operator_session_alive", "setup", "sign_ins"]

ASSETS = {"inbox.css": "text/css", "inbox.js": "text/javascript", "signin.css": "text/css"}


def setup(
    app: web.Application, asks: Service, operator_ok: Callable[[str], bool], secure: bool,
    session_key: bytes, providers: Sequence[Provider] = (), origin: str = "",
    public_url: str | None = None,
) -> None:
    """Add the inbox's routes, its templates and its guard to `app`.

    `operator_ok(text)` says whether `text` is the operator token; `secure`: aye is served
    over https (the cookie is then Secure); `session_key` keys the sessions' hashes, their CSRF
    tokens, the flash cookies and the sign-ins under way: derive it from the operator token, so
    that a new token ends every session. Sessions are kept in the store, through
    `asks.sessions`. `providers`: the person's sign-ins /login offers, in order; `origin`: where
    browsers reach aye, which their redirect URIs (`<origin>/login/<name>/callback`) start with;
    `public_url`: AYE_PUBLIC_URL, where a receipt's line fetches the keys (None: where the
    browser reached aye)."""
    now = asks.clock.now
    sessions = asks.sessions(session_key, secure)
    inbox = Inbox(asks, operator_ok, sessions, Flashes(session_key, now), SignInFailures(),
                  public_url)
    app[WEB] = inbox
    app[SIGN_INS] = SignIns(providers, Passages(session_key, secure, now), sessions, asks, origin,
                            inbox.render)
    files = {name: (resources.files("handlers.web") / "static" / name).read_bytes() for name in ASSETS}
    versions = {name: hashlib.sha256(body).hexdigest()[:12] for name, body in files.items()}
    app[TEMPLATES] = Templates({
        "css": f"/inbox/assets/inbox.css?v={versions['inbox.css']}",
        "js": f"/inbox/assets/inbox.js?v={versions['inbox.js']}",
        "signin": f"/inbox/assets/signin.css?v={versions['signin.css']}",
    })
    app.middlewares.append(guard)
    app.add_routes(inbox.routes())
    app.add_routes(app[SIGN_INS].routes())
    app.add_routes([web.get("/inbox/assets/{name}", _asset_handler(files, versions))])


def sign_ins(app: web.Application) -> SignIns:
    """The inbox's sign-ins: which there are (/healthz), and their HTTP session to be given."""
    return app[SIGN_INS]


async def operator_session_alive(request: web.Request) -> bool:
    """Whether the request's inbox session is still the operator's, looked up again in the
    store (an open event stream asks at each heartbeat: a Sign out anywhere ends it)."""
    inbox = request.config_dict.get(WEB)
    if inbox is None:
        return False
    found = await inbox.sessions.find(request.cookies.get(inbox.sessions.cookie))
    return found is not None and found.identity == str(OPERATOR)


def operator_session(request: web.Request) -> bool:
    """Whether the request carries a live inbox session of the operator's, as `events_session`
    found it in the store (without that middleware, never)."""
    session = request.get(SESSION)
    return session is not None and session.identity == str(OPERATOR)


def _asset_handler(
    files: dict[str, bytes], versions: dict[str, str]
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in files:
            raise web.HTTPNotFound()
        etag = f'"{versions[name]}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=files[name], headers=headers,
                            content_type=ASSETS[name], charset="utf-8")

    return asset
