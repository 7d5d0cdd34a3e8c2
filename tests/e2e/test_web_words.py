"""What the inbox says of an ask, in a real Chromium (Playwright), on both stores: its history
in sentences (never `None`, `False` or a raw key), a decided approval's receipt with a line
that verifies it as printed, and a refused answer's form shown again with what was typed."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from bot.config import Config
from core.app.timing import ManualClock
from tests.conftest import AGENT_HEADERS
from tests.e2e.test_web_browser import LIVE_S, browser, item, pytestmark, signed_in
from tests.e2e.test_web_first_hour import violations
from tests.e2e.test_web_pages import GATES, call
from tests.unit.test_web_harness import StartInbox, inboxes

__all__ = ["browser", "pytestmark"]  # the fixture and the skip (no Chromium), shared
ROOT = Path(__file__).resolve().parents[2]
RAW = ("None", "False", "True", "usable_again", "outcome by", "_by", "why ", "surface")
DEPLOY = Config.model_validate({"gates": [{"operations": ["deploy."], "timeout": "1h"}]})
# A form whose misfit (two tags of at most one) no browser stops before aye names it.
PICKY = {"type": "object", "required": ["count"], "properties": {
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Nodes"},
    "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["fast", "cheap"]},
             "maxItems": 1, "title": "Tags"},
    "urgent": {"type": "boolean", "title": "Urgent"},
    "why": {"type": "string", "title": "Why"},
}}
TRICKY = '"><script>window.__pwned = 1</script> & <b>bold</b>'


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


async def history_lines(page: Page) -> list[str]:
    lines = page.locator("section.history li")
    return [" ".join((await line.inner_text()).split()) for line in await lines.all()]


async def run(command: str) -> tuple[int, str]:
    """The line as a person would paste it into a shell in aye's folder (the server answers
    on this loop meanwhile, so the process is awaited, not waited for)."""
    if not (ROOT / ".venv" / "bin" / "python").exists():  # a checkout run by another Python
        command = command.replace(".venv/bin/python", sys.executable, 1)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def test_an_approval_s_history_reads_as_sentences_and_its_receipt_verifies(
    start_inbox: StartInbox, database_url: str, browser: Browser
) -> None:
    aye = await start_inbox(database_url, DEPLOY)
    ref = await call(aye, "deploy.prod", {"version": "1.4.2"})
    page = await signed_in(browser, aye)
    await page.goto(f"{aye.url}/inbox/{ref}")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_role("alert")).to_have_text(f"{ref} Answered: approved")
    resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS,
                                 json={"operation": "deploy.prod", "input": {"version": "1.4.2"}})
    allowed = await resp.json()
    assert allowed["decision"] == "allow", allowed
    resp = await aye.client.post("/v1/calls/outcome", headers=AGENT_HEADERS,
                                 json={"approval": allowed["approval"], "outcome": "ran"})
    assert resp.status == 200, await resp.text()
    view = await aye.get(ref, operator=True)
    agent = view["agent"]

    await page.goto(f"{aye.url}/inbox/{ref}")
    lines = await history_lines(page)
    said = "\n".join(lines)
    assert f"Asked by agent {agent} to approve deploy.prod" in lines[0]
    assert "input_sha256: " + view["input_sha256"] in lines[0]
    assert "Approved by the operator on the web inbox" in said
    assert f"by agent {agent}" in said and "its call went through" in said
    assert f"reported by agent {agent}: ran" in said
    for raw in RAW:
        assert raw not in said, (raw, said)

    # The receipt: collapsed until asked for, the very bytes the API gives, and a line that
    # verifies it as printed.
    receipt = page.locator("section.receipt pre").first
    await expect(receipt).to_be_hidden()
    await page.get_by_text("Show the receipt and how to verify it").click()
    await expect(receipt).to_have_text(view["receipt"])
    assert await violations(page) == []
    # A live refresh redraws the section and leaves it open.
    section = await page.locator("section.receipt").element_handle()
    await aye.ask(question="Lunch?", options=["yes", "no"])  # ask.created: the page refreshes
    await page.wait_for_function("s => !s.isConnected", arg=section, timeout=LIVE_S * 1000)
    await expect(receipt).to_have_text(view["receipt"])
    command = await page.locator("section.receipt pre").nth(1).inner_text()
    assert command.startswith(".venv/bin/python -c ") and f"{aye.url.rstrip('/')}/v1/keys" in command
    code, out = await run(command)
    assert code == 0, out
    claims = json.loads(out)
    assert (claims["sub"], claims["ref"], claims["decision"]) == (view["id"], ref, "approved")
    # Changed by one character, the same line refuses it.
    head, _, tail = view["receipt"].rpartition(".")
    forged = f"{head}.{'A' if tail[0] != 'A' else 'B'}{tail[1:]}"
    code, out = await run(command.replace(view["receipt"], forged))
    assert code != 0 and "BadReceipt" in out


async def test_a_refused_answer_s_history_line_says_who_what_and_why(
    start_inbox: StartInbox, database_url: str, browser: Browser
) -> None:
    aye = await start_inbox(database_url)
    ref = (await aye.ask(question="Which?", format="multi", options=["a", "b", "c"], max=2))["ref"]
    page = await signed_in(browser, aye)
    await page.goto(f"{aye.url}/inbox/{ref}")
    for option in ("a", "b", "c"):
        await page.get_by_label(option, exact=True).check()
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_have_text(
        f"{ref} Not answered: the answer must pick at most 2 options.")
    await page.goto(f"{aye.url}/inbox/{ref}")
    lines = await history_lines(page)
    refused = [line for line in lines if "Refused answer" in line]
    assert refused and refused[0].endswith(
        "Refused answer from the operator on the web inbox: the answer must pick at most 2 "
        "options Given: [1,2,3]"), lines
    # Each fact is named apart from its value, and apart from the next.
    details = page.locator("section.history li .details span:not([aria-hidden])")
    assert await details.first.inner_text() == "Given: [1,2,3]"


async def test_a_refused_form_keeps_what_was_typed_with_the_reason(
    start_inbox: StartInbox, database_url: str, browser: Browser
) -> None:
    aye = await start_inbox(database_url)
    ref = (await aye.ask(question="Size?", format="form", schema=PICKY))["ref"]
    page = await signed_in(browser, aye)
    form = item(page, ref)
    await form.get_by_label("Nodes").fill("3")
    await form.get_by_label("Region").select_option("eu")
    await form.get_by_label("fast").check()
    await form.get_by_label("cheap").check()
    await form.get_by_label("Urgent").check()
    await form.get_by_label("Why").fill(TRICKY)
    await form.get_by_label("Note").fill(TRICKY + " note")
    await form.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_have_text(
        f"{ref} Not answered: Tags must pick at most 1.")
    form = item(page, ref)
    await expect(form.get_by_label("Nodes")).to_have_value("3")
    await expect(form.get_by_label("Region")).to_have_value("eu")
    await expect(form.get_by_label("fast")).to_be_checked()
    await expect(form.get_by_label("cheap")).to_be_checked()
    await expect(form.get_by_label("Urgent")).to_be_checked()
    await expect(form.get_by_label("Why")).to_have_value(TRICKY)  # escaped: kept whole
    await expect(form.get_by_label("Note")).to_have_value(TRICKY + " note")
    assert await page.evaluate("window.__pwned === undefined") and (await aye.get(ref))["status"] == "open"
    await form.get_by_label("cheap").uncheck()
    await form.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_have_text(
        f"{ref} Answered: Nodes: 3, Region: eu, Tags: fast, Urgent: yes, Why: {TRICKY}")
    view = await aye.get(ref, operator=True)
    assert view["answer"]["note"] == TRICKY + " note"


async def test_a_kept_note_outlives_a_live_refresh(
    start_inbox: StartInbox, database_url: str, browser: Browser, manual_clock: ManualClock
) -> None:
    aye = await start_inbox(database_url, GATES, manual_clock)
    ref = await call(aye, "release.prod", {"version": "2.0"})  # two approvals, escalates at 1 h
    page = await signed_in(browser, aye)
    await page.goto(f"{aye.url}/inbox/{ref}")
    await page.get_by_role("button", name="Approve").click()
    await page.get_by_label("Note").fill("checked the canary")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_role("alert")).to_contain_text(
        f"{ref} Not answered: you have already approved it")
    note = page.get_by_label("Note")
    await expect(note).to_have_value("checked the canary")
    manual_clock.advance(31 * 60)
    await aye.tick()
    manual_clock.advance(30 * 60)
    await aye.tick()
    # The escalation reaches the page live: its history is redrawn, the kept note stays.
    await expect(page.locator("section.history")).to_contain_text(
        "Escalated to the operator", timeout=LIVE_S * 1000)
    await expect(note).to_have_value("checked the canary")
