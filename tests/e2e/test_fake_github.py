"""The fake GitHub, proved with the real gidgethub client and gidgethub's webhook checks.

What gidgethub 6.0 raises for each fault (asserted below, relied on by retry logic):

- 5xx: `GitHubBroken` (`.status_code` 502 etc.).
- secondary rate limit, 403 + Retry-After: plain `BadRequest`, `.status_code` 403,
  `.headers["retry-after"]`; NOT `RateLimitExceeded`.
- 429 + Retry-After: plain `BadRequest`, `.status_code` 429, `.headers["retry-after"]`.
- primary rate limit, 403 + `x-ratelimit-remaining: 0`: `RateLimitExceeded` (a `BadRequest`).
- bad credentials or bad JWT: `BadRequest`, `.status_code` 401.
- unknown comment or route: `BadRequest`, `.status_code` 404.
- missing field / unknown reaction: `InvalidField` (422); over-long body: `ValidationError` (422).
- a bad webhook signature: `ValidationFailure` from `sansio.Event.from_http`.
"""

from __future__ import annotations

import asyncio
import http
import json
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import gidgethub
import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gidgethub import apps, sansio
from gidgethub.aiohttp import GitHubAPI

from tests.fake_github import (
    FakeGitHub,
    GitHubCall,
    deliver,
    issue_comment_event,
    load_event,
    pull_request_review_event,
    sign,
)

# Registers the fake_github fixture; a no-op once tests/conftest.py lists the module too.
pytest_plugins = ("tests.fake_github",)

REACTIONS = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
ISSUE_COMMENTS = "/repos/{owner}/{repo}/issues/{number}/comments"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
SECRET = "webhook-secret"


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


def repo_vars(**extra: int | str) -> dict[str, int | str]:
    """url_vars for gidgethub: octo/widgets plus the path's other parts."""
    return {"owner": "octo", "repo": "widgets", **extra}


def api(session: aiohttp.ClientSession, fake: FakeGitHub, token: str | None) -> GitHubAPI:
    return GitHubAPI(session, "aye", base_url=fake.api_url, oauth_token=token)


async def installation_token(
    session: aiohttp.ClientSession, fake: FakeGitHub, installation_id: int = 7
) -> dict[str, Any]:
    return await apps.get_installation_access_token(
        api(session, fake, None),
        installation_id=str(installation_id),
        app_id=fake.app_id,
        private_key=fake.private_key_pem,
    )


