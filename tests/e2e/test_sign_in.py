"""Signing in as a person, in a real browser (Playwright driving Debian's Chromium) through the
real redirect flows: "Sign in with Slack" and the organisation's provider against the fake
OpenID Connect provider (tests/fake_idp.py), "Sign in with GitHub" against the fake GitHub's
OAuth web flow. A good sign-in lands on the page the person was going to, signed in as them;
every misbehaviour of a provider, and a tampered, missing or replayed state, is refused with
one sentence on /login, with no session in the store and no cookie in the browser. On both
stores."""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect
from sqlalchemy import select

from ask_api.tokens import TokenBook
from bot.app import create_app
from bot.config import Config
from core.app.timing import Clock
from store.models import SessionRow
from tests.conftest import AGENT_TOKEN, OPERATOR_TOKEN, Aye, settings_for
from tests.e2e.test_process import free_port
from tests.e2e.test_slack_surface import slack_env
from tests.e2e.test_web_browser import CHROMIUM
from tests.fake_github import OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, FakeGitHub
from tests.fake_idp import FakeIdP, Person
from tests.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.fake_slack import TEAM_ID as SLACK_TEAM_ID

# One browser for the module (a fresh context for each test): launching Chromium is most of a
# short test's time, so the tests share its loop.
pytestmark = [
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason="Debian's chromium is not installed (apt-get install chromium; "
                              ".ci/run installs it)"),
    pytest.mark.asyncio(loop_scope="module"),
]
SESSIONS = SessionRow.__table__  # type: ignore[attr-defined]
TEAM = "T0AYETEAM"  # aye's workspace, as [slack] teams names it (the Slack bot is off here)
ADA = Person(sub="U0AYEADA1", email="Ada@Example.com", team=TEAM)
WHO = {"slack": "slack:U0AYEADA1", "github": "github:ada-l", "oidc": "email:ada@example.com"}
BUTTON = {"slack": "Sign in with Slack", "github": "Sign in with GitHub",
          "oidc": "Sign in with 127.0.0.1"}
OIDC_SECRET_ENV = "AYE_TEST_OIDC_SECRET"
STALE = ("That sign-in was not begun in this browser, took too long or was used already: "
         "start again.")


@dataclass
class Site:
    """aye with every sign-in set up, and the providers behind them."""

    aye: Aye
    slack: FakeIdP
    org: FakeIdP
    github: FakeGitHub

    def fake(self, provider: str) -> Any:
        return {"slack": self.slack, "oidc": self.org, "github": self.github}[provider]

    def misbehave(self, provider: str, how: str) -> None:
        if provider == "github":
            self.github.oauth_misbehave = how
        else:
            self.fake(provider).misbehave = how

    def refusals(self) -> list[str]:
        return self.slack.refusals + self.org.refusals + self.github.oauth_refusals


def config(org: FakeIdP) -> Config:
    return Config.model_validate({
        "defaults": {"responders": [*WHO.values(), "operator:local"]},
        "slack": {"teams": [TEAM]},
        "web": {"oidc": {"issuer": org.issuer, "client_id": org.client_id,
                         "client_secret_env": OIDC_SECRET_ENV}},
    })


@contextlib.asynccontextmanager
async def site(database_url: str, **env: str) -> AsyncIterator[Site]:
    """The providers, and aye listening where its redirect URIs say (AYE_HOST:AYE_PORT)."""
    async with FakeIdP(slack=True, person=ADA) as slack, FakeIdP(person=ADA) as org, \
            FakeGitHub() as github:
        port = free_port()
        origin = f"http://127.0.0.1:{port}"
        slack.redirect_uris.add(f"{origin}/login/slack/callback")
        org.redirect_uris.add(f"{origin}/login/oidc/callback")
        github.oauth_redirect_uri = f"{origin}/login/github/callback"
        settings = settings_for(database_url, **{
            "AYE_HOST": "127.0.0.1", "AYE_PORT": str(port),
            "SLACK_CLIENT_ID": slack.client_id, "SLACK_CLIENT_SECRET": slack.client_secret,
            "SLACK_OIDC_ISSUER": slack.issuer,
            "GITHUB_CLIENT_ID": OAUTH_CLIENT_ID, "GITHUB_CLIENT_SECRET": OAUTH_CLIENT_SECRET,
            "GITHUB_WEB_URL": github.web_url, "GITHUB_API_URL": github.api_url, **env})
        cfg = config(org)
        app = create_app(settings, cfg, TokenBook.build(cfg, OPERATOR_TOKEN, AGENT_TOKEN), Clock())
        client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1", port=port))
        await client.start_server()
        try:
            yield Site(Aye(client, app, Clock()), slack, org, github)
        finally:
            await client.close()


