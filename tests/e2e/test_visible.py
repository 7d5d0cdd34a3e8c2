"""What a person sees is what the agent sent: the issue's example input, whose right-to-left
override shows `echo safe ; rm -fr /tmp/beach.txt` reordered, reaches every surface with its
override shown as its code (`[U+202E]`) and the approval marked as holding hidden or
reordering characters, while the API returns it unchanged. Through the real surfaces: the
real slack-bolt against the fake Slack, the mail the SMTP server received, the inbox in
Chromium, `aye show` and `aye asks` as processes, and the TUI through Textual's pilot; on
SQLite and PostgreSQL. (GitHub's comment: tests/e2e/test_github_shown.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, async_playwright, expect

from bot.config import Config
from bot.tui.api import Api
from bot.tui.app import Tui
from bot.tui.inbox import Inbox
from tests.conftest import AGENT_HEADERS, OPERATOR_TOKEN, Aye, StartAye
from tests.e2e.test_email import links, mails, page
from tests.e2e.test_process import base_env
from tests.e2e.test_slack_surface import ok, shown, slack_env
from tests.e2e.test_tui import inbox, panel, until
from tests.e2e.test_web_browser import CHROMIUM, signed_in
from tests.fake_slack import FakeSlack
from tests.smtp_server import SmtpServer, email_env, smtp_server
from tests.unit.test_web_harness import Operator, StartInbox, inboxes

TRICK = {"cmd": "echo safe \u202e; txt.hcaeb/ pmt/ fr- mr \u202c"}
OVERRIDE, POP = "\u202e", "\u202c"
SHOWN = "echo safe [U+202E]; txt.hcaeb/ pmt/ fr- mr [U+202C]"
MARK = "this request contains hidden or reordering characters"
ADA = "ada@example.com"
SLACK_USER = "U0123ABCD"
CONFIG = Config.model_validate({
    "defaults": {"responders": [f"email:{ADA}", "operator:local"]},
    "slack": {"default_channel": "C0DEFAULT"},
    "gates": [{"operations": ["deploy."],
               "responders": [f"slack:{SLACK_USER}", f"email:{ADA}", "operator:local"]}],
})


def raw_free(text: str) -> None:
    assert OVERRIDE not in text and POP not in text, text


async def gated(aye: Aye) -> dict[str, Any]:
    """The issue's call, pending; the API gives back the input exactly as it was sent."""
    resp = await aye.client.post("/v1/calls", json={"operation": "deploy.prod", "input": TRICK},
                                 headers=AGENT_HEADERS)
    assert resp.status == 202, await resp.text()
    ask: dict[str, Any] = (await resp.json())["ask"]
    view = await aye.get(ask["id"], operator=True)
    assert view["input"] == TRICK
    return ask


@pytest.fixture
async def smtp() -> AsyncIterator[SmtpServer]:
    async with smtp_server() as server:
        yield server


async def test_slack_shows_the_override_as_its_code_and_marks_the_approval(
    start_aye: StartAye, database_url: str, fake_slack: FakeSlack
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=slack_env(fake_slack))
    await gated(aye)
    posted = await fake_slack.wait_for_call("chat.postMessage", ok)

    raw_free(json.dumps(posted.args, ensure_ascii=False))  # blocks and top-level text alike
    text = shown(posted.args)
    assert SHOWN in text
    assert MARK in text
    assert text.index(MARK) < text.index(SHOWN)


async def test_mail_shows_the_override_as_its_code_in_subject_text_html_and_page(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=email_env(smtp))
    await gated(aye)
    (mail,) = await mails(smtp, 1)
    for part in (mail.part("plain"), mail.part("html")):
        raw_free(part)
        assert SHOWN in part and MARK in part
    status, html = await page(aye, links(mail)[0])
    assert status == 200
    raw_free(html)
    assert SHOWN in html and MARK in html

    # A question's own text, in the subject too (one line, its override shown).
    await aye.ask(question=f"Ship {OVERRIDE}2v?")
    (_, asked) = await mails(smtp, 2)
    subject = str(asked.message["Subject"])
    raw_free(subject)
    assert subject == "[aye] Ship [U+202E]2v?"
    assert MARK not in asked.part("plain")  # a question is not an approval


async def aye_cli(aye: Aye, tmp: Path, *args: str) -> str:
    """The real `aye` CLI, run against this test's server (without blocking its loop)."""
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/cli.db", AYE_URL=aye.url.rstrip("/"),
                   AYE_OPERATOR_TOKEN=OPERATOR_TOKEN)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, cwd=tmp, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_aye_show_and_aye_asks_show_the_override_as_its_code_and_mark_it(
    start_aye: StartAye, database_url: str, tmp_path: Path
) -> None:
    aye = await start_aye(database_url, config=CONFIG)
    ask = await gated(aye)

    shown_ = await aye_cli(aye, tmp_path, "show", ask["ref"])
    raw_free(shown_)
    assert SHOWN in shown_ and f"warning: {MARK}" in shown_

    listed = await aye_cli(aye, tmp_path, "asks")
    raw_free(listed)
    assert "echo safe [U+202E]" in listed
    assert f"{ask['ref']}: careful, {MARK}" in listed


async def test_the_tui_shows_the_override_as_its_code_and_marks_it(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, config=CONFIG)
    ask = await gated(aye)
    app = Tui(Api(aye.url.rstrip("/"), OPERATOR_TOKEN))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: any(isinstance(s, Inbox) for s in app.screen_stack)
                    and inbox(app).live, "the live list")
        await pilot.press("slash", *ask["ref"], "enter")
        await until(pilot, lambda: ask["ref"] in panel(app) and SHOWN in panel(app), "the ask")
        text = panel(app)
    raw_free(text)
    assert MARK in text


CHROMIUM_MISSING = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                      reason="Debian's chromium is not installed")


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield launched
        finally:
            await launched.close()


@CHROMIUM_MISSING
async def test_the_inbox_shows_the_override_as_its_code_and_marks_it(
    start_inbox: StartInbox, database_url: str, browser: Browser
) -> None:
    aye = await start_inbox(database_url, CONFIG)
    ask = await gated(aye)
    page_ = await signed_in(browser, aye)
    for where in ("/inbox", f"/inbox/{ask['ref']}"):
        await page_.goto(aye.url + where)
        item = page_.locator(f'li[data-ref="{ask["ref"]}"]')
        await expect(item.locator("pre.input")).to_contain_text(SHOWN)
        await expect(item.get_by_text(MARK)).to_be_visible()
        raw_free(await item.inner_text())
        raw_free(await page_.content())


async def test_the_inbox_shows_an_answer_from_the_agents_options_with_its_codes(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, CONFIG)
    asked = await aye.ask(question=f"Ship {OVERRIDE}2v?", options=[f"ship {OVERRIDE}ti", "hold"])
    status, _ = await aye.answer(asked["ref"], f"ship {OVERRIDE}ti")
    assert status == 200
    operator = Operator(aye)
    await operator.sign_in()
    shown_ = await operator.page(f"/inbox/{asked['ref']}")
    raw_free(shown_)
    assert "Ship [U+202E]2v?" in shown_ and "ship [U+202E]ti" in shown_