async def test_app_jwt_mints_a_token_that_reacts(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    minted = await installation_token(session, fake_github)

    assert minted["token"].startswith("ghs_")
    expires_at = datetime.fromisoformat(minted["expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expires_at - datetime.now(UTC) <= timedelta(hours=1)
    assert [t.token for t in fake_github.tokens_minted] == [minted["token"]]
    assert fake_github.tokens_minted[0].installation_id == 7
    token_call = fake_github.calls[0]
    assert token_call.path == "/app/installations/7/access_tokens"
    assert token_call.authorization is not None
    assert token_call.authorization.startswith("bearer ")

    gh = api(session, fake_github, minted["token"])
    reaction = await gh.post(REACTIONS, repo_vars(comment_id=99), data={"content": "+1"})

    assert reaction["content"] == "+1"
    assert reaction["user"]["login"] == "aye[bot]"
    assert fake_github.reactions == [("octo/widgets", 99, "+1")]
    call = await fake_github.wait_for_call("POST", r"/repos/octo/widgets/.*/reactions")
    assert call.json_body == {"content": "+1"}
    assert call.authorization == f"token {minted['token']}"
    assert call.status == 201
    assert gh.rate_limit is not None and gh.rate_limit.limit == 5000


async def test_the_api_is_served_under_the_enterprise_prefix(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    """As GitHub Enterprise Server serves it (`https://host/api/v3`): a client that drops the
    base URL's path calls the host's root, and gets 404."""
    assert fake_github.api_url == fake_github.base_url + "/api/v3"
    minted = await installation_token(session, fake_github)
    rooted = GitHubAPI(session, "aye", base_url=fake_github.base_url, oauth_token=minted["token"])

    with pytest.raises(gidgethub.BadRequest) as refused:
        await rooted.post(REACTIONS, repo_vars(comment_id=5), data={"content": "+1"})
    await api(session, fake_github, minted["token"]).post(
        REACTIONS, repo_vars(comment_id=5), data={"content": "+1"}
    )

    assert refused.value.status_code == 404
    assert [(c.full_path, c.status) for c in fake_github.calls[1:]] == [
        ("/repos/octo/widgets/issues/comments/5/reactions", 404),
        ("/api/v3/repos/octo/widgets/issues/comments/5/reactions", 201),
    ]
    assert fake_github.calls[2].path == "/repos/octo/widgets/issues/comments/5/reactions"


async def test_the_prefix_can_be_left_out_as_on_api_github_com(
    session: aiohttp.ClientSession,
) -> None:
    async with FakeGitHub(prefix="") as fake:
        assert fake.api_url == fake.base_url
        reaction = await api(session, fake, fake.plain_token).post(
            REACTIONS, repo_vars(comment_id=5), data={"content": "+1"}
        )
    assert reaction["content"] == "+1"


async def test_each_mint_gives_a_new_token(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    first = await installation_token(session, fake_github)
    second = await installation_token(session, fake_github)

    assert first["token"] != second["token"]
    assert len(fake_github.tokens_minted) == 2


async def test_app_auth_built_into_gidgethub_works(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = GitHubAPI(
        session,
        "aye",
        base_url=fake_github.api_url,
        app_id=fake_github.app_id,
        private_key=fake_github.private_key_pem,
    )

    installation = await gh.getitem("/repos/{owner}/{repo}/installation", repo_vars())

    assert installation["id"] == 1


async def test_repo_without_installation_is_404(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    fake_github.repo_installations["octo/widgets"] = None
    jwt_token = apps.get_jwt(app_id=fake_github.app_id, private_key=fake_github.private_key_pem)

    with pytest.raises(gidgethub.BadRequest) as raised:
        await api(session, fake_github, None).getitem(
            "/repos/{owner}/{repo}/installation", repo_vars(), jwt=jwt_token
        )

    assert raised.value.status_code == 404


def other_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


@pytest.mark.parametrize("problem", ["other key", "other app", "expired", "too long"])
async def test_bad_app_jwt_is_401(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, problem: str
) -> None:
    now = int(time.time())
    claims: dict[str, Any] = {"iat": now - 60, "exp": now + 540, "iss": fake_github.app_id}
    key = fake_github.private_key_pem
    if problem == "other key":
        key = other_key_pem()
    elif problem == "other app":
        claims["iss"] = "1"
    elif problem == "expired":
        claims.update(iat=now - 700, exp=now - 100)
    else:
        claims["exp"] = now + 3600
    token = jwt.encode(claims, key, algorithm="RS256")

    with pytest.raises(gidgethub.BadRequest) as raised:
        await api(session, fake_github, None).post(
            "/app/installations/{id}/access_tokens", {"id": 7}, data=b"", jwt=token
        )

    assert raised.value.status_code == 401
    assert fake_github.tokens_minted == []


async def test_installation_token_is_not_an_app_jwt(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    minted = await installation_token(session, fake_github)

    with pytest.raises(gidgethub.BadRequest) as raised:
        await api(session, fake_github, None).post(
            "/app/installations/{id}/access_tokens", {"id": 7}, data=b"", jwt=minted["token"]
        )

    assert raised.value.status_code == 401


async def test_unknown_installation_is_404(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    fake_github.installation_ids = {1}

    with pytest.raises(gidgethub.BadRequest) as raised:
        await installation_token(session, fake_github, installation_id=7)

    assert raised.value.status_code == 404


@pytest.mark.parametrize("token", ["ghs_made_up", None])
async def test_bad_or_missing_token_is_401(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, token: str | None
) -> None:
    gh = api(session, fake_github, token)

    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(REACTIONS, repo_vars(comment_id=1), data={"content": "+1"})

    assert raised.value.status_code == 401
    assert str(raised.value) == "Bad credentials"
    assert fake_github.reactions == []
    assert fake_github.calls[-1].status == 401


async def test_plain_token_and_bearer_scheme_are_accepted(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    minted = await installation_token(session, fake_github)
    gh = api(session, fake_github, fake_github.plain_token)

    await gh.post(REACTIONS, repo_vars(comment_id=1), data={"content": "+1"})
    await api(session, fake_github, None).post(
        REACTIONS,
        repo_vars(comment_id=2),
        data={"content": "eyes"},
        extra_headers={"authorization": f"Bearer {minted['token']}"},
    )

    assert fake_github.reactions == [("octo/widgets", 1, "+1"), ("octo/widgets", 2, "eyes")]


async def test_expired_token_is_401_and_a_new_one_works(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    minted = await installation_token(session, fake_github)
    later = datetime.now(UTC) + timedelta(hours=1, seconds=1)
    fake_github.clock = lambda: later

    with pytest.raises(gidgethub.BadRequest) as raised:
        await api(session, fake_github, minted["token"]).post(
            REACTIONS, repo_vars(comment_id=1), data={"content": "+1"}
        )
    assert raised.value.status_code == 401

    fresh = await installation_token(session, fake_github)
    await api(session, fake_github, fresh["token"]).post(
        REACTIONS, repo_vars(comment_id=1), data={"content": "+1"}
    )
    assert fake_github.reactions == [("octo/widgets", 1, "+1")]


async def test_expire_tokens_invalidates_minted_tokens(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    minted = await installation_token(session, fake_github)
    fake_github.expire_tokens()

    with pytest.raises(gidgethub.BadRequest) as raised:
        await api(session, fake_github, minted["token"]).getitem(COMMENT, repo_vars(comment_id=1))

    assert raised.value.status_code == 401


async def test_fail_next_502_then_the_retry_works(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    fake_github.fail_next("POST", r"/repos/octo/widgets/issues/comments/\d+/reactions", times=2)
    url_vars = repo_vars(comment_id=5)

    for _ in range(2):
        with pytest.raises(gidgethub.GitHubBroken) as raised:
            await gh.post(REACTIONS, url_vars, data={"content": "+1"})
        assert raised.value.status_code == http.HTTPStatus.BAD_GATEWAY
    assert fake_github.reactions == []
    await gh.post(REACTIONS, url_vars, data={"content": "+1"})

    statuses = [c.status for c in fake_github.calls_matching("POST", r".*/reactions")]
    assert statuses == [502, 502, 201]
    assert fake_github.reactions == [("octo/widgets", 5, "+1")]


async def test_fault_only_hits_the_matching_method_and_path(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    fake_github.fail_next("PATCH", r".*/issues/comments/\d+", status=500)

    comment = await gh.post(ISSUE_COMMENTS, repo_vars(number=1), data={"body": "hi"})
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.patch(COMMENT, repo_vars(comment_id=comment["id"]), data={"body": "x"})

    assert fake_github.comments[comment["id"]]["body"] == "hi"


@pytest.mark.parametrize("status", [403, 429])
async def test_secondary_rate_limit_is_a_plain_bad_request_with_retry_after(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, status: int
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    fake_github.fail_next(
        "POST", r".*/reactions", status=status, retry_after=3, secondary_rate_limit=True
    )

    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(REACTIONS, repo_vars(comment_id=5), data={"content": "+1"})

    assert not isinstance(raised.value, gidgethub.RateLimitExceeded)
    assert raised.value.status_code == status
    assert raised.value.headers["retry-after"] == "3"
    assert "secondary rate limit" in str(raised.value)


async def test_429_carries_retry_after_without_asking(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    fake_github.fail_next("POST", r".*/reactions", status=429)

    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(REACTIONS, repo_vars(comment_id=5), data={"content": "+1"})

    assert raised.value.status_code == 429
    assert raised.value.headers["retry-after"] == "1"


async def test_primary_rate_limit_is_rate_limit_exceeded(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    fake_github.fail_next("POST", r".*/reactions", primary_rate_limit=True, retry_after=30)

    with pytest.raises(gidgethub.RateLimitExceeded) as raised:
        await gh.post(REACTIONS, repo_vars(comment_id=5), data={"content": "+1"})

    assert raised.value.status_code == 403
    assert raised.value.rate_limit.remaining == 0
    assert raised.value.rate_limit.reset_datetime > datetime.now(UTC)


async def test_comments_create_get_patch_list(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    minted = await installation_token(session, fake_github)
    gh = api(session, fake_github, minted["token"])
    issue = repo_vars(number=42)

    created = await gh.post(ISSUE_COMMENTS, issue, data={"body": "Question q7?"})
    assert created["body"] == "Question q7?"
    assert created["user"] == {"login": "aye[bot]", "id": created["user"]["id"], "type": "Bot"}
    # Real GitHub URLs: following them would leave the fake, as it would leave base_url.
    assert created["url"] == (
        f"https://api.github.com/repos/octo/widgets/issues/comments/{created['id']}"
    )
    assert created["html_url"].endswith(f"/octo/widgets/issues/42#issuecomment-{created['id']}")

    comment_vars = repo_vars(comment_id=created["id"])
    updated = await gh.patch(COMMENT, comment_vars, data={"body": "Answered: yes"})
    assert updated["id"] == created["id"] and updated["body"] == "Answered: yes"
    assert (await gh.getitem(COMMENT, comment_vars))["body"] == "Answered: yes"

    second = await gh.post(ISSUE_COMMENTS, issue, data={"body": "Another"})
    listed = await gh.getitem(ISSUE_COMMENTS, issue)
    assert [c["id"] for c in listed] == [created["id"], second["id"]]
    assert await gh.getitem(ISSUE_COMMENTS, repo_vars(number=43)) == []
    assert fake_github.comments_on("octo/widgets", 42) == listed


async def test_comment_lists_paginate_through_getiter(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    bodies = [f"comment {n}" for n in range(5)]
    for body in bodies:
        fake_github.add_comment("octo/widgets", 42, body)

    seen = [
        c["body"] async for c in gh.getiter(ISSUE_COMMENTS + "?per_page=2", repo_vars(number=42))
    ]

    assert seen == bodies
    pages = [c.query.get("page", "1") for c in fake_github.calls_matching("GET", r".*/comments")]
    assert pages == ["1", "2", "3"]


async def test_plain_token_comments_are_by_a_user(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)

    created = await gh.post(ISSUE_COMMENTS, repo_vars(number=1), data={"body": "hi"})

    assert created["user"]["type"] == "User"


async def test_unknown_comment_is_404(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    elsewhere = fake_github.add_comment("octo/other", 1, "not in widgets")

    for comment_id in (123, elsewhere["id"]):
        with pytest.raises(gidgethub.BadRequest) as raised:
            await gh.patch(COMMENT, repo_vars(comment_id=comment_id), data={"body": "x"})
        assert raised.value.status_code == 404
        with pytest.raises(gidgethub.BadRequest) as raised:
            await gh.getitem(COMMENT, repo_vars(comment_id=comment_id))
        assert raised.value.status_code == 404


async def test_unknown_route_is_a_json_404(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)

    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.getitem("/repos/{owner}/{repo}/pulls", repo_vars())

    assert raised.value.status_code == 404
    assert str(raised.value) == "Not Found"


async def test_invalid_bodies_are_422(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)

    with pytest.raises(gidgethub.InvalidField):
        await gh.post(REACTIONS, repo_vars(comment_id=1), data={"content": "thumbsup"})
    with pytest.raises(gidgethub.InvalidField):
        await gh.post(ISSUE_COMMENTS, repo_vars(number=1), data={"text": "no body"})
    with pytest.raises(gidgethub.ValidationError):
        await gh.post(ISSUE_COMMENTS, repo_vars(number=1), data={"body": "x" * 65537})

    assert fake_github.reactions == [] and fake_github.comments == {}


async def test_repeated_reaction_is_200_and_kept_once(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    url_vars = repo_vars(comment_id=8)

    first = await gh.post(REACTIONS, url_vars, data={"content": "confused"})
    again = await gh.post(REACTIONS, url_vars, data={"content": "confused"})

    assert again == first
    assert [c.status for c in fake_github.calls] == [201, 200]
    assert fake_github.reactions == [("octo/widgets", 8, "confused")]


async def test_wait_for_call_wakes_on_a_later_call(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    await gh.post(REACTIONS, repo_vars(comment_id=1), data={"content": "+1"})

    def confused(call: GitHubCall) -> bool:
        return bool(call.json_body == {"content": "confused"})

    waiter = asyncio.create_task(
        fake_github.wait_for_call("POST", r".*/reactions", predicate=confused, timeout=5)
    )
    await gh.post(REACTIONS, repo_vars(comment_id=2), data={"content": "confused"})

    call = await waiter
    assert call.path.endswith("/comments/2/reactions")


async def test_wait_for_call_times_out_naming_what_it_saw(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    await api(session, fake_github, fake_github.plain_token).getitem(
        ISSUE_COMMENTS, repo_vars(number=1)
    )

    with pytest.raises(TimeoutError, match=r"GET /repos/octo/widgets/issues/1/comments -> 200"):
        await fake_github.wait_for_call("POST", r".*/reactions", timeout=0.05)


async def test_wait_for_call_since_skips_earlier_calls(
    fake_github: FakeGitHub, session: aiohttp.ClientSession
) -> None:
    gh = api(session, fake_github, fake_github.plain_token)
    await gh.post(REACTIONS, repo_vars(comment_id=1), data={"content": "+1"})

    with pytest.raises(TimeoutError):
        await fake_github.wait_for_call(
            "POST", r".*/reactions", timeout=0.05, since=len(fake_github.calls)
        )


# -- webhooks ------------------------------------------------------------------------------


def test_sign_verifies_with_gidgethub() -> None:
    body = json.dumps(load_event("ping.with-app_id")).encode()
    headers = {
        "content-type": "application/json",
        "x-github-event": "ping",
        "x-github-delivery": "d-1",
        "x-hub-signature-256": sign(body, SECRET),
    }

    event = sansio.Event.from_http(headers, body, secret=SECRET)

    assert event.event == "ping" and event.delivery_id == "d-1"
    assert event.data["hook_id"] == load_event("ping.with-app_id")["hook_id"]
    with pytest.raises(gidgethub.ValidationFailure):
        sansio.Event.from_http(headers, body, secret="another secret")
    with pytest.raises(gidgethub.ValidationFailure):
        sansio.Event.from_http(headers, body + b" ", secret=SECRET)


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[sansio.Event | str]]]:
    """A webhook endpoint that checks deliveries with gidgethub and records what it got."""
    received: list[sansio.Event | str] = []

    async def webhook(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = sansio.Event.from_http(request.headers, body, secret=SECRET)
        except gidgethub.ValidationFailure as exc:
            received.append(f"refused: {exc}")
            return web.Response(status=401)
        received.append(event)
        return web.Response(status=202, text=request.headers["User-Agent"])

    app = web.Application()
    app.router.add_post("/github/webhook", webhook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/github/webhook", received
    finally:
        await runner.cleanup()


async def test_deliver_sends_a_signed_webhook(
    session: aiohttp.ClientSession, receiver: tuple[str, list[sansio.Event | str]]
) -> None:
    url, received = receiver
    payload = issue_comment_event(body="/answer yes", login="octocat")

    result = await deliver(session, url, "issue_comment", payload, SECRET)

    assert result.status == 202
    assert result.text.startswith("GitHub-Hookshot/")
    uuid.UUID(result.delivery_id)
    [event] = received
    assert isinstance(event, sansio.Event)
    assert event.event == "issue_comment"
    assert event.delivery_id == result.delivery_id
    assert event.data == payload


async def test_deliver_with_a_wrong_or_missing_signature_is_refused(
    session: aiohttp.ClientSession, receiver: tuple[str, list[sansio.Event | str]]
) -> None:
    url, received = receiver
    payload = issue_comment_event(body="/answer yes", login="octocat")

    wrong = await deliver(session, url, "issue_comment", payload, "not the secret")
    unsigned = await deliver(session, url, "issue_comment", payload, None)
    forged = await deliver(session, url, "issue_comment", payload, SECRET, signature="sha256=00")

    assert (wrong.status, unsigned.status, forged.status) == (401, 401, 401)
    assert received == [
        "refused: payload's signature does not align with the secret",
        "refused: signature is missing",
        "refused: payload's signature does not align with the secret",
    ]


async def test_deliver_keeps_a_given_delivery_id(
    session: aiohttp.ClientSession, receiver: tuple[str, list[sansio.Event | str]]
) -> None:
    url, received = receiver
    payload = load_event("ping.with-app_id")

    first = await deliver(session, url, "ping", payload, SECRET)
    again = await deliver(session, url, "ping", payload, SECRET, delivery_id=first.delivery_id)

    assert again.delivery_id == first.delivery_id
    ids = [e.delivery_id for e in received if isinstance(e, sansio.Event)]
    assert ids == [first.delivery_id, first.delivery_id]


def test_issue_comment_event_is_consistent() -> None:
    payload = issue_comment_event(
        body="/answer 2\nbecause", login="octocat", repo="acme/rocket", number=7, installation_id=9
    )

    assert payload["action"] == "created"
    assert payload["repository"]["full_name"] == "acme/rocket"
    assert payload["repository"]["name"] == "rocket"
    assert payload["repository"]["owner"]["login"] == "acme"
    assert payload["issue"]["number"] == 7
    assert payload["issue"]["url"] == "https://api.github.com/repos/acme/rocket/issues/7"
    assert payload["issue"]["html_url"] == "https://github.com/acme/rocket/issues/7"
    assert "pull_request" not in payload["issue"]
    assert payload["comment"]["body"] == "/answer 2\nbecause"
    assert payload["comment"]["user"]["login"] == "octocat"
    assert payload["comment"]["issue_url"] == payload["issue"]["url"]
    assert payload["sender"]["login"] == "octocat"
    assert payload["sender"]["type"] == "User"
    assert payload["installation"]["id"] == 9
    assert "Codertocat/Hello-World" not in json.dumps(payload)


def test_issue_comment_event_variants() -> None:
    first = issue_comment_event(body="x", login="a")
    second = issue_comment_event(body="x", login="a")
    on_pr = issue_comment_event(body="x", login="a", is_pull_request=True, number=5)
    by_bot = issue_comment_event(body="x", login="aye[bot]", sender_type="Bot")
    edited = issue_comment_event(action="edited", body="x", login="a", comment_id=77)
    no_installation = issue_comment_event(body="x", login="a", installation_id=None)

    assert first["comment"]["id"] != second["comment"]["id"]
    assert on_pr["issue"]["pull_request"]["url"].endswith("/repos/owner/name/pulls/5")
    assert on_pr["issue"]["html_url"] == "https://github.com/owner/name/pull/5"
    assert by_bot["sender"]["type"] == "Bot" and by_bot["comment"]["user"]["type"] == "Bot"
    assert edited["action"] == "edited" and "changes" in edited
    assert edited["comment"]["id"] == 77
    assert "installation" not in no_installation
    assert issue_comment_event(action="deleted", body="x", login="a")["action"] == "deleted"


def test_pull_request_review_event_is_consistent() -> None:
    payload = pull_request_review_event(
        body="/answer approve", login="octocat", repo="acme/rocket", number=12, state="approved"
    )

    assert payload["action"] == "submitted"
    assert payload["repository"]["full_name"] == "acme/rocket"
    assert payload["pull_request"]["number"] == 12
    assert payload["pull_request"]["url"] == "https://api.github.com/repos/acme/rocket/pulls/12"
    assert payload["pull_request"]["issue_url"].endswith("/repos/acme/rocket/issues/12")
    assert payload["review"]["body"] == "/answer approve"
    assert payload["review"]["state"] == "approved"
    assert payload["review"]["user"]["login"] == "octocat"
    assert payload["sender"]["login"] == "octocat"
    assert payload["installation"]["id"] == 1
    assert "Codertocat/Hello-World" not in json.dumps(payload)