@pytest.fixture
def org_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    # [web.oidc] names the variable holding its secret; the config reads it when validated.
    from tests.fake_idp import CLIENT_SECRET

    monkeypatch.setenv(OIDC_SECRET_ENV, CLIENT_SECRET)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Browser]:
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def browser(chromium: Browser) -> AsyncIterator[BrowserContext]:
    """A browser of its own for the test: cookies and pages of no other test."""
    context = await chromium.new_context()
    try:
        yield context
    finally:
        await context.close()


async def sessions_kept(aye: Aye) -> list[tuple[str, str]]:
    async with aye.asks.parts.store.read() as conn:
        rows = (await conn.execute(select(SESSIONS.c.identity, SESSIONS.c.method))).all()
    return [(row.identity, row.method) for row in rows]


async def press(page: Page, provider: str) -> None:
    await page.get_by_role("link", name=BUTTON[provider]).click()


async def refused_with(page: Page, site: Site, sentence: str) -> None:
    """On /login, saying `sentence` alone; nobody signed in, no cookie left behind."""
    await expect(page.get_by_role("alert")).to_have_text(sentence)
    assert urlsplit(page.url).path == "/login"
    await expect(page.get_by_label("Operator token")).to_be_visible()
    assert await sessions_kept(site.aye) == []
    assert await page.context.cookies() == []


# -- a good sign-in -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["slack", "github", "oidc"])
async def test_a_person_signs_in_and_lands_where_they_were_going(
    database_url: str, org_secret: None, browser: BrowserContext, provider: str
) -> None:
    async with site(database_url) as s:
        ref = (await s.aye.ask(question="Ship it?", options=["yes", "no"]))["ref"]
        page = await browser.new_page()
        await page.goto(f"{s.aye.url}/inbox/{ref}")
        where = urlsplit(page.url)
        assert (where.path, dict(parse_qsl(where.query))) == ("/login", {"next": f"/inbox/{ref}"})
        await press(page, provider)
        await expect(page.get_by_role("heading", name="Ship it?", level=1)).to_be_visible()
        assert page.url == f"{s.aye.url}/inbox/{ref}"
        await page.goto(f"{s.aye.url}/login?again=1")  # where one signs in afresh (step-up)
        await expect(page.get_by_text(f"You are signed in as {WHO[provider]}.")).to_be_visible()
        assert await sessions_kept(s.aye) == [(WHO[provider], provider)]
        [cookie] = await page.context.cookies()  # the session's; the sign-in's is gone
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == ("aye_session", True, "Strict")
        assert s.refusals() == []  # every check of the strict providers passed


async def test_login_offers_a_button_per_sign_in_beside_the_operator_token(
    tmp_path: Any, org_secret: None, browser: BrowserContext
) -> None:
    async with site(f"sqlite+aiosqlite:///{tmp_path}/aye.db") as s:
        page = await browser.new_page()
        await page.goto(f"{s.aye.url}/login")
        links = page.get_by_role("link", name="Sign in with")
        await expect(links).to_have_text(list(BUTTON.values()))
        await expect(page.get_by_label("Operator token")).to_be_visible()
        await expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        health = await (await s.aye.client.get("/healthz")).json()
        assert health["sign_in"] == ["token", "slack", "github", "oidc"]


# -- a provider that misbehaves -------------------------------------------------------------------

