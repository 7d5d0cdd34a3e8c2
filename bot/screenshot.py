"""`python -m bot.screenshot OUT.png`: the inbox with a few asks, as the README shows it.

Starts the inbox on 127.0.0.1 over a throwaway SQLite store, asks a few questions and an
approval, answers one (so the outcome shows), and takes the screenshot with Playwright driving
Chromium (Debian's `chromium`, or CHROMIUM=/path/to/chrome).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

from aiohttp import web

# Not a surface but a tool that builds a whole demo (a store and the service over it): the one
# module here reaching below the service. It belongs with the process, in bot/.
from core.app.parts import Parts
from core.app.service import Service
from core.domain.answering import Attempt
from core.domain.policy import Defaults, Gate
from core.domain.responders import OPERATOR
from core.domain.types import AgentInfo, NewAsk
from handlers.web import setup
from store.db import Store

FORM = {"type": "object", "required": ["nodes"], "properties": {
    "nodes": {"type": "integer", "minimum": 1, "maximum": 8, "title": "Nodes"},
    "region": {"type": "string", "enum": ["eu-west", "us-east"], "title": "Region"},
    "spot": {"type": "boolean", "title": "Spot instances"},
}}


# Two approvers who can both be reached (a quorum of two the operator alone could never give
# stops aye serve), and a destructive operation whose Approve asks to confirm.
DEPLOY_GATE = Gate.model_validate({"operations": ["deploy."], "approvals": 2, "timeout": "2h",
                                   "responders": ["operator:local", "email:ada@example.com"]})
DROP_GATE = Gate.model_validate({"operations": ["db.drop"], "danger": True, "timeout": "1h"})


async def _asks(asks: Service) -> None:
    triage, deploy = AgentInfo("triage"), AgentInfo("release-bot")
    await asks.create_question(triage, NewAsk(
        "Close issue #412 as a duplicate of #398?", ["close", "keep open"],
        context="Both report the CSV export timing out on files over 2 GB.", timeout_s=3 * 3600,
        media=[{"kind": "link", "url": "https://github.com/octo/app/issues/398", "caption": "#398"}],
    ))
    await asks.create_question(deploy, NewAsk(
        "How big should tonight's load-test cluster be?", format="form", form_schema=FORM,
        timeout_s=5 * 3600,
    ))
    call = await asks.call(deploy, "deploy.prod", {"version": "1.4.2", "canary": 0.1}, None)
    if call.ask is not None:
        await asks.answer(call.ask, Attempt(OPERATOR, "web"), "approve")
    await asks.call(deploy, "db.drop", {"database": "staging-eu"}, None)
    await asks.create_question(triage, NewAsk("Spend $40 on a GPU tonight?", ["yes", "no"]))


async def _shoot(url: str, token: str, out: Path) -> None:
    from playwright.async_api import async_playwright  # a development dependency

    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=args)
        page = await browser.new_page(viewport={"width": 1200, "height": 1100}, color_scheme="light")
        await page.goto(url + "/login")
        await page.get_by_label("Operator token").fill(token)
        await page.get_by_role("button", name="Sign in").click()
        await page.wait_for_selector("ol.asks")
        # Answer one, as a person would: the page then shows the outcome.
        spend = page.locator("li.ask").filter(has_text="Spend $40")
        await spend.get_by_label("Note").fill("cap it at $50")
        await spend.get_by_role("button", name="yes").click()
        await page.get_by_role("alert").wait_for()
        await page.screenshot(path=str(out), full_page=True)
        await browser.close()


async def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(f"sqlite+aiosqlite:///{folder}/aye.db")
        await store.open()
        asks = Service(Parts.build(store, Defaults(), [DEPLOY_GATE, DROP_GATE]))
        token = secrets.token_urlsafe(24)
        app = web.Application()
        setup(app, asks, lambda given: secrets.compare_digest(given, token), False, secrets.token_bytes(32))
        runner = web.AppRunner(app)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            host, port = runner.addresses[0][:2]
            await _asks(asks)
            await _shoot(f"http://{host}:{port}", token, out)
        finally:
            await runner.cleanup()
            await store.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m bot.screenshot OUT.png")
    asyncio.run(main(Path(sys.argv[1])))
