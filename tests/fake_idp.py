"""A fake OpenID Connect provider on 127.0.0.1, for the inbox's sign-ins: the organisation's
provider, or, with `slack=True`, "Sign in with Slack" (Slack's paths and its
`https://slack.com/user_id` and `https://slack.com/team_id` claims).

It speaks the authorization code flow as a strict provider does: discovery, an authorize
endpoint that checks the client, the registered redirect URI, `state`, `nonce` and a PKCE S256
challenge (nothing else) and sends the browser back with a code; a token endpoint that takes
each code once, with the client's secret (Basic or in the body) and the code verifier; RS256
ID tokens signed with a key it made, published in its JWKS (signed by PyJWT, an implementation
other than the one aye checks with); and a userinfo endpoint. What it refused, and why, is in
`refusals`: a test of a good sign-in asserts it stays empty.

It misbehaves on demand (`misbehave`): one of MISBEHAVIOURS. With `consent=True` the
authorize endpoint shows a page of its own with an "Allow" and a "Deny" link, as a provider
asking the person does, in place of sending the browser straight back.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import itertools
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.local_server import LocalServer

CLIENT_ID = "aye-inbox"
CLIENT_SECRET = "idp-client-secret"
SLACK_USER_CLAIM = "https://slack.com/user_id"
SLACK_TEAM_CLAIM = "https://slack.com/team_id"
OTHER_TEAM = "T0456OTHER"
ID_TOKEN_S = 300
# What the fake can get wrong, each on its own:
MISBEHAVIOURS = {
    "denied": "the person refuses: back with error=access_denied",
    "nonce": "the ID token carries another nonce",
    "audience": "the ID token is for another client",
    "expired": "the ID token expired an hour ago",
    "signature": "the ID token is signed with another key (under the published key's kid)",
    "other_team": "the person is a member of another Slack workspace",
    "unverified": "email_verified is false",
    "refuse_token": "the token endpoint refuses the code (invalid_grant)",
    "hang_up": "the token endpoint drops the connection",
}


# RSA keys take a while to make: each process makes a few once, and each provider takes the
# next two (its own, and the wrong one), so two providers started one after the other differ.
KEY_POOL = 4
_providers = itertools.count()


@functools.cache
def _pool() -> tuple[rsa.RSAPrivateKey, ...]:
    return tuple(rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(KEY_POOL))


@dataclass
class Person:
    """Who signs in at the provider (the fake asks no password: it is always them)."""

    sub: str = "U0AYEADA1"
    email: str = "Ada@Example.com"
    email_verified: bool = True
    name: str = "Ada"
    team: str = "T0AYETEAM"  # with slack=True: their workspace


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str
    scope: list[str]


@dataclass
class FakeIdP(LocalServer):
    slack: bool = False
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    person: Person = field(default_factory=Person)
    misbehave: str | None = None
    consent: bool = False
    redirect_uris: set[str] = field(default_factory=set)  # registered: aye's callback
    refusals: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # "GET /authorize" etc., in order

    def __post_init__(self) -> None:
        super().__init__()
        self.name = "fake Slack OpenID provider" if self.slack else "fake OpenID provider"
        turn = next(_providers) * 2
        self._key, self._other_key = _pool()[turn % KEY_POOL], _pool()[(turn + 1) % KEY_POOL]
        self.kid = secrets.token_hex(8)
        self._codes: dict[str, Grant] = {}
        self._tokens: dict[str, dict[str, Any]] = {}

    # -- where things are ------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        return self.base_url

    def path(self, what: str) -> str:
        slack = {"authorize": "/openid/connect/authorize", "token": "/api/openid.connect.token",
                 "jwks": "/openid/connect/keys", "userinfo": "/api/openid.connect.userInfo"}
        return slack[what] if self.slack else f"/{what}"

    async def start(self) -> None:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_get(self.path("authorize"), self._authorize)
        app.router.add_post(self.path("token"), self._token)
        app.router.add_get(self.path("jwks"), self._jwks)
        app.router.add_get(self.path("userinfo"), self._userinfo)
        await self._serve(app)

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.calls.append(f"{request.method} {request.path}")
        response: web.StreamResponse = await handler(request)
        return response

    def _refuse(self, status: int, error: str, why: str) -> web.Response:
        self.refusals.append(why)
        return web.json_response({"error": error, "error_description": why}, status=status)

    # -- the endpoints -----------------------------------------------------------------------

    async def _discovery(self, request: web.Request) -> web.Response:
        base = self.issuer
        return web.json_response({
            "issuer": base,
            "authorization_endpoint": base + self.path("authorize"),
            "token_endpoint": base + self.path("token"),
            "userinfo_endpoint": base + self.path("userinfo"),
            "jwks_uri": base + self.path("jwks"),
            "scopes_supported": ["openid", "profile", "email"],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "email",
                                 "email_verified", "name"],
        })

    async def _authorize(self, request: web.Request) -> web.Response:
        q = request.query
        # A client or redirect URI it does not know: never redirect (RFC 6749 4.1.2.1).
        if q.get("client_id") != self.client_id:
            return self._refuse(400, "invalid_client", "unknown client_id")
        if q.get("redirect_uri") not in self.redirect_uris:
            return self._refuse(400, "invalid_request", f"unregistered redirect_uri {q.get('redirect_uri')}")
        problem = _authorize_problem(q)
        if problem is not None:
            self.refusals.append(problem)
            return _back(q["redirect_uri"], {"error": "invalid_request", "error_description": problem,
                                             "state": q.get("state", "")})
        if self.misbehave == "denied":
            return _back(q["redirect_uri"], {"error": "access_denied", "state": q["state"]})
        code = secrets.token_urlsafe(24)
        self._codes[code] = Grant(q["client_id"], q["redirect_uri"], q["code_challenge"], q["nonce"],
                                  q["scope"].split())
        allow = {"code": code, "state": q["state"]}
        if self.consent:
            deny = {"error": "access_denied", "state": q["state"]}
            return _consent(q["redirect_uri"], allow, deny)
        return _back(q["redirect_uri"], allow)

    async def _token(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        client_id, secret = _client_auth(request, form)
        if client_id != self.client_id or secret != self.client_secret:
            return self._refuse(401, "invalid_client", "wrong client id or secret")
        if form.get("grant_type") != "authorization_code":
            return self._refuse(400, "unsupported_grant_type", "not authorization_code")
        grant = self._codes.pop(str(form.get("code", "")), None)  # a code is good once
        if grant is None or grant.client_id != client_id:
            return self._refuse(400, "invalid_grant", "unknown or used code")
        if form.get("redirect_uri") != grant.redirect_uri:
            return self._refuse(400, "invalid_grant", "redirect_uri differs from the authorize request's")
        if _s256(str(form.get("code_verifier", ""))) != grant.challenge:
            return self._refuse(400, "invalid_grant", "code_verifier does not match the challenge")
        if self.misbehave == "refuse_token":
            return self._refuse(400, "invalid_grant", "refused on purpose")
        if self.misbehave == "hang_up":
            assert request.transport is not None
            request.transport.abort()  # aye sees the connection drop before any reply
            return web.Response()
        access = secrets.token_urlsafe(24)
        claims = self._claims(grant, access)
        self._tokens[access] = claims
        key = self._other_key if self.misbehave == "signature" else self._key
        id_token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})
        return web.json_response({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                                  "id_token": id_token, "scope": " ".join(grant.scope)},
                                 headers={"Cache-Control": "no-store"})

    def _claims(self, grant: Grant, access: str) -> dict[str, Any]:
        now, who, bad = int(time.time()), self.person, self.misbehave
        claims: dict[str, Any] = {
            "iss": self.issuer, "sub": who.sub, "iat": now, "exp": now + ID_TOKEN_S,
            "aud": "another-client" if bad == "audience" else grant.client_id,
            "nonce": "not-" + grant.nonce if bad == "nonce" else grant.nonce,
            "at_hash": _at_hash(access), "auth_time": now,
            "email": who.email, "email_verified": who.email_verified and bad != "unverified",
            "name": who.name,
        }
        if bad == "expired":
            claims.update(iat=now - 2 * 3600, exp=now - 3600, auth_time=now - 2 * 3600)
        if self.slack:
            claims[SLACK_USER_CLAIM] = who.sub
            claims[SLACK_TEAM_CLAIM] = OTHER_TEAM if bad == "other_team" else who.team
        return claims

    async def _jwks(self, request: web.Request) -> web.Response:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key()))
        jwk.update(kid=self.kid, alg="RS256", use="sig")
        return web.json_response({"keys": [jwk]})

    async def _userinfo(self, request: web.Request) -> web.Response:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        claims = self._tokens.get(token) if scheme.lower() == "bearer" else None
        if claims is None:
            return self._refuse(401, "invalid_token", "unknown access token")
        keep = ("sub", "email", "email_verified", "name", SLACK_USER_CLAIM, SLACK_TEAM_CLAIM)
        return web.json_response({k: v for k, v in claims.items() if k in keep})


def _authorize_problem(q: Any) -> str | None:
    """What a strict provider refuses in an authorization request, or None."""
    if q.get("response_type") != "code":
        return "response_type must be code"
    if "openid" not in q.get("scope", "").split():
        return "scope must include openid"
    if not q.get("state") or not q.get("nonce"):
        return "state and nonce are required"
    if q.get("code_challenge_method") != "S256":
        return "PKCE with S256 is required"
    challenge = q.get("code_challenge", "")
    if len(challenge) != 43 or not challenge.replace("-", "").replace("_", "").isalnum():
        return "code_challenge is not a SHA-256 in base64url"
    return None


def _back(redirect_uri: str, params: dict[str, str]) -> web.Response:
    return web.Response(status=302, headers={"Location": f"{redirect_uri}?{urlencode(params)}"})


def _consent(redirect_uri: str, allow: dict[str, str], deny: dict[str, str]) -> web.Response:
    links = "".join(f'<a href="{html.escape(redirect_uri)}?{html.escape(urlencode(q))}">{words}</a> '
                    for words, q in (("Allow", allow), ("Deny", deny)))
    return web.Response(text=f"<!doctype html><title>Sign in</title><p>aye asks who you are. {links}</p>",
                        content_type="text/html")


def _client_auth(request: web.Request, form: Any) -> tuple[str | None, str | None]:
    """client_secret_basic or client_secret_post, whichever the client used."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "basic":
        ident, _, secret = base64.b64decode(value).decode().partition(":")
        return ident, secret
    return form.get("client_id"), form.get("client_secret")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _s256(verifier: str) -> str:
    if not 43 <= len(verifier) <= 128:
        return "(a code verifier must have 43 to 128 characters)"
    return _b64(hashlib.sha256(verifier.encode()).digest())


def _at_hash(access_token: str) -> str:
    return _b64(hashlib.sha256(access_token.encode()).digest()[:16])
