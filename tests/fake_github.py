"""A fake GitHub for end-to-end tests: the REST API as gidgethub calls it, and signed webhooks.

`FakeGitHub` serves, on 127.0.0.1 and under `/api/v3` as GitHub Enterprise Server does (so a
client that drops `GITHUB_API_URL`'s path gets 404), the few endpoints aye uses, with GitHub's
auth rules (an App JWT for `/app/...`, an installation or plain token elsewhere), GitHub's reply
shapes and headers, a record of every call, and injectable faults. The webhook half builds payloads from real
deliveries in `tests/fixtures/github/` and POSTs them signed, as GitHub's Hookshot does.

What the real gidgethub 6.0 raises for each fault this fake can produce (for retry logic):

- 5xx (`fail_next(..., status=502)`): `gidgethub.GitHubBroken`, `.status_code` 502.
- Secondary rate limit (`secondary_rate_limit=True`): 403 with `Retry-After` and
  `x-ratelimit-remaining` above zero: a plain `gidgethub.BadRequest` with `.status_code` 403 and
  `.headers["retry-after"]`; NOT `RateLimitExceeded`, which gidgethub keeps for an exhausted
  primary limit. With `status=429` the same, `.status_code` 429.
- Primary rate limit (`primary_rate_limit=True`): 403 with `x-ratelimit-remaining: 0`:
  `gidgethub.RateLimitExceeded` (a `BadRequest`), `.rate_limit.reset_datetime` says when.
- Bad, unknown or expired token, bad JWT: `gidgethub.BadRequest`, `.status_code` 401.
- Unknown comment, issue, route or installation: `gidgethub.BadRequest`, `.status_code` 404.
- Invalid field (missing comment body, unknown reaction): `gidgethub.InvalidField` (422); a body
  over 65536 characters: `gidgethub.ValidationError` (422).

It also runs GitHub's OAuth web flow at the host's root, the web origin (`GITHUB_WEB_URL`), as
GitHub Enterprise Server serves it beside `/api/v3`: `GET /login/oauth/authorize` checks the
OAuth App's client id, its registered callback URL (`oauth_redirect_uri`), `state` and a PKCE
S256 challenge and sends the browser back with a code; `POST /login/oauth/access_token` takes
that code once, with the client secret and the code verifier, and answers as GitHub does (JSON
only when asked with `Accept: application/json`; a refusal is 200 with an `error`); `GET /user`
with the token it gave answers `oauth_login`'s user. `oauth_misbehave` = "denied" (the person
refuses: error=access_denied) or "refuse_token" (the code is refused); `oauth_refusals` says
what the fake refused and why.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http
import itertools
import json
import re
import secrets
import time
import uuid
import zlib
from base64 import urlsafe_b64encode
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

import aiohttp
import jwt
import pytest_asyncio
from aiohttp import web
from aiohttp.typedefs import Handler
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.local_server import LocalServer

FIXTURES_DIR = Path(__file__).parent / "fixtures" / "github"
DEFAULT_APP_ID = "424242"
DEFAULT_INSTALLATION_ID = 1
PLAIN_TOKEN = "ghp_test"
BOT_LOGIN = "aye[bot]"
PLAIN_TOKEN_LOGIN = "aye-operator"
RATE_LIMIT = 5000
MAX_COMMENT_BODY = 65536  # GitHub refuses longer issue comments with a 422
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
# GitHub refuses an App JWT whose `exp` is more than 10 minutes ahead; allow some clock skew.
JWT_MAX_LIFETIME_S = 10 * 60 + 60
RATE_LIMIT_RETRY_AFTER_S = 1  # Retry-After sent on rate-limit faults unless the test sets one
REACTION_CONTENTS = frozenset(
    {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
)
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)
HOOKSHOT_USER_AGENT = "GitHub-Hookshot/7b7b0f6"
GITHUB_API = "https://api.github.com"
# Where GitHub Enterprise Server serves its REST API: a client that drops a base URL's path
# (older gidgethub did) calls `/repos/...` at the host's root and gets 404 from this fake.
ENTERPRISE_PREFIX = "/api/v3"
GITHUB_WEB = "https://github.com"
OAUTH_CLIENT_ID = "Iv1.fakeoauthclient"
OAUTH_CLIENT_SECRET = "gh-oauth-client-secret"
OAUTH_ROUTES = frozenset({"oauth_authorize", "oauth_token"})

# The fixtures are real deliveries on this repository; builders rewrite it.
_FIXTURE_REPO = "Codertocat/Hello-World"
# One counter for every id the fake or the builders hand out, so no two collide in a test run.
_ids = itertools.count(3_000_000_001)


def _next_id() -> int:
    return next(_ids)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class GitHubCall:
    """One request the fake received, with the status it replied."""

    method: str
    path: str  # under the API prefix (`/repos/...`), or the whole path of a call outside it
    json_body: Any
    authorization: str | None
    query: Mapping[str, str] = field(default_factory=dict)
    status: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)
    full_path: str = ""  # as requested, API prefix included


@dataclass(frozen=True)
class MintedToken:
    """An installation access token the fake handed out."""

    token: str
    installation_id: int
    expires_at: datetime


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int
    retry_after: int | None
    kind: str  # "error", "secondary" or "primary"

    def matches(self, method: str, path: str) -> bool:
        return self.method == method and self.pattern.fullmatch(path) is not None


@dataclass(frozen=True)
class _Actor:
    login: str
    type: str

    def as_user(self) -> dict[str, Any]:
        return {"login": self.login, "id": _user_id(self.login), "type": self.type}


def _user_id(login: str) -> int:
    return zlib.crc32(login.encode()) % 100_000_000 + 1


class FakeGitHub(LocalServer):
    """GitHub's REST API on 127.0.0.1, for the real gidgethub client.

    Paths in `calls_matching`, `wait_for_call` and `fail_next` are regexes matched in full
    against the request path (no query string). Reactions are accepted on any comment id, known
    or not, since webhook comments come from the builders below and never from this fake.
    """

    def __init__(
        self,
        *,
        app_id: str = DEFAULT_APP_ID,
        plain_token: str = PLAIN_TOKEN,
        bot_login: str = BOT_LOGIN,
        token_ttl: timedelta = timedelta(hours=1),
        prefix: str = ENTERPRISE_PREFIX,
    ) -> None:
        """`prefix`: the path the API is served under (`/api/v3`, as GitHub Enterprise
        Server does; "" as api.github.com does)."""
        self.prefix = prefix.rstrip("/")
        self.app_id = app_id
        self.plain_token = plain_token
        self.bot_login = bot_login
        self.token_ttl = token_ttl
        # Installation-token expiry follows this clock, so tests move time instead of sleeping.
        # App JWTs are checked against wall time, since gidgethub signs them with time.time().
        self.clock: Callable[[], datetime] = _utcnow
        # None: any installation id may mint tokens; a set: only those.
        self.installation_ids: set[int] | None = None
        # GET /repos/{owner}/{repo}/installation: per-repo id, else the default (None: 404).
        self.repo_installations: dict[str, int | None] = {}
        self.default_installation_id: int | None = DEFAULT_INSTALLATION_ID
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        # GitHub hands out App keys in PKCS#1 ("BEGIN RSA PRIVATE KEY").
        self.private_key_pem: str = self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode()
        self.calls: list[GitHubCall] = []
        self.tokens_minted: list[MintedToken] = []
        self.reactions: list[tuple[str, int, str]] = []
        self.comments: dict[int, dict[str, Any]] = {}
        # GET /repos/{owner}/{repo}/issues/{number}: issues and pull requests by (repo, number),
        # added with `open_issue` (an unknown one is 404, as on GitHub).
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}
        self.issue_delay = 0.0  # seconds GET .../issues/{number} takes to answer (a slow GitHub)
        self._comment_issue: dict[int, tuple[str, int]] = {}
        self._reaction_objects: dict[tuple[str, int, str, str], dict[str, Any]] = {}
        self._tokens: dict[str, MintedToken] = {}
        self._revoked: set[str] = set()
        self._faults: list[_Fault] = []
        self._changed = asyncio.Condition()
        # The OAuth web flow: the OAuth App aye signs people in with, and who signs in.
        self.oauth_client = (OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET)
        self.oauth_redirect_uri: str | None = None  # the App's callback URL (set by the test)
        self.oauth_login = "ada-l"
        self.oauth_misbehave: str | None = None
        self.oauth_refusals: list[str] = []
        self._oauth_codes: dict[str, tuple[str, str]] = {}  # code -> (redirect_uri, challenge)
        self._user_tokens: dict[str, str] = {}  # token -> login
        super().__init__()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        repo = self.prefix + "/repos/{owner}/{repo}"
        app.router.add_post(
            self.prefix + r"/app/installations/{installation_id:\d+}/access_tokens",
            self._create_access_token,
            name="access_tokens",
        )
        app.router.add_get(f"{repo}/installation", self._repo_installation, name="installation")
        app.router.add_post(
            repo + r"/issues/comments/{comment_id:\d+}/reactions", self._create_reaction
        )
        app.router.add_get(repo + r"/issues/comments/{comment_id:\d+}", self._get_comment)
        app.router.add_get(repo + r"/issues/{number:\d+}", self._get_issue)
        app.router.add_patch(repo + r"/issues/comments/{comment_id:\d+}", self._update_comment)
        app.router.add_post(repo + r"/issues/{number:\d+}/comments", self._create_comment)
        app.router.add_get(repo + r"/issues/{number:\d+}/comments", self._list_comments)
        app.router.add_get(self.prefix + "/user", self._get_user)
        app.router.add_get("/login/oauth/authorize", self._oauth_authorize, name="oauth_authorize")
        app.router.add_post("/login/oauth/access_token", self._oauth_token, name="oauth_token")
        await self._serve(app)

    @property
    def web_url(self) -> str:
        """What GITHUB_WEB_URL is set to: the host's root, where /login/oauth/* are."""
        return self.base_url

    @property
    def api_url(self) -> str:
        """What GITHUB_API_URL is set to: the host and the API's path prefix."""
        return self.base_url + self.prefix

    def api_path(self, request: web.Request) -> str:
        """The request's path under the API prefix (its whole path when outside it)."""
        path = request.path
        if self.prefix and path.startswith(self.prefix + "/"):
            return path[len(self.prefix):]
        return path

    # -- test controls ---------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int | None = None,
        times: int = 1,
        retry_after: int | None = None,
        secondary_rate_limit: bool = False,
        primary_rate_limit: bool = False,
    ) -> None:
        """Make the next `times` matching calls fail, before any auth check or state change.

        `status` defaults to 502, or 403 for a rate limit. A secondary rate limit (and any 429)
        carries `Retry-After` (`retry_after`, default 1 s); a primary one carries
        `x-ratelimit-remaining: 0` and a reset `retry_after` (default 1 s) ahead.
        """
        kind = "primary" if primary_rate_limit else "secondary" if secondary_rate_limit else "error"
        if status is None:
            status = 502 if kind == "error" else 403
        fault = _Fault(method.upper(), re.compile(path_regex), status, times, retry_after, kind)
        self._faults.append(fault)

    def expire_tokens(self) -> None:
        """Make every installation token minted so far invalid (401), as if it had expired."""
        self._revoked.update(self._tokens)

    def add_comment(
        self, repo: str, number: int, body: str, login: str = "octocat", user_type: str = "User"
    ) -> dict[str, Any]:
        """Store a comment as if a person (or another app) had written it; return it."""
        return self._store_comment(repo, number, body, _Actor(login, user_type))

    def open_issue(
        self, repo: str, number: int, login: str = "octocat", user_type: str = "User",
        pull: bool = False,
    ) -> dict[str, Any]:
        """Store an issue (or, with `pull`, a pull request) as `login` opened it; return it.
        GitHub serves both from `/issues/{number}`, a pull request with a `pull_request` key."""
        kind = "pull" if pull else "issues"
        issue: dict[str, Any] = {
            "id": _next_id(),
            "node_id": f"I_fake{number}",
            "url": f"{GITHUB_API}/repos/{repo}/issues/{number}",
            "html_url": f"{GITHUB_WEB}/{repo}/{kind}/{number}",
            "number": number,
            "state": "open",
            "title": f"Issue {number}",
            "user": _Actor(login, user_type).as_user(),
            "created_at": _iso(self.clock()),
            "author_association": "CONTRIBUTOR",
        }
        if pull:
            issue["pull_request"] = {"url": f"{GITHUB_API}/repos/{repo}/pulls/{number}",
                                     "html_url": issue["html_url"]}
        self.issues[(repo, number)] = issue
        return issue

    def comments_on(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Comments stored on one issue or PR, oldest first."""
        return [
            comment
            for comment_id, comment in self.comments.items()
            if self._comment_issue[comment_id] == (repo, number)
        ]

    def calls_matching(self, method: str, path_regex: str) -> list[GitHubCall]:
        pattern = re.compile(path_regex)
        return [c for c in self.calls if _call_matches(c, method, pattern)]

    async def wait_for_call(
        self,
        method: str,
        path_regex: str,
        predicate: Callable[[GitHubCall], bool] | None = None,
        timeout: float = 5.0,
        since: int = 0,
    ) -> GitHubCall:
        """Return the first recorded call (from index `since` of `calls`) that matches.

        Calls recorded before the wait count. Raises TimeoutError after `timeout` seconds.
        """
        pattern = re.compile(path_regex)
        try:
            async with asyncio.timeout(timeout), self._changed:
                while True:
                    for call in self.calls[since:]:
                        if _call_matches(call, method, pattern) and (
                            predicate is None or predicate(call)
                        ):
                            return call
                    await self._changed.wait()
        except TimeoutError:
            seen = ", ".join(f"{c.method} {c.path} -> {c.status}" for c in self.calls)
            raise TimeoutError(
                f"no {method} {path_regex} call within {timeout}s; calls: [{seen}]"
            ) from None

    # -- plumbing --------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        raw = await request.read()
        body: Any = None
        response: web.StreamResponse | None = self._injected_fault(request)
        if response is None and request.match_info.route.name in OAUTH_ROUTES:
            response = await handler(request)  # the web flow: a form, and no API token
        if response is None and raw:
            try:
                body = json.loads(raw)
            except ValueError:
                response = self._reply(400, {"message": "Problems parsing JSON"})
        if response is None:
            response = self._authenticate(request)
        if response is None:
            try:
                response = await handler(request)
            except web.HTTPException as exc:
                response = self._reply(exc.status, {"message": exc.reason})
        call = GitHubCall(
            method=request.method,
            path=self.api_path(request),
            json_body=body,
            authorization=request.headers.get("Authorization"),
            query=dict(request.query),
            status=response.status,
            headers={k.lower(): v for k, v in request.headers.items()},
            full_path=request.path,
        )
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        return response

    def _reply(
        self,
        status: int,
        data: Any,
        *,
        remaining: int | None = None,
        reset_in: int = 3600,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        if remaining is None:
            remaining = max(1, RATE_LIMIT - len(self.calls) - 1)
        all_headers = {
            # gidgethub parses these into GitHubAPI.rate_limit on every reply.
            "X-RateLimit-Limit": str(RATE_LIMIT),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Used": str(RATE_LIMIT - remaining),
            "X-RateLimit-Reset": str(int(time.time()) + reset_in),
            "X-RateLimit-Resource": "core",
            "X-GitHub-Request-Id": uuid.uuid4().hex[:20].upper(),
            **(headers or {}),
        }
        return web.json_response(data, status=status, headers=all_headers)

    def _injected_fault(self, request: web.Request) -> web.Response | None:
        path = self.api_path(request)
        fault = next((f for f in self._faults if f.matches(request.method, path)), None)
        if fault is None:
            return None
        fault.remaining -= 1
        if fault.remaining <= 0:
            self._faults.remove(fault)
        wait = RATE_LIMIT_RETRY_AFTER_S if fault.retry_after is None else fault.retry_after
        if fault.kind == "primary":
            message = "API rate limit exceeded for installation. Check the rate limit headers."
            return self._reply(fault.status, {"message": message}, remaining=0, reset_in=wait)
        if fault.kind == "secondary" or fault.status == 429:
            return self._reply(
                fault.status,
                {"message": SECONDARY_RATE_LIMIT_MESSAGE},
                headers={"Retry-After": str(wait)},
            )
        extra = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
        phrase = http.HTTPStatus(fault.status).phrase
        return self._reply(fault.status, {"message": phrase}, headers=extra)

    def _authenticate(self, request: web.Request) -> web.Response | None:
        """Return the 401 GitHub gives for missing or bad credentials, or None."""
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        scheme, credential = scheme.lower(), credential.strip()
        route = request.match_info.route.name
        if route in {"access_tokens", "installation"}:
            if scheme != "bearer" or not credential:
                return self._reply(401, {"message": "A JSON web token could not be decoded"})
            return self._check_app_jwt(credential)
        if scheme in {"token", "bearer"} and self._token_is_valid(credential):
            return None
        return self._reply(401, {"message": "Bad credentials"})

    def _token_is_valid(self, credential: str) -> bool:
        if credential == self.plain_token or credential in self._user_tokens:
            return True
        minted = self._tokens.get(credential)
        return (
            minted is not None
            and credential not in self._revoked
            and self.clock() < minted.expires_at
        )

    def _actor(self, request: web.Request) -> _Actor:
        """Who an authenticated call acts as: the App's bot, or a user for the plain token."""
        credential = request.headers.get("Authorization", "").partition(" ")[2].strip()
        if credential == self.plain_token:
            return _Actor(PLAIN_TOKEN_LOGIN, "User")
        if credential in self._user_tokens:
            return _Actor(self._user_tokens[credential], "User")
        return _Actor(self.bot_login, "Bot")

    def _check_app_jwt(self, token: str) -> web.Response | None:
        try:
            claims = jwt.decode(
                token,
                self._key.public_key(),
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError as exc:
            return self._reply(401, {"message": f"A JSON web token could not be decoded: {exc}"})
        if str(claims["iss"]) != str(self.app_id):
            return self._reply(401, {"message": "Integration not found"})
        if float(claims["exp"]) - time.time() > JWT_MAX_LIFETIME_S:
            message = "'Expiration time' claim ('exp') is too far in the future"
            return self._reply(401, {"message": message})
        return None

    # -- endpoints -------------------------------------------------------------------------

    async def _create_access_token(self, request: web.Request) -> web.Response:
        installation_id = int(request.match_info["installation_id"])
        if self.installation_ids is not None and installation_id not in self.installation_ids:
            return self._reply(404, {"message": "Not Found"})
        expires_at = (self.clock() + self.token_ttl).replace(microsecond=0)
        minted = MintedToken(f"ghs_{secrets.token_hex(18)}", installation_id, expires_at)
        self._tokens[minted.token] = minted
        self.tokens_minted.append(minted)
        data = {
            "token": minted.token,
            "expires_at": _iso(expires_at),
            "permissions": {"issues": "write", "pull_requests": "write"},
            "repository_selection": "all",
        }
        return self._reply(201, data)

    async def _repo_installation(self, request: web.Request) -> web.Response:
        owner, name = request.match_info["owner"], request.match_info["repo"]
        installation_id = self.repo_installations.get(
            f"{owner}/{name}", self.default_installation_id
        )
        if installation_id is None:
            return self._reply(404, {"message": "Not Found"})
        data = {
            "id": installation_id,
            "app_id": _int_or_str(self.app_id),
            "account": {"login": owner},
        }
        return self._reply(200, data)

    async def _create_reaction(self, request: web.Request) -> web.Response:
        repo = _repo_of(request)
        comment_id = int(request.match_info["comment_id"])
        content = await _json_field(request, "content")
        if content not in REACTION_CONTENTS:
            return self._invalid_field("Reaction", "content", "invalid")
        actor = self._actor(request)
        key = (repo, comment_id, content, actor.login)
        existing = self._reaction_objects.get(key)
        if existing is not None:  # GitHub answers a repeated reaction with 200 and the original
            return self._reply(200, existing)
        reaction = {
            "id": _next_id(),
            "node_id": f"REA_fake{comment_id}",
            "user": actor.as_user(),
            "content": content,
            "created_at": _iso(self.clock()),
        }
        self._reaction_objects[key] = reaction
        self.reactions.append((repo, comment_id, content))
        return self._reply(201, reaction)

    async def _create_comment(self, request: web.Request) -> web.Response:
        body = await self._comment_body(request)
        if isinstance(body, web.Response):
            return body
        number = int(request.match_info["number"])
        comment = self._store_comment(_repo_of(request), number, body, self._actor(request))
        return self._reply(201, comment)

    async def _get_comment(self, request: web.Request) -> web.Response:
        comment = self._find_comment(request)
        if comment is None:
            return self._reply(404, {"message": "Not Found"})
        return self._reply(200, comment)

    async def _get_issue(self, request: web.Request) -> web.Response:
        await asyncio.sleep(self.issue_delay)
        repo, number = _repo_of(request), int(request.match_info["number"])
        issue = self.issues.get((repo, number))
        if issue is None:  # GitHub's owner and repository names are case-insensitive
            issue = next((found for (name, n), found in self.issues.items()
                          if n == number and name.lower() == repo.lower()), None)
        if issue is None:
            return self._reply(404, {"message": "Not Found"})
        return self._reply(200, issue)

    async def _update_comment(self, request: web.Request) -> web.Response:
        comment = self._find_comment(request)
        if comment is None:
            return self._reply(404, {"message": "Not Found"})
        body = await self._comment_body(request)
        if isinstance(body, web.Response):
            return body
        comment["body"] = body
        comment["updated_at"] = _iso(self.clock())
        return self._reply(200, comment)

    async def _list_comments(self, request: web.Request) -> web.Response:
        comments = self.comments_on(_repo_of(request), int(request.match_info["number"]))
        try:
            per_page = min(
                MAX_PER_PAGE, max(1, int(request.query.get("per_page", DEFAULT_PER_PAGE)))
            )
            page = max(1, int(request.query.get("page", 1)))
        except ValueError:
            return self._reply(400, {"message": "Invalid pagination parameters"})
        start = (page - 1) * per_page
        headers = {}
        if start + per_page < len(comments):
            # gidgethub.getiter follows this absolute URL, so it names the fake's own host.
            next_url = request.url.with_query({"per_page": per_page, "page": page + 1})
            headers["Link"] = f'<{next_url}>; rel="next"'
        return self._reply(200, comments[start : start + per_page], headers=headers)

    def _invalid_field(self, resource: str, name: str, code: str) -> web.Response:
        error = {"resource": resource, "code": code, "field": name}
        return self._reply(422, {"message": "Validation Failed", "errors": [error]})

    async def _comment_body(self, request: web.Request) -> str | web.Response:
        """The request's comment body, or the 422 GitHub gives for a missing or long one."""
        body = await _json_field(request, "body")
        if not isinstance(body, str) or not body:
            return self._invalid_field("IssueComment", "body", "missing_field")
        if len(body) > MAX_COMMENT_BODY:
            error = {
                "resource": "IssueComment",
                "code": "custom",
                "field": "body",
                "message": f"body is too long (maximum is {MAX_COMMENT_BODY} characters)",
            }
            return self._reply(422, {"message": "Validation Failed", "errors": [error]})
        return body

    def _find_comment(self, request: web.Request) -> dict[str, Any] | None:
        comment_id = int(request.match_info["comment_id"])
        where = self._comment_issue.get(comment_id)
        if where is None or where[0] != _repo_of(request):
            return None
        return self.comments[comment_id]

    def _store_comment(self, repo: str, number: int, body: str, actor: _Actor) -> dict[str, Any]:
        comment_id = _next_id()
        now = _iso(self.clock())
        # Real GitHub URLs, not the fake's: code that follows comment["url"] instead of a
        # relative path with url_vars would leave base_url, and the test should show it.
        comment = {
            "id": comment_id,
            "node_id": f"IC_fake{comment_id}",
            "url": f"{GITHUB_API}/repos/{repo}/issues/comments/{comment_id}",
            "html_url": f"{GITHUB_WEB}/{repo}/issues/{number}#issuecomment-{comment_id}",
            "issue_url": f"{GITHUB_API}/repos/{repo}/issues/{number}",
            "body": body,
            "user": actor.as_user(),
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
        }
        self.comments[comment_id] = comment
        self._comment_issue[comment_id] = (repo, number)
        return comment


    # -- the OAuth web flow --------------------------------------------------------------------

    async def _get_user(self, request: web.Request) -> web.Response:
        return self._reply(200, {**self._actor(request).as_user(), "name": None})

    async def _oauth_authorize(self, request: web.Request) -> web.Response:
        q = request.query
        # GitHub shows its own error page, and sends nobody back, for a wrong client or callback.
        if q.get("client_id") != self.oauth_client[0]:
            return self._oauth_refuse(404, "unknown client_id")
        if q.get("redirect_uri") != self.oauth_redirect_uri:
            return self._oauth_refuse(400, "The redirect_uri is not associated with this application.")
        back = str(q["redirect_uri"])
        if not q.get("state") or q.get("code_challenge_method") != "S256" \
                or len(q.get("code_challenge", "")) != 43:
            self.oauth_refusals.append("state and a PKCE S256 challenge are required")
            return _redirect(back, {"error": "invalid_request", "state": q.get("state", "")})
        if self.oauth_misbehave == "denied":
            return _redirect(back, {"error": "access_denied", "state": q["state"],
                                    "error_description": "The user has denied your application access."})
        code = secrets.token_hex(10)
        self._oauth_codes[code] = (back, q["code_challenge"])
        return _redirect(back, {"code": code, "state": q["state"]})

    async def _oauth_token(self, request: web.Request) -> web.Response:
        form = await request.post()
        granted = self._oauth_codes.pop(str(form.get("code", "")), None)  # a code is good once
        if (form.get("client_id"), form.get("client_secret")) != self.oauth_client:
            error = "incorrect_client_credentials"
        elif granted is None or self.oauth_misbehave == "refuse_token":
            error = "bad_verification_code"
        elif form.get("redirect_uri") != granted[0]:
            error = "redirect_uri_mismatch"
        elif _s256(str(form.get("code_verifier", ""))) != granted[1]:
            error = "bad_verification_code"
        else:
            token = f"gho_{secrets.token_hex(18)}"
            self._user_tokens[token] = self.oauth_login
            return _oauth_reply(request, {"access_token": token, "token_type": "bearer", "scope": ""})
        self.oauth_refusals.append(error)
        return _oauth_reply(request, {"error": error, "error_description": error.replace("_", " ")})

    def _oauth_refuse(self, status: int, why: str) -> web.Response:
        self.oauth_refusals.append(why)
        return web.Response(status=status, text=why)


def _redirect(to: str, params: dict[str, str]) -> web.Response:
    return web.Response(status=302, headers={"Location": f"{to}?{urlencode(params)}"})


def _oauth_reply(request: web.Request, data: dict[str, str]) -> web.Response:
    """GitHub answers the token request in JSON only when asked to; form-encoded otherwise."""
    if "application/json" in request.headers.get("Accept", ""):
        return web.json_response(data)
    return web.Response(text=urlencode(data), content_type="application/x-www-form-urlencoded")


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return urlsafe_b64encode(digest).rstrip(b"=").decode()


def _call_matches(call: GitHubCall, method: str, pattern: re.Pattern[str]) -> bool:
    return call.method == method.upper() and pattern.fullmatch(call.path) is not None


def _repo_of(request: web.Request) -> str:
    return f"{request.match_info['owner']}/{request.match_info['repo']}"


async def _json_field(request: web.Request, name: str) -> Any:
    """One field of the JSON object body (the middleware has already refused bad JSON)."""
    raw = await request.read()  # aiohttp keeps the body the middleware read
    body = json.loads(raw) if raw else None
    return body.get(name) if isinstance(body, dict) else None


def _int_or_str(value: str) -> int | str:
    return int(value) if value.isdigit() else value


# -- webhooks ------------------------------------------------------------------------------


class Delivery(NamedTuple):
    """What the webhook receiver answered to one delivery."""

    status: int
    text: str
    delivery_id: str


def sign(body: bytes, secret: str) -> str:
    """The `X-Hub-Signature-256` value GitHub sends for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def load_event(name: str) -> dict[str, Any]:
    """A fresh copy of a recorded payload, e.g. `load_event("issue_comment.edited")`."""
    file = FIXTURES_DIR / (name if name.endswith(".json") else f"{name}.json")
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{file} does not hold a JSON object")
    return data


_ISSUE_COMMENT_FIXTURES = {
    "created": "issue_comment.created.with-installation",
    "edited": "issue_comment.edited",
    "deleted": "issue_comment.deleted",
}


def issue_comment_event(
    *,
    body: str,
    login: str,
    action: str = "created",
    repo: str = "owner/name",
    number: int = 42,
    comment_id: int | None = None,
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
    is_pull_request: bool = False,
    sender_type: str = "User",
    created_at: datetime | None = None,
) -> dict[str, Any]:
    """An `issue_comment` payload: `login` (a `sender_type`) wrote `body` on `repo`#`number`.

    `comment_id` None means a fresh unique id; `installation_id` None drops `installation`;
    `created_at` None means now (GitHub stamps whole seconds).
    """
    fixture = _ISSUE_COMMENT_FIXTURES.get(action, "issue_comment.created.1")
    payload = _for_repo(load_event(fixture), repo)
    payload["action"] = action
    payload.pop("organization", None)
    kind = "pull" if is_pull_request else "issues"
    issue = _renumber(payload["issue"], "issues", 1, number)
    issue["number"] = number
    issue["html_url"] = f"{GITHUB_WEB}/{repo}/{kind}/{number}"
    if is_pull_request:
        issue["pull_request"] = {
            "url": f"{GITHUB_API}/repos/{repo}/pulls/{number}",
            "html_url": issue["html_url"],
            "diff_url": f"{issue['html_url']}.diff",
            "patch_url": f"{issue['html_url']}.patch",
            "merged_at": None,
        }
    else:
        issue.pop("pull_request", None)
    payload["issue"] = issue
    comment_id = _next_id() if comment_id is None else comment_id
    comment = payload["comment"]
    comment.update(
        id=comment_id,
        node_id=f"IC_fake{comment_id}",
        url=f"{GITHUB_API}/repos/{repo}/issues/comments/{comment_id}",
        html_url=f"{issue['html_url']}#issuecomment-{comment_id}",
        issue_url=f"{GITHUB_API}/repos/{repo}/issues/{number}",
        body=body,
        created_at=_iso(created_at or _utcnow()),
        updated_at=_iso(_utcnow()),
    )
    _set_user(comment["user"], login, sender_type)
    _set_user(payload["sender"], login, sender_type)
    _set_installation(payload, installation_id)
    return payload


def pull_request_review_event(
    *,
    body: str | None,
    login: str,
    repo: str = "owner/name",
    number: int = 42,
    state: str = "commented",
    review_id: int | None = None,
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
    sender_type: str = "User",
    submitted_at: datetime | None = None,
) -> dict[str, Any]:
    """A `pull_request_review` `submitted` payload: `login` reviewed `repo`#`number`
    (`submitted_at` None means now)."""
    payload = _for_repo(load_event("pull_request_review.submitted"), repo)
    pull_request = _renumber(payload["pull_request"], "pulls?|issues", 2, number)
    pull_request["number"] = number
    payload["pull_request"] = pull_request
    review_id = _next_id() if review_id is None else review_id
    review = payload["review"]
    html_url = f"{GITHUB_WEB}/{repo}/pull/{number}#pullrequestreview-{review_id}"
    review.update(
        id=review_id,
        node_id=f"PRR_fake{review_id}",
        body=body,
        state=state,
        html_url=html_url,
        submitted_at=_iso(submitted_at or _utcnow()),
    )
    review["_links"] = {
        "html": {"href": html_url},
        "pull_request": {"href": f"{GITHUB_API}/repos/{repo}/pulls/{number}"},
    }
    _set_user(review["user"], login, sender_type)
    _set_user(payload["sender"], login, sender_type)
    _set_installation(payload, installation_id)
    return payload


async def deliver(
    client_session: aiohttp.ClientSession,
    url: str,
    event_name: str,
    payload: Mapping[str, Any] | bytes,
    secret: str | None,
    delivery_id: str | None = None,
    *,
    signature: str | None = None,
) -> Delivery:
    """POST one webhook as GitHub does; bytes are sent as they are (malformed-body tests).

    `secret` None sends no signature; `signature` overrides the computed one.
    """
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    delivery_id = str(uuid.uuid4()) if delivery_id is None else delivery_id
    headers = {
        "Content-Type": "application/json",
        "User-Agent": HOOKSHOT_USER_AGENT,
        "X-GitHub-Event": event_name,
        "X-GitHub-Delivery": delivery_id,
        "X-GitHub-Hook-ID": "1",
    }
    if signature is None and secret is not None:
        signature = sign(body, secret)
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    async with client_session.post(url, data=body, headers=headers) as response:
        return Delivery(response.status, await response.text(), delivery_id)


def _for_repo(payload: dict[str, Any], repo: str) -> dict[str, Any]:
    """Move a fixture from Codertocat/Hello-World to `repo`, URLs included."""
    owner, _, name = repo.partition("/")
    if not owner or not name:
        raise ValueError(f"repo must be owner/name, not {repo!r}")
    moved: dict[str, Any] = _replace_in_strings(payload, _FIXTURE_REPO, repo)
    repository = moved["repository"]
    repository.update(id=zlib.crc32(repo.encode()), name=name, full_name=repo)
    _set_user(repository["owner"], owner, repository["owner"].get("type", "User"))
    return moved


def _replace_in_strings(node: Any, old: str, new: str) -> Any:
    if isinstance(node, str):
        return node.replace(old, new)
    if isinstance(node, dict):
        return {key: _replace_in_strings(value, old, new) for key, value in node.items()}
    if isinstance(node, list):
        return [_replace_in_strings(value, old, new) for value in node]
    return node


def _renumber(node: dict[str, Any], segment: str, old: int, new: int) -> dict[str, Any]:
    """Rewrite `/issues/1`-style number segments in every URL under `node`."""
    pattern = re.compile(rf"/({segment})/{old}(?=$|[/#{{])")

    def rewrite(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(rf"/\g<1>/{new}", value)
        if isinstance(value, dict):
            return {key: rewrite(item) for key, item in value.items()}
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        return value

    renumbered: dict[str, Any] = rewrite(node)
    return renumbered


def _set_user(user: dict[str, Any], login: str, user_type: str) -> None:
    old = user["login"]
    for key, value in list(user.items()):
        if key.endswith("url") and isinstance(value, str):
            user[key] = re.sub(rf"/{re.escape(old)}(?=$|[/{{])", f"/{login}", value)
    user.update(login=login, id=_user_id(login), type=user_type)


def _set_installation(payload: dict[str, Any], installation_id: int | None) -> None:
    if installation_id is None:
        payload.pop("installation", None)
    else:
        payload["installation"] = {"id": installation_id, "node_id": f"IN_fake{installation_id}"}


# -- pytest fixtures -----------------------------------------------------------------------


@pytest_asyncio.fixture
async def fake_github() -> AsyncIterator[FakeGitHub]:
    """A started FakeGitHub, closed after the test."""
    async with FakeGitHub() as fake:
        yield fake
