"""Signing in as a person: `GET /login/<provider>` sends the browser to the provider with a
fresh `state` (bound to this browser, handlers/web/passage.py), PKCE and a nonce;
`GET /login/<provider>/callback` takes it back. Only when the state is this browser's and
unused, the code is exchanged and the person known (an ID token checked in full, or GitHub's
`GET /user`) does a session start. Anything else sends the browser to /login, which says in one
sentence what went wrong, and leaves no session and no cookie behind.

The callback answers with a small page of aye's own that goes on to the inbox: the session
cookie is SameSite=Strict, and a redirect straight from the callback still belongs to the
provider's cross-site navigation, on which the browser would not send it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from core.app.service import Service, Session, Sessions
from core.domain.logline import emit
from handlers.web import idtoken, oauth
from handlers.web.guard import LOGIN, SESSION, safe_back, session_cookie
from handlers.web.identities import identity_of
from handlers.web.passage import PASSAGE_S, Passage, Passages
from handlers.web.providers import Provider

log = logging.getLogger("aye.web")

Render = Callable[[web.Request, str, dict[str, Any]], web.Response]
SIGN_INS: web.AppKey[SignIns] = web.AppKey("web_sign_ins")
# Where a spent state is remembered (the store's table of things seen once), for every process.
SPENT = "sign-in"
# What /login says for each way a sign-in fails, one sentence each; `{name}` is the provider.
REFUSALS = {
    "denied": "Sign-in with {name} was cancelled, so you are not signed in.",
    "stale": "That sign-in was not begun in this browser, took too long or was used already: "
             "start again.",
    oauth.REFUSED: "{name} could not confirm who you are, so you are not signed in.",
    oauth.UNREACHABLE: "{name} could not be reached, so you are not signed in: try again in a "
                       "moment.",
    "team": "Only members of this Slack workspace can sign in here.",
    "unverified": "{name} has not verified your email address, so it cannot sign you in.",
}


class SignIns:
    """The sign-ins /login offers, in order, and their two routes each."""

    def __init__(self, providers: Sequence[Provider], passages: Passages, sessions: Sessions,
                 asks: Service, origin: str, render: Render) -> None:
        self.providers = {p.name: p for p in providers}
        self.passages, self.sessions, self.asks = passages, sessions, asks
        self.origin = origin.rstrip("/")
        self.render = render
        self.http = oauth.Http()
        self.discovery = oauth.Discovery(self.http)
        self.keys = idtoken.Keys(self.discovery)

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/login/{provider}", self.begin),
                web.get("/login/{provider}/callback", self.callback)]

    def methods(self) -> list[str]:
        """How one may sign in, as /healthz says it: the token, then each provider."""
        return ["token", *self.providers]

    def offers(self, following: str) -> list[dict[str, str]]:
        """The buttons of /login: what each says and where it goes (a plain GET link: a form
        sent to aye that redirects to the provider would break CSP's form-action 'self')."""
        query = "" if following == "/inbox" else "?" + urlencode({"next": following})
        return [{"words": f"Sign in with {p.label}", "href": f"/login/{p.name}{query}",
                 "name": p.name} for p in self.providers.values()]

    def refusal(self, reason: str | None, name: str | None) -> str | None:
        """The sentence /login shows after a failed sign-in (None: there was none)."""
        if reason not in REFUSALS:
            return None
        provider = self.providers.get(name or "")
        return REFUSALS[reason].format(name=provider.label if provider else "The provider")

    def redirect_uri(self, provider: Provider) -> str:
        return f"{self.origin}/login/{provider.name}/callback"

    async def begin(self, request: web.Request) -> web.StreamResponse:
        provider = self._provider(request)
        following = safe_back(request.query.get("next"))
        passage, cookie = self.passages.begin(provider.name, following)
        try:
            where = await oauth.authorize_url(
                self.discovery, provider, self.redirect_uri(provider), passage.state,
                self.passages.nonce(passage), self.passages.verifier(passage))
        except oauth.Refused as refused:
            return self._refused(request, provider, refused, following)
        response = web.Response(status=302, headers={"Location": where})
        response.set_cookie(self.passages.cookie, cookie, max_age=PASSAGE_S, path="/",
                            httponly=True, samesite="Lax", secure=self.passages.secure)
        return response

    async def callback(self, request: web.Request) -> web.StreamResponse:
        provider = self._provider(request)
        query = request.query
        passage = self.passages.read(request.cookies.get(self.passages.cookie), provider.name,
                                     query.get("state"))
        following = passage.following if passage else "/inbox"
        try:
            if passage is None or not await self._spend(passage):
                raise oauth.Refused("stale", "state missing, changed, stale or used")
            if "error" in query:
                why = "denied" if query["error"] == "access_denied" else oauth.REFUSED
                raise oauth.Refused(why, f"error {query['error'][:40]}")
            identity = await self._identity(provider, passage, query.get("code"))
        except oauth.Refused as refused:
            return self._refused(request, provider, refused, following)
        return await self._signed_in(request, provider, identity, following)

    def _provider(self, request: web.Request) -> Provider:
        provider = self.providers.get(request.match_info["provider"])
        if provider is None:
            raise web.HTTPNotFound()
        return provider

    async def _spend(self, passage: Passage) -> bool:
        """True the first time this state comes back, on any process of the store."""
        key = hashlib.sha256(passage.state.encode()).hexdigest()
        return await self.asks.first_delivery(f"{SPENT}:{key}", SPENT)

    async def _identity(self, provider: Provider, passage: Passage, code: str | None) -> str:
        if not code:
            raise oauth.Refused(oauth.REFUSED, "no code")
        token = await oauth.exchange(self.discovery, provider, code, self.redirect_uri(provider),
                                     self.passages.verifier(passage))
        if provider.issuer is None:
            return identity_of(provider, {"login": await oauth.github_login(
                self.http, provider, token["access_token"])})
        claims = await idtoken.check(self.keys, provider, token, self.passages.nonce(passage),
                                     self.asks.clock.now())
        return identity_of(provider, claims)

    async def _signed_in(self, request: web.Request, provider: Provider, identity: str,
                         following: str) -> web.Response:
        before: Session | None = request.get(SESSION)
        if before is not None:  # signing in again: the older session ends
            await self.sessions.end(before)
            request[SESSION] = None  # and this page is not of it (no CSRF token, no Sign out)
        session = await self.sessions.start(identity, provider.name)
        emit(log, "web.signed_in", method=provider.name, who=identity)
        response = self.render(request, "signed_in.html", {"next": following, "who": identity})
        session_cookie(response, self.sessions, session)
        self._forget(response)
        return response

    def _refused(self, request: web.Request, provider: Provider, refused: oauth.Refused,
                 following: str) -> web.Response:
        emit(log, "web.sign_in_refused", level=logging.WARNING, method=provider.name,
             reason=refused.reason, detail=refused.detail)
        query = {"failed": refused.reason, "via": provider.name}
        if following != "/inbox":
            query["next"] = following
        response = web.Response(status=303, headers={"Location": f"{LOGIN}?{urlencode(query)}"})
        self._forget(response)
        return response

    def _forget(self, response: web.StreamResponse) -> None:
        response.del_cookie(self.passages.cookie, path="/", secure=self.passages.secure,
                            httponly=True, samesite="Lax")
