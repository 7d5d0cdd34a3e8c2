"""The provider's side of a sign-in, over aye's one aiohttp session: discovery, the
authorization URL (with `state`, PKCE S256 and, for OpenID Connect, `nonce`), the code's
exchange at the token endpoint, and who the person is (a checked ID token, or GitHub's
`GET /user`).

authlib writes the protocol's messages (authorization and token requests, client
authentication, the PKCE challenge) and checks the ID token's claims (handlers/web/idtoken.py);
aiohttp carries them. authlib's own async clients are built on httpx, a second HTTP stack
beside the shared aiohttp session with its own proxy, timeout and TLS behaviour: not used.
"""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp

from handlers.web.providers import OIDC_SCOPES, Provider

TIMEOUT = aiohttp.ClientTimeout(total=10)
DISCOVERY_S = 3600.0  # how long a provider's discovery document is trusted before asking again
MAX_REPLY = 256 * 1024
USER_AGENT = "aye (sign-in)"
# Endpoints discovery must give for a code flow with a checked ID token.
NEEDED = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")


class Refused(Exception):
    """Nobody is signed in: `reason` picks the sentence /login shows, `detail` goes to the
    log only (never a token, a code or a secret)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


REFUSED, UNREACHABLE = "refused", "unreachable"


class Http:
    """Requests to providers; `use(session)` hands it the process's session at start."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None

    def use(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def json(self, method: str, url: str, what: str, **kwargs: Any) -> tuple[int, Any]:
        """The reply's status and JSON body; Refused(unreachable) when there is none."""
        if self.session is None:
            raise Refused(UNREACHABLE, f"{what}: not started")
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
        try:
            async with self.session.request(method, url, headers=headers, timeout=TIMEOUT,
                                            allow_redirects=False, **kwargs) as resp:
                raw = await _bounded(resp)
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise Refused(UNREACHABLE, f"{what}: {exc.__class__.__name__}") from None
        try:
            return status, json.loads(raw) if raw is not None else None
        except ValueError:
            return status, None


async def _bounded(resp: aiohttp.ClientResponse) -> bytes | None:
    """The reply's body, or None past MAX_REPLY (a provider has no reason to send more)."""
    chunks, size = [], 0
    async for chunk in resp.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_REPLY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class Discovery:
    """Each OpenID Connect issuer's discovery document, fetched when first needed."""

    def __init__(self, http: Http) -> None:
        self.http = http
        self._found: dict[str, tuple[float, dict[str, Any]]] = {}

    async def of(self, issuer: str) -> dict[str, Any]:
        kept = self._found.get(issuer)
        if kept is not None and time.monotonic() - kept[0] < DISCOVERY_S:
            return kept[1]
        url = f"{issuer}/.well-known/openid-configuration"
        status, doc = await self.http.json("GET", url, "discovery")
        if status != 200 or not isinstance(doc, dict):
            raise Refused(UNREACHABLE, f"discovery: status {status}")
        if any(not isinstance(doc.get(k), str) for k in NEEDED):
            raise Refused(REFUSED, "discovery: an endpoint is missing")
        # OpenID Connect Discovery 1.0, 4.3: the document must name the issuer it came from.
        if doc["issuer"].rstrip("/") != issuer:
            raise Refused(REFUSED, "discovery: another issuer")
        self._found[issuer] = (time.monotonic(), doc)
        return doc


async def authorize_url(discovery: Discovery, provider: Provider, redirect_uri: str, state: str,
                        nonce: str, verifier: str) -> str:
    """Where the browser goes to sign in at `provider`."""
    # authlib (with joserfc and cryptography, ~10 MB) is loaded at the first sign-in, not by
    # every process: most never have one.
    from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    pkce = {"code_challenge": create_s256_code_challenge(verifier), "code_challenge_method": "S256"}
    if provider.issuer is not None:
        doc = await discovery.of(provider.issuer)
        return str(prepare_grant_uri(doc["authorization_endpoint"], provider.client.id, "code",
                                     redirect_uri, list(OIDC_SCOPES), state, nonce=nonce, **pkce))
    # GitHub's OAuth web flow: no scope reads the public profile, which is all aye needs.
    return str(prepare_grant_uri(f"{provider.web_url}/login/oauth/authorize", provider.client.id,
                                 "code", redirect_uri, None, state, **pkce))


async def exchange(discovery: Discovery, provider: Provider, code: str, redirect_uri: str,
                   verifier: str) -> dict[str, Any]:
    """The token endpoint's reply for `code`; Refused when it gives no access token."""
    from authlib.oauth2.auth import ClientAuth
    from authlib.oauth2.rfc6749.parameters import prepare_token_request

    if provider.issuer is not None:
        doc = await discovery.of(provider.issuer)
        url, method = doc["token_endpoint"], _auth_method(doc)
    else:  # GitHub takes the client's id and secret in the body
        url, method = f"{provider.web_url}/login/oauth/access_token", "client_secret_post"
    body = prepare_token_request("authorization_code", redirect_uri=redirect_uri, code=code,
                                 code_verifier=verifier)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    auth = ClientAuth(provider.client.id, provider.client.secret, method)
    url, headers, body = auth.prepare("POST", url, headers, body)
    status, reply = await discovery.http.json("POST", url, "token", data=body.encode(),
                                              headers=headers)
    # GitHub (and Slack) answer a refused code with 200 and an `error`: the token decides.
    if status != 200 or not isinstance(reply, dict) or not isinstance(reply.get("access_token"), str):
        error = reply.get("error") if isinstance(reply, dict) else None
        raise Refused(REFUSED, f"token endpoint: status {status}, error {str(error)[:40]}")
    return reply


def _auth_method(doc: dict[str, Any]) -> str:
    """How the token endpoint takes the client's secret: Basic when it says it does or says
    nothing (the default of OpenID Connect Discovery), else in the body."""
    methods = doc.get("token_endpoint_auth_methods_supported")
    if not isinstance(methods, list) or "client_secret_basic" in methods:
        return "client_secret_basic"
    return "client_secret_post"


async def github_login(http: Http, provider: Provider, access_token: str) -> str:
    """The login of whoever the token is for: `GET /user` on GitHub's API."""
    headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/vnd.github+json"}
    status, user = await http.json("GET", f"{provider.api_url}/user", "user", headers=headers)
    login = user.get("login") if isinstance(user, dict) else None
    if status != 200 or not isinstance(login, str) or not login:
        raise Refused(REFUSED, f"GET /user: status {status}")
    return login
