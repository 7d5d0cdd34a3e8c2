"""The inbox people would choose, in a real Chromium (Playwright): axe-core finds no serious or
critical accessibility violation on any page, everything works by keyboard alone and at 360 px,
a destructive answer asks to confirm, the title's count follows the asks live, and a
notification (with permission) says only "aye: an ask is waiting"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import Browser, Page, expect

from bot.config import Config
from tests.conftest import OPERATOR_TOKEN, Aye
from tests.e2e.test_web_answers import every_format
from tests.e2e.test_web_browser import LIVE_S, browser, item, pytestmark, signed_in
from tests.e2e.test_web_pages import call
from tests.unit.test_web_harness import StartInbox, inboxes

__all__ = ["browser", "pytestmark"]  # the fixture and the skip (no Chromium), shared
GATES = Config.model_validate({"gates": [
    {"operations": ["deploy."]},
    {"operations": ["db.drop"], "danger": True},
]})
SERIOUS = ("serious", "critical")
# What the page sees as the Notification API: a recorder, with permission already granted.
NOTIFICATIONS = """
window.__shown = [];
window.Notification = function (title, options) { window.__shown.push([title, options || null]); };
window.Notification.permission = "granted";
window.Notification.requestPermission = function () { return Promise.resolve("granted"); };
"""


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


async def violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it stands."""
    results = await Axe().run(page)
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
            for v in results.response["violations"] if v["impact"] in SERIOUS]


async def test_no_page_has_a_serious_accessibility_violation(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    refs = await every_format(aye)
    refs["danger"] = await call(aye, "db.drop", {"db": "staging"})
    answered = (await aye.ask(question="Lunch?", options=["yes", "no"]))["ref"]
    assert (await aye.answer(answered, "yes"))[0] == 200
    page = await (await browser.new_context()).new_page()
    await page.goto(aye.url + "/login")
    found = {"/login": await violations(page)}
    await page.get_by_label("Operator token").fill("not the token")
    await page.get_by_role("button", name="Sign in").click()
    found["/login (refused)"] = await violations(page)
    page = await signed_in(browser, aye)
    paths = ["/inbox", "/inbox?status=all", "/inbox?q=which", "/inbox?q=nothing-matches",
             "/inbox/nosuch"] + [f"/inbox/{ref}" for ref in (*refs.values(), answered)]
    for path in paths:
        await page.goto(aye.url + path)
        found[path] = await violations(page)
    await page.goto(aye.url + "/inbox")
    await item(page, refs["choice"]).get_by_role("button", name="red").click()  # the outcome
    found["/inbox (answered)"] = await violations(page)
    # The confirm page a browser without script gets (axe itself needs script: the button's
    # own confirm is taken off instead).
    await page.goto(aye.url + "/inbox")
    approve = item(page, refs["danger"]).get_by_role("button", name="Approve")
    await approve.evaluate("b => b.removeAttribute('data-confirm')")
    await approve.click()
    await expect(page.get_by_role("heading", name="Are you sure?")).to_be_visible()
    found["confirm page"] = await violations(page)
    assert {path: said for path, said in found.items() if said} == {}


async def test_by_keyboard_alone_at_360_px(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    refs = await every_format(aye)
    page = await (await browser.new_context(viewport={"width": 360, "height": 740})).new_page()
    await page.goto(aye.url + "/inbox")
    # The token field has focus on arrival (autofocus): wait until it has, then type, as a
    # person does (a loaded machine may apply autofocus after the load event).
    await expect(page.locator("#token")).to_be_focused()
    await page.keyboard.type(OPERATOR_TOKEN)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Open asks")).to_be_visible()
    for path in ("/inbox", f"/inbox/{refs['approval']}", f"/inbox/{refs['form']}"):
        await page.goto(aye.url + path)
        wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, path
    await page.goto(aye.url + "/inbox")
    target = item(page, refs["confirm"]).get_by_role("button", name="Yes")
    for _ in range(200):  # Tab through the page until the Yes of the confirm ask has focus
        if await target.evaluate("b => b === document.activeElement"):
            break
        await page.keyboard.press("Tab")
    assert await target.evaluate("b => b === document.activeElement")
    outline = await target.evaluate("b => getComputedStyle(b).outlineStyle")
    assert outline != "none"  # where the focus is can be seen
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("alert")).to_have_text(f"{refs['confirm']} Answered: yes")
    await page.get_by_label("Search").focus()
    await page.keyboard.type("size")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Search")).to_be_visible()
    await expect(page.locator("li.ask")).to_have_count(1)
    await expect(item(page, refs["form"])).to_be_visible()


async def test_a_destructive_answer_asks_in_the_browser_first(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATES)
    ref = await call(aye, "db.drop", {"db": "staging"})
    wipe = (await aye.ask(question="Wipe the cache?", format="confirm", danger=True))["ref"]
    page = await signed_in(browser, aye)
    approve = item(page, ref).get_by_role("button", name="Approve")
    assert await approve.get_attribute("class") == "danger"  # not the primary button
    said: list[str] = []

    async def dismiss(dialog: Any) -> None:
        said.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", dismiss)
    await approve.click()
    await expect(approve).to_be_visible()
    assert said == ["This ask is marked destructive: the agent will act on this answer. Go ahead?"]
    assert (await aye.get(ref, operator=True))["status"] == "open"
    page.once("dialog", lambda dialog: dialog.accept())
    await approve.click()
    await expect(page.get_by_role("alert")).to_have_text(f"{ref} Answered: approved")
    page.once("dialog", lambda dialog: dialog.accept())
    await item(page, wipe).get_by_role("button", name="Yes").click()
    await expect(page.get_by_role("alert")).to_have_text(f"{wipe} Answered: yes")


async def test_the_title_counts_live_and_a_notification_says_only_that_an_ask_waits(
    start_inbox: StartInbox, tmp_path: Any, browser: Browser
) -> None:
    aye: Aye = await start_inbox(f"sqlite+aiosqlite:///{tmp_path}/aye.db")
    first = (await aye.ask(question="Spend $40 on a GPU tonight?", options=["yes", "no"]))["ref"]
    context = await browser.new_context()
    await context.add_init_script(NOTIFICATIONS)
    page = await context.new_page()
    await page.goto(aye.url + "/inbox")
    await page.get_by_label("Operator token").fill(OPERATOR_TOKEN)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).to_have_title("(1) aye inbox")
    secret = (await aye.ask(question="Rotate the root password to hunter2?"))["ref"]
    await expect(item(page, secret)).to_be_visible(timeout=LIVE_S * 1000)
    await expect(page).to_have_title("(2) aye inbox")
    shown = await page.evaluate("window.__shown")
    assert shown == [["aye: an ask is waiting", None]]  # never the question
    assert (await aye.answer(first, "yes"))[0] == 200
    await expect(page).to_have_title("(1) aye inbox", timeout=LIVE_S * 1000)
    assert len(await page.evaluate("window.__shown")) == 1  # an answer is not a new ask
