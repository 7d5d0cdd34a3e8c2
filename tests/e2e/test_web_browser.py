"""The web inbox in a real browser (Playwright driving Debian's Chromium): signing in, answering
every format by the controls' accessible roles and labels, the page on a phone, and live updates
from the event stream."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright, expect

from tests.conftest import OPERATOR_TOKEN, Aye
from tests.e2e.test_web_answers import every_format
from tests.e2e.test_web_pages import GATES
from tests.unit.test_web_harness import StartInbox, inboxes

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)",
)
LIVE_S = 2.0  # the contract: a change elsewhere shows within 2 seconds


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


async def signed_in(browser: Browser, aye: Aye, violations: list[str] | None = None,
                    **context: Any) -> Page:
    """A signed-in page; what the browser says of the Content-Security-Policy goes to
    `violations`."""
    page = await (await browser.new_context(**context)).new_page()

    def heard(message: ConsoleMessage) -> None:
        if violations is not None and "Content Security Policy" in message.text:
            violations.append(message.text)

    page.on("console", heard)
    await page.goto(aye.url + "/inbox")
    await page.get_by_label("Operator token").fill(OPERATOR_TOKEN)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Open asks")).to_be_visible()
    return page


def item(page: Page, ref: str) -> Any:
    return page.locator(f'li[data-ref="{ref}"]')


async def test_sign_in_with_a_wrong_token_then_the_right_one_then_out(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db")
    page = await browser.new_page()
    await page.goto(aye.url + "/")
    assert page.url.endswith("/login")
    await page.get_by_label("Operator token").fill("not-the-token")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_have_text("That token is not valid.")
    assert await page.context.cookies() == []
    await page.get_by_label("Operator token").fill(OPERATOR_TOKEN)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_text("Nothing is waiting for an answer.")).to_be_visible()
    [cookie] = await page.context.cookies()
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_label("Operator token")).to_be_visible()
    await page.goto(aye.url + "/inbox")
    assert page.url.endswith("/login")
    # Sign out ended the session on the server: the cookie put back opens nothing.
    await page.context.add_cookies([cookie])
    await page.goto(aye.url + "/inbox")
    assert page.url.endswith("/login")
    await expect(page.get_by_label("Operator token")).to_be_visible()


async def test_every_format_answers_by_its_named_controls(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    refs = await every_format(aye)
    violations: list[str] = []
    page = await signed_in(browser, aye, violations)
    alert = page.get_by_role("alert")

    choice = item(page, refs["choice"])
    await choice.get_by_label("Note").fill("the blue one")
    await choice.get_by_label("Note").press("Enter")  # Enter in the note presses no option
    await expect(choice.get_by_role("button", name="red")).to_be_visible()
    assert (await aye.get(refs["choice"]))["status"] == "open"
    await choice.get_by_role("button", name="blue").click()
    await expect(alert).to_have_text(f"{refs['choice']} Answered: blue")

    await item(page, refs["approval"]).get_by_role("button", name="Approve").click()
    await expect(alert).to_have_text(f"{refs['approval']} Answered: approved")
    await item(page, refs["confirm"]).get_by_role("button", name="Yes").click()
    await expect(alert).to_have_text(f"{refs['confirm']} Answered: yes")
    await item(page, refs["ack"]).get_by_role("button", name="Continue").click()
    await expect(alert).to_have_text(f"{refs['ack']} Answered: ok")

    text = item(page, refs["text"])
    await text.get_by_label("Answer").fill("Because the tests pass.")
    await text.get_by_role("button", name="Send").click()
    await expect(alert).to_have_text(f"{refs['text']} Answered: Because the tests pass.")

    multi = item(page, refs["multi"])
    await multi.get_by_label("red").check()
    await multi.get_by_label("blue").check()
    await multi.get_by_role("button", name="Send").click()
    await expect(alert).to_have_text(f"{refs['multi']} Answered: red, blue")

    form = item(page, refs["form"])
    await form.get_by_label("Nodes").fill("4")
    await form.get_by_label("Region").select_option("us")
    await form.get_by_label("cheap").check()
    await form.get_by_label("Urgent").check()
    await form.get_by_label("When").fill("2026-12-24")
    await form.get_by_role("button", name="Send").click()
    await expect(alert).to_have_text(
        f"{refs['form']} Answered: Nodes: 4, Region: us, Tags: cheap, Urgent: yes, When: 2026-12-24")
    await expect(page.get_by_text("Nothing is waiting for an answer.")).to_be_visible()
    note = (await aye.get(refs["choice"], operator=True))["answer"]["note"]
    assert note == "the blue one"
    assert violations == []


async def test_a_misfit_is_stopped_by_the_browser_or_named_by_aye(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    refs = await every_format(aye)
    page = await signed_in(browser, aye)
    form = item(page, refs["form"])
    await form.get_by_label("Nodes").fill("12")
    await form.get_by_role("button", name="Send").click()  # max="10": the browser says so first
    assert await form.get_by_label("Nodes").evaluate("input => input.validity.rangeOverflow")
    multi = item(page, refs["multi"])
    for option in ("red", "green", "blue"):
        await multi.get_by_label(option).check()
    await multi.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_have_text(
        f"{refs['multi']} Not answered: the answer must pick at most 2 options.")


async def test_on_a_phone_the_page_fits_and_an_approval_stands_out(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    refs = await every_format(aye)
    page = await signed_in(browser, aye, viewport={"width": 390, "height": 844}, is_mobile=True)
    wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0
    approval = item(page, refs["approval"])
    question = await approval.get_by_role("heading").bounding_box()
    buttons = await approval.get_by_role("button", name="Approve").bounding_box()
    assert question is not None and buttons is not None and buttons["y"] > question["y"]
    border = await approval.locator("article").evaluate("a => getComputedStyle(a).borderLeftWidth")
    plain = await item(page, refs["choice"]).locator("article").evaluate(
        "a => getComputedStyle(a).borderLeftWidth")
    assert float(border.rstrip("px")) > float(plain.rstrip("px"))
    deadline = approval.locator("time").last
    assert (await deadline.inner_text()).startswith("in ")
    assert await deadline.get_attribute("title")


async def test_the_list_updates_live_and_keeps_what_is_being_typed(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db")
    typing = (await aye.ask(question="Why?"))["ref"]
    idle = (await aye.ask(question="Deploy?", format="confirm"))["ref"]
    page = await signed_in(browser, aye)
    box = item(page, typing).get_by_label("Answer")
    await box.fill("half a tho")
    unchanged = await item(page, idle).element_handle()
    new = (await aye.ask(question="Spend $40 on a GPU tonight?", options=["yes", "no"]))["ref"]
    await expect(item(page, new)).to_be_visible(timeout=LIVE_S * 1000)
    assert await unchanged.evaluate("li => li.isConnected")  # an unchanged item is left alone
    await expect(item(page, new).get_by_role("button", name="yes")).to_be_visible()
    await expect(box).to_have_value("half a tho")
    await expect(box).to_be_focused()
    assert (await aye.answer(new, "no"))[0] == 200
    await expect(item(page, new)).to_have_count(0, timeout=LIVE_S * 1000)
    # Closed elsewhere mid-typing: shown closed, with a notice and what was typed kept.
    withdrawn = await aye.client.delete(f"/v1/asks/{typing}", headers=aye.headers)
    assert withdrawn.status == 200
    await expect(item(page, typing).get_by_role("status")).to_have_text(
        "Closed elsewhere: Withdrawn. What you typed is kept below.What you typed: Answer",
        timeout=LIVE_S * 1000)
    await expect(item(page, typing).get_by_label("What you typed: Answer")).to_have_value("half a tho")
    await expect(item(page, typing).get_by_role("button")).to_have_count(0)
    await page.goto(aye.url + "/inbox?status=all")
    await expect(item(page, idle).get_by_role("button", name="Yes")).to_be_visible()
    assert (await aye.answer(idle, "yes"))[0] == 200
    await expect(item(page, idle)).to_contain_text("Answered by the operator: yes", timeout=LIVE_S * 1000)
    await expect(item(page, idle).get_by_role("button")).to_have_count(0)


async def test_with_javascript_off_answering_still_works(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    refs = await every_format(aye)
    page = await signed_in(browser, aye, java_script_enabled=False)
    await item(page, refs["approval"]).get_by_label("Note").fill("staging is green")
    await item(page, refs["approval"]).get_by_role("button", name="Refuse").click()
    await expect(page.get_by_role("alert")).to_have_text(f"{refs['approval']} Answered: refused")
    view = await aye.get(refs["approval"], operator=True)
    assert (view["outcome"], view["answer"]["note"]) == ("approval_refused", "staging is green")
    await page.get_by_role("link", name=refs["text"], exact=True).click()
    await page.get_by_label("Answer").fill("from the ask's own page")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_have_text(f"{refs['text']} Answered: from the ask's own page")
    await expect(page.get_by_role("heading", name="Why?", level=1)).to_be_visible()
    await expect(page.get_by_text("Answered by the operator: from the ask's own page")).to_be_visible()