UNCONFIRMED = "{} could not confirm who you are, so you are not signed in."
MISBEHAVIOURS = {
    "slack": {
        "denied": "Sign-in with Slack was cancelled, so you are not signed in.",
        "nonce": UNCONFIRMED.format("Slack"),
        "audience": UNCONFIRMED.format("Slack"),
        "expired": UNCONFIRMED.format("Slack"),
        "signature": UNCONFIRMED.format("Slack"),
        "other_team": "Only members of this Slack workspace can sign in here.",
        "refuse_token": UNCONFIRMED.format("Slack"),
        "hang_up": "Slack could not be reached, so you are not signed in: try again in a moment.",
    },
    "oidc": {
        "unverified": "127.0.0.1 has not verified your email address, so it cannot sign you in.",
        "nonce": UNCONFIRMED.format("127.0.0.1"),
        "expired": UNCONFIRMED.format("127.0.0.1"),
    },
    "github": {
        "denied": "Sign-in with GitHub was cancelled, so you are not signed in.",
        "refuse_token": UNCONFIRMED.format("GitHub"),
    },
}


@pytest.mark.parametrize("provider", list(MISBEHAVIOURS))
async def test_a_misbehaving_provider_signs_nobody_in(
    database_url: str, org_secret: None, chromium: Browser, subtests: pytest.Subtests,
    provider: str,
) -> None:
    """Each misbehaviour on its own, each in a browser of its own, against one aye."""
    async with site(database_url) as s:
        for how, sentence in MISBEHAVIOURS[provider].items():
            with subtests.test(how):
                s.misbehave(provider, how)
                context = await chromium.new_context()
                try:
                    page = await context.new_page()
                    await page.goto(f"{s.aye.url}/login")
                    await press(page, provider)
                    await refused_with(page, s, sentence)
                finally:
                    await context.close()


async def test_a_provider_that_is_down_signs_nobody_in(
    database_url: str, org_secret: None, browser: BrowserContext
) -> None:
    async with site(database_url) as s:
        await s.org.close()  # discovery cannot be read: the sign-in cannot even begin
        page = await browser.new_page()
        await page.goto(f"{s.aye.url}/login")
        await press(page, "oidc")
        await refused_with(
            page, s, "127.0.0.1 could not be reached, so you are not signed in: try again in a moment.")


# -- the state: bound to this browser, used once ---------------------------------------------------


def with_state(url: str, state: str | None) -> str:
    parts = urlsplit(url)
    query = [(k, state) for k, v in parse_qsl(parts.query) if k == "state" and state is not None]
    query += [(k, v) for k, v in parse_qsl(parts.query) if k != "state"]
    return parts._replace(query=urlencode(query)).geturl()


async def at_consent(page: Page, s: Site, provider: str) -> str:
    """Begin signing in with `provider` (a consenting one) and stop at its page: the URL its
    "Allow" link sends the browser back to."""
    s.fake(provider).consent = True
    await page.goto(f"{s.aye.url}/login")
    await press(page, provider)
    href = await page.get_by_role("link", name="Allow").get_attribute("href")
    assert href is not None
    return href


async def test_a_changed_or_missing_state_signs_nobody_in(
    database_url: str, org_secret: None, browser: BrowserContext, subtests: pytest.Subtests
) -> None:
    async with site(database_url) as s:
        page = await browser.new_page()
        for state in ("forged-state", "", None):
            with subtests.test(state=state):
                back = await at_consent(page, s, "slack")
                await page.goto(with_state(back, state))
                await refused_with(page, s, STALE)


async def test_a_state_changed_in_the_cookie_too_signs_nobody_in(
    database_url: str, org_secret: None, browser: BrowserContext
) -> None:
    """The cookie is signed: a state written into it and into the callback matches nothing."""
    async with site(database_url) as s:
        page = await browser.new_page()
        back = await at_consent(page, s, "slack")
        [cookie] = await browser.cookies()
        body, _, mac = cookie["value"].partition(".")
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        data["s"] = "chosen-state"
        forged = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
        await browser.add_cookies([{**cookie, "value": f"{forged}.{mac}"}])  # type: ignore[list-item]
        await page.goto(with_state(back, "chosen-state"))
        await refused_with(page, s, STALE)


