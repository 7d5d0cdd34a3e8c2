"""GitHub App auth against the fake GitHub: tokens minted once per installation and renewed
before they expire, installations looked up once per repository."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import aiohttp
import gidgethub
import pytest

from ask_api.tokens import TokenBook
from bot.app import create_app
from bot.config import Config
from core.app.ports import SurfaceConfigError
from core.app.timing import ManualClock
from handlers.github.auth import GitHubAuth, NotInstalled
from handlers.github.settings import read_settings
from tests.conftest import settings_for
from tests.fake_github import FakeGitHub

REACTIONS = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


def app_auth(fake: FakeGitHub, clock: ManualClock) -> GitHubAuth:
    fake.clock = lambda: datetime.fromtimestamp(clock.now(), UTC)
    settings = settings_for(
        "sqlite+aiosqlite:///unused.db",
        GITHUB_WEBHOOK_SECRET="s", GITHUB_APP_ID=fake.app_id,
        GITHUB_PRIVATE_KEY=fake.private_key_pem, GITHUB_API_URL=fake.api_url,
    )
    github = read_settings(settings.env)
    assert github is not None
    return GitHubAuth(github, clock)


async def react(auth: GitHubAuth, session: aiohttp.ClientSession, installation: int | None) -> str:
    gh = await auth.api(session, "octo/widgets", installation)
    await gh.post(REACTIONS, {"owner": "octo", "repo": "widgets", "comment_id": "1"},
                  data={"content": "+1"})
    return gh.oauth_token or ""


async def test_concurrent_calls_share_one_minted_token(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, manual_clock: ManualClock
) -> None:
    auth = app_auth(fake_github, manual_clock)

    tokens = await asyncio.gather(*(react(auth, session, 7) for _ in range(5)))

    assert len(set(tokens)) == 1
    assert [(t.installation_id, t.token) for t in fake_github.tokens_minted] == [(7, tokens[0])]


async def test_a_token_is_renewed_a_few_minutes_before_it_expires(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, manual_clock: ManualClock
) -> None:
    auth = app_auth(fake_github, manual_clock)
    first = await react(auth, session, 7)

    manual_clock.advance(54 * 60)
    assert await react(auth, session, 7) == first
    manual_clock.advance(2 * 60)  # 4 minutes left
    renewed = await react(auth, session, 7)

    assert renewed != first and len(fake_github.tokens_minted) == 2
    assert await react(auth, session, 8) not in (first, renewed)  # per installation


async def test_the_installation_is_looked_up_once_per_repo(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, manual_clock: ManualClock
) -> None:
    fake_github.repo_installations["octo/widgets"] = 31
    auth = app_auth(fake_github, manual_clock)

    await react(auth, session, None)
    await react(auth, session, None)

    lookups = fake_github.calls_matching("GET", r"/repos/octo/widgets/installation")
    assert len(lookups) == 1 and lookups[0].authorization is not None
    assert lookups[0].authorization.startswith("bearer ")
    assert [t.installation_id for t in fake_github.tokens_minted] == [31]


async def test_a_refused_token_is_forgotten_and_a_repo_without_the_app_is_named(
    fake_github: FakeGitHub, session: aiohttp.ClientSession, manual_clock: ManualClock
) -> None:
    auth = app_auth(fake_github, manual_clock)
    first = await react(auth, session, 7)
    fake_github.expire_tokens()

    with pytest.raises(gidgethub.BadRequest) as refused:
        await react(auth, session, 7)
    assert refused.value.status_code == 401
    auth.forget(7, "octo/widgets")
    assert await react(auth, session, 7) != first

    fake_github.repo_installations["octo/gone"] = None
    with pytest.raises(NotInstalled):
        await auth.api(session, "octo/gone")


def test_a_private_key_that_cannot_sign_stops_start_up(fake_github: FakeGitHub) -> None:
    settings = settings_for(
        "sqlite+aiosqlite:///unused.db",
        GITHUB_WEBHOOK_SECRET="s", GITHUB_APP_ID=fake_github.app_id,
        GITHUB_PRIVATE_KEY="-----BEGIN RSA PRIVATE KEY-----\nnot a key\n",
    )
    with pytest.raises(SurfaceConfigError) as stopped:
        create_app(settings, Config(), TokenBook.build(Config(), "op", "agent"))
    assert "GITHUB_PRIVATE_KEY" in str(stopped.value) and "not a key" not in str(stopped.value)
