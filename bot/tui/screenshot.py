"""`python -m bot.tui.screenshot OUT.svg`: `aye tui` at 80×24 as the README shows it.

Starts `aye serve` on 127.0.0.1 over a throwaway SQLite store (a gate on `deploy.`), asks a
question, a form and an approval, opens the TUI headless with the approval selected, and
saves Textual's own SVG screenshot of it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bot.tui.api import Api
from bot.tui.app import Tui
from bot.tui.inbox import Inbox

OPERATOR, AGENT = "op-screenshot", "agent-screenshot"
SIZE = (80, 24)


def _post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {AGENT}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        found: dict[str, Any] = json.loads(resp.read())
        return found


def _serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (folder / "aye.toml").write_text('[[gates]]\noperations = ["deploy."]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AYE_", "SLACK_", "GITHUB_"))}
    env.update(AYE_DATABASE_URL=f"sqlite+aiosqlite:///{folder}/aye.db", AYE_PORT=str(port),
               AYE_CONFIG=str(folder / "aye.toml"), AYE_OPERATOR_TOKEN=OPERATOR,
               AYE_AGENT_TOKEN=AGENT)
    proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=folder, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("aye serve did not come up")


def _ask_some(url: str) -> None:
    _post(url, "/v1/asks", {"question": "Ship the 1.4.2 release tonight?",
                            "options": ["yes", "no", "after QA"], "context": "CI is green."})
    _post(url, "/v1/asks", {"question": "Which regions get the canary?", "format": "form",
                            "schema": {"type": "object", "required": ["region"], "properties": {
                                "region": {"type": "string", "enum": ["eu", "us"]},
                                "percent": {"type": "integer", "minimum": 1, "maximum": 50}}}})
    _post(url, "/v1/calls", {"operation": "deploy.prod",
                             "input": {"version": "1.4.2", "hosts": ["web-1", "web-2"]}})


async def _shoot(url: str) -> str:
    app = Tui(Api(url, OPERATOR))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(500):
            inbox = next((s for s in app.screen_stack if isinstance(s, Inbox)), None)
            ask = inbox.current() if inbox is not None else None
            if ask is not None and ask.get("operation") and ask.get("history"):
                break
            await pilot.pause(0.02)
        await pilot.pause(0.2)  # the last paint of the panel
        return app.export_screenshot(title="aye tui")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m bot.tui.screenshot OUT.svg", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        proc, url = _serve(Path(folder))
        try:
            _ask_some(url)
            Path(argv[0]).write_text(asyncio.run(_shoot(url)))
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    print(f"wrote {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