async def test_signing_in_again_ends_the_older_session(
    database_url: str, org_secret: None, browser: BrowserContext
) -> None:
    async with site(database_url) as s:
        page = await browser.new_page()
        await page.goto(f"{s.aye.url}/login")
        await press(page, "slack")
        await expect(page.get_by_role("heading", name="Open asks")).to_be_visible()
        await page.goto(f"{s.aye.url}/login?again=1")
        await press(page, "github")
        await expect(page.get_by_role("heading", name="Open asks")).to_be_visible()
        assert await sessions_kept(s.aye) == [(WHO["github"], "github")]
        await page.goto(f"{s.aye.url}/login?again=1")
        await expect(page.get_by_text(f"You are signed in as {WHO['github']}.")).to_be_visible()


async def test_a_callback_in_another_browser_signs_nobody_in(
    database_url: str, org_secret: None, browser: BrowserContext, chromium: Browser
) -> None:
    async with site(database_url) as s:
        page = await browser.new_page()
        back = await at_consent(page, s, "oidc")
        # Someone else's browser, sent the callback (login CSRF): it began no sign-in.
        elsewhere = await chromium.new_context()
        other = await elsewhere.new_page()
        await other.goto(back)
        await refused_with(other, s, STALE)
        await elsewhere.close()
        # Nor does the browser that began it get in once its cookie is gone.
        await page.context.clear_cookies()
        await page.get_by_role("link", name="Allow").click()
        await refused_with(page, s, STALE)


async def test_a_callback_replayed_with_its_cookie_signs_nobody_in_again(
    database_url: str, org_secret: None, browser: BrowserContext
) -> None:
    async with site(database_url) as s:
        page = await browser.new_page()
        back = await at_consent(page, s, "oidc")
        copied = await page.context.cookies()  # what an eavesdropper would keep
        await page.get_by_role("link", name="Allow").click()
        await expect(page.get_by_role("heading", name="Open asks")).to_be_visible()
        await page.get_by_role("button", name="Sign out").click()
        await expect(page.get_by_label("Operator token")).to_be_visible()
        assert await sessions_kept(s.aye) == []
        await page.context.add_cookies(copied)  # type: ignore[arg-type]
        await page.goto(back)
        await refused_with(page, s, STALE)


async def test_deny_at_the_provider_signs_nobody_in(
    database_url: str, org_secret: None, browser: BrowserContext
) -> None:
    async with site(database_url) as s:
        page = await browser.new_page()
        await at_consent(page, s, "slack")
        await page.get_by_role("link", name="Deny").click()
        await refused_with(page, s, "Sign-in with Slack was cancelled, so you are not signed in.")


# -- Slack's workspace, with the Slack bot on -----------------------------------------------------


async def test_with_the_slack_bot_on_its_own_workspace_signs_in(
    database_url: str, org_secret: None, chromium: Browser
) -> None:
    """aye's own workspace is its bot token's team (auth.test); `[slack] teams` adds others."""
    async with FakeSlack(bot_token=BOT_TOKEN, app_token=APP_TOKEN) as slack_api, \
            site(database_url, **slack_env(slack_api)) as s:
        await slack_api.wait_for_call("auth.test")
        for team, admitted in ((SLACK_TEAM_ID, True), (TEAM, True), ("T0SOMEONE", False)):
            s.slack.person = Person(sub=ADA.sub, team=team)
            context = await chromium.new_context()
            page = await context.new_page()
            await page.goto(f"{s.aye.url}/login")
            await press(page, "slack")
            if admitted:
                await expect(page.get_by_role("heading", name="Open asks")).to_be_visible()
            else:
                await expect(page.get_by_role("alert")).to_have_text(
                    "Only members of this Slack workspace can sign in here.")
                assert await context.cookies() == []
            await context.close()
        assert await sessions_kept(s.aye) == [(WHO["slack"], "slack")] * 2
