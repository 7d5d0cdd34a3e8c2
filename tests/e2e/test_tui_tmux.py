"""`aye tui` as a person sees it: the real command in a real terminal (tmux, 80×24), answered
with a key press, read back with `capture-pane`; the raw pane (`capture-pane -e`) holds no
terminal control an agent wrote, and under NO_COLOR no colour at all. tmux is a test
dependency (.ci/run installs Debian's)."""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli_output import NASTY, unsafe
from tests.e2e.test_process import OP, Server, base_env, start_server, stop
from tests.e2e.test_tui import call
from tests.stores import sqlite_at_head

WIDTH, HEIGHT = 80, 24
# What tmux writes for the attributes of the cells it captured: SGR sequences only.
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
COLOUR = re.compile(r"^(3[0-8]|4[0-8]|9[0-7]|10[0-7])$")  # 39 and 49 are the defaults


# One server for the module, started once: its tests on one xdist worker.
pytestmark = pytest.mark.xdist_group("tui_tmux")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Server]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: .ci/run installs it (apt-get install tmux)")
    tmp = tmp_path_factory.mktemp("tui-tmux")
    server = asyncio.run(start_server(tmp, sqlite_at_head(sqlite_template, tmp)))
    yield server
    stop(server, signal.SIGKILL)


class Terminal:
    """One tmux server of this test's own (its own socket), one 80×24 window."""

    def __init__(self, tmp: Path) -> None:
        self.socket = f"aye-test-{uuid.uuid4().hex[:12]}"
        self.tmp = tmp

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=10)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, server: Server, **env: str) -> None:
        full = base_env(self.tmp, f"sqlite+aiosqlite:///{self.tmp}/unused.db",
                        AYE_URL=server.url, AYE_OPERATOR_TOKEN=OP, **env)
        if "NO_COLOR" not in env:  # colour unless the test asks for none
            full.pop("NO_COLOR", None)
        command = (f"env TERM=xterm-256color {shlex.quote(sys.executable)} -m bot tui; "
                   "echo EXIT=$?; sleep 60")
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d",
                        "-x", str(WIDTH), "-y", str(HEIGHT), "sh", "-c", command],
                       env=full, cwd=self.tmp, check=True, timeout=10)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def raw(self) -> str:
        return self.tmux("capture-pane", "-e", "-p")

    def press(self, key: str) -> None:
        self.tmux("send-keys", key)

    async def until(self, check: Callable[[str], bool], what: str, timeout: float = 20) -> str:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not check(shown := self.screen()):
            if loop.time() > end:
                raise AssertionError(f"the terminal never showed {what}:\n{shown}")
            await asyncio.sleep(0.05)
        return shown

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    yield term
    term.close()


async def test_a_key_press_answers_and_agent_controls_never_reach_the_terminal(
    served: Server, terminal: Terminal,
) -> None:
    mark = uuid.uuid4().hex[:8]
    nasty = await call(served, "POST", "/v1/asks",
                       json={"question": f"Nasty {mark} {NASTY}", "context": NASTY})
    choice = await call(served, "POST", "/v1/asks",
                        json={"question": f"Deploy {mark}?", "options": ["ship", "hold"]})
    terminal.start(served)
    shown = await terminal.until(lambda s: "live ·" in s and f"Deploy {mark}?" in s,
                                 "the newest ask selected")
    lines = shown.splitlines()
    assert len(lines) <= HEIGHT and all(len(text) <= WIDTH for text in lines)
    terminal.press("1")
    await terminal.until(lambda s: "taken: answered ship" in s, "the answer taken")
    answered = await call(served, "GET", f"/v1/asks/{choice['id']}")
    assert answered["answer"]["value"] == "ship"
    terminal.press("j")  # the next ask: the nasty one, in full on the right
    shown = await terminal.until(lambda s: f"Nasty {mark}" in s and "context:" in s,
                                 "the nasty ask's panel")
    assert "[U+001B]]52;c;SGVsbG8=" in shown.replace("\n", "").replace("│", "")
    raw = terminal.raw()
    assert not unsafe(SGR.sub("", raw)), unsafe(SGR.sub("", raw))
    assert "\x1b]" not in raw and "\x07" not in raw and "\u202e" not in raw
    terminal.press("q")
    await terminal.until(lambda s: "EXIT=0" in s, "the exit code")
    assert nasty["status"] == "open"


async def test_no_color_shows_no_colour(served: Server, terminal: Terminal) -> None:
    await call(served, "POST", "/v1/asks", json={"question": "Colourless?", "format": "confirm"})
    terminal.start(served, NO_COLOR="1")
    await terminal.until(lambda s: "live ·" in s and "Colourless?" in s, "the inbox")
    codes = {code for params in SGR.findall(terminal.raw())
             for code in re.split(r"[;:]", params) if code}
    assert not {c for c in codes if COLOUR.match(c)}, codes
    assert "7" in codes or "1" in codes  # the selection still shows (reverse, bold)
