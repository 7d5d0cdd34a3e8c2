"""A mailed link answered in a real browser (Playwright driving Debian's Chromium), with
JavaScript off: the link taken from the HTML part of the mail aiosmtpd received, the page's form
rendered from the ask's schema as the inbox renders it, filled by its labels, confirmed; and a
destructive approval's Approve link, which the page asks to confirm as such. No Content
Security Policy violation on the way."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Browser, Page, expect

from bot.config import Config
from tests.conftest import AGENT_HEADERS, Aye, StartAye, eventually
from tests.e2e.test_web_browser import browser  # a fixture, used by name below
from tests.e2e.test_web_pages import FORM_SCHEMA
from tests.smtp_server import SmtpServer, email_env, smtp_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)",
)
__all__ = ["browser", "smtp_server"]
ADA = "ada@example.com"
CONFIG = Config.model_validate({
    "defaults": {"responders": [f"email:{ADA}"]},
    "gates": [{"operations": ["db."], "responders": [f"email:{ADA}"], "danger": True}],
})


@pytest.fixture
async def smtp() -> AsyncIterator[SmtpServer]:
    async with smtp_server() as server:
        yield server


async def opened(browser: Browser, aye: Aye, smtp: SmtpServer, nth: int, violations: list[str],
                 name: str) -> Page:
    """A page (JavaScript off) on the link named `name` in the `nth` mail's HTML part."""
    async def arrived() -> bool:
        return len(smtp.mailbox.received) > nth

    await eventually(arrived)
    html = smtp.mailbox.received[nth].part("html")
    found = dict((words.strip(), href.replace("&amp;", "&")) for href, words in
                 re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', html))
    link = urlsplit(found[name])
    page = await (await browser.new_context(java_script_enabled=False)).new_page()
    page.on("console", lambda m: violations.append(m.text)
            if "Content Security Policy" in m.text else None)
    await page.goto(aye.url + link.path + (f"?{link.query}" if link.query else ""))
    return page


async def test_a_form_from_the_mail_answered_in_chromium(
    start_aye: StartAye, tmp_path: str, smtp: SmtpServer, browser: Browser
) -> None:
    aye = await start_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config=CONFIG,
                          env=email_env(smtp))
    ask = await aye.ask(question="Size the cluster", format="form", schema=FORM_SCHEMA)
    violations: list[str] = []
    page = await opened(browser, aye, smtp, 0, violations, "Answer")
    await expect(page.get_by_role("heading", name="Size the cluster")).to_be_visible()
    await page.get_by_label("Nodes").fill("3")
    await page.get_by_label("Region").select_option("eu")
    await page.get_by_label("fast").check()
    await page.get_by_label("When").fill("2026-12-24")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("heading", name="Answered")).to_be_visible()
    view = await aye.get(ask["id"], operator=True)
    assert view["answered_by"] == f"email:{ADA}"
    assert view["answer"]["value"] == {"count": 3, "region": "eu", "tags": ["fast"],
                                       "urgent": False, "when": "2026-12-24"}
    await page.go_back()
    await page.reload()
    await expect(page.get_by_role("heading", name="This link is no longer valid.")).to_be_visible()
    assert violations == []


async def test_a_refused_form_comes_back_as_typed_in_chromium(
    start_aye: StartAye, tmp_path: str, smtp: SmtpServer, browser: Browser
) -> None:
    aye = await start_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config=CONFIG,
                          env=email_env(smtp))
    schema = {**FORM_SCHEMA, "properties": {**FORM_SCHEMA["properties"], "tags": {
        "type": "array", "items": {"type": "string", "enum": ["fast", "cheap"]}, "minItems": 1,
        "title": "Tags"}}}
    ask = await aye.ask(question="Size the cluster", format="form", schema=schema)
    violations: list[str] = []
    page = await opened(browser, aye, smtp, 0, violations, "Answer")
    await page.get_by_label("Nodes").fill("3")
    await page.get_by_label("Region").select_option("eu")
    await page.get_by_label("Urgent").check()
    await page.get_by_label("When").fill("2026-12-24")
    await page.get_by_label("Note").fill('<b>before</b> "noon"')
    await page.get_by_role("button", name="Send").click()  # no tag picked: the browser lets it go
    await expect(page.get_by_role("alert")).to_contain_text("Tags must pick at least 1")
    await expect(page.get_by_label("Nodes")).to_have_value("3")
    await expect(page.get_by_label("Region")).to_have_value("eu")
    await expect(page.get_by_label("Urgent")).to_be_checked()
    await expect(page.get_by_label("When")).to_have_value("2026-12-24")
    await expect(page.get_by_label("Note")).to_have_value('<b>before</b> "noon"')
    await page.get_by_label("fast").check()
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("heading", name="Answered")).to_be_visible()
    view = await aye.get(ask["id"], operator=True)
    assert view["answer"]["value"] == {"count": 3, "region": "eu", "tags": ["fast"],
                                       "urgent": True, "when": "2026-12-24"}
    assert view["answer"]["note"] == '<b>before</b> "noon"'
    assert violations == []


async def test_a_destructive_approval_says_so_before_its_confirm(
    start_aye: StartAye, tmp_path: str, smtp: SmtpServer, browser: Browser
) -> None:
    aye = await start_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config=CONFIG,
                          env=email_env(smtp))
    resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS,
                                 json={"operation": "db.drop", "input": {"table": "users"}})
    ask = (await resp.json())["ask"]
    violations: list[str] = []
    page = await opened(browser, aye, smtp, 0, violations, "Approve (destructive)")
    await expect(page.get_by_text("This answer is destructive")).to_be_visible()
    assert (await aye.get(ask["id"]))["status"] == "open"  # opening it answered nothing
    await page.get_by_role("button", name="Confirm: Approve").click()
    await expect(page.get_by_role("heading", name="Answered")).to_be_visible()
    assert (await aye.get(ask["id"], operator=True))["outcome"] == "approved"
    assert violations == []
