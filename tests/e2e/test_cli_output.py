"""The CLI prints agent text without its terminal controls: through the real `aye` against a
real `aye serve`, reading the raw bytes it writes."""

from __future__ import annotations

import signal
import subprocess
import sys
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_process import AGENT, OP, Server, base_env, start_server, stop

# Clipboard write (OSC 52), line erase, cursor up, carriage return, backspaces, DEL, a C1 CSI,
# bidi overrides and isolates, Unicode line and paragraph separators, NEL. (NUL is refused by
# the API itself, so it never reaches the CLI.)
NASTY = (
    "a\x1b]52;c;SGVsbG8=\x07b\rc\x1b[2Kd\x1b[1Ae\x08\x08f\x9bg\u202eh\u2066ij\x7fk"
    "\u2028l\u2029m\x85n\x1b\\o\x90p\x9dq\u200fr"
)
CONFIG = """
[[agents]]
name = "bot\\u001b[2K\\u202eevil"
token_env = "AYE_TOKEN_EVIL"

[[gates]]
operations = ["deploy."]
"""


def unsafe(text: str) -> list[str]:
    """Every character a terminal could act on, other than the newline."""
    return [
        repr(c) for c in text
        if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    ]


def run(tmp: Path, url: str, *args: str) -> bytes:
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/aye.db", AYE_URL=url, AYE_OPERATOR_TOKEN=OP)
    done = subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp, env=env,
                          capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def clean(out: bytes) -> str:
    for byte in (b"\x1b", b"\x07", b"\r", b"\x08", b"\x00", b"\x7f"):
        assert byte not in out
    text = out.decode("utf-8")
    assert not unsafe(text), unsafe(text)
    return text


@pytest.fixture
async def server(tmp_path: Path, sqlite_url: str) -> AsyncIterator[Server]:
    (tmp_path / "aye.toml").write_text(CONFIG)
    started = await start_server(tmp_path, sqlite_url,
                                 AYE_TOKEN_EVIL=AGENT)
    try:
        yield started
    finally:
        stop(started, signal.SIGKILL)


async def call(url: str, method: str, path: str, token: str = AGENT, **kw: Any) -> Any:
    async with aiohttp.ClientSession() as session, session.request(
        method, url + path, headers={"Authorization": f"Bearer {token}"}, **kw
    ) as resp:
        assert resp.status < 300, await resp.text()
        return await resp.json()


async def test_asks_and_show_print_no_terminal_controls(tmp_path: Path, server: Server) -> None:
    url = server.url
    chosen = await call(url, "POST", "/v1/asks", json={
        "question": f"Ship {NASTY}?\nsecond {NASTY} line", "context": f"ctx {NASTY}\r\nmore",
        "options": [f"opt {NASTY}", "plain"]})
    await call(url, "POST", f"/v1/asks/{chosen['ref']}/answer", token=OP,
               json={"answer": "1", "note": f"note {NASTY}"})
    free = await call(url, "POST", "/v1/asks", json={"question": f"Free {NASTY}"})
    await call(url, "POST", f"/v1/asks/{free['ref']}/answer", token=OP,
               json={"answer": f"value {NASTY}\nsecond"})
    gated = await call(url, "POST", "/v1/calls", json={
        "operation": "deploy.prod", "input": {f"key {NASTY}": f"val {NASTY}"}})
    assert gated["decision"] == "pending"

    listed = clean(run(tmp_path, url, "asks", "--all"))
    lines = listed.splitlines()
    # The header, one line per ask, and the approval's mark (its input hides characters).
    assert len(lines) == 5, listed
    row = next(line for line in lines if line.startswith(chosen["ref"] + " "))
    assert "Ship a[U+001B]]52;c;SGVsbG8=[U+0007]b[U+000D]c" in row
    assert "bot[U+001B][2K…" in row  # cut before a code, never inside it
    assert lines[4] == (f"{gated['ask']['ref']}: careful, this request contains hidden or "
                        "reordering characters (shown as codes such as [U+202E])")

    for ref in (chosen["ref"], free["ref"], gated["ask"]["ref"]):
        shown = clean(run(tmp_path, url, "show", ref))
        assert "bot[U+001B][2K[U+202E]evil" in shown  # the agent's name, shown not dropped
    shown = clean(run(tmp_path, url, "show", chosen["ref"]))
    lines = shown.splitlines()
    # A multi-line question keeps its line breaks, each line cleaned; nothing starts a line
    # at the left margin but the CLI's own labels.
    assert lines[1].startswith("question: Ship a[U+001B]]52;c;SGVsbG8=[U+0007]b[U+000D]c[U+001B][2Kd")
    assert lines[2].startswith("  second a[U+001B]]52")
    for text in ("1. opt a[U+001B]]52", "note: note a[U+001B]]52", "ctx a[U+001B]]52",
                 "[U+202E]h[U+2066]i", "[U+2028]l[U+2029]m[U+0085]n"):
        assert text in shown
    assert "warning: this request" not in shown  # a question is not an approval
    approval = clean(run(tmp_path, url, "show", gated["ask"]["ref"]))
    assert "warning: this request contains hidden or reordering characters" in approval
    assert '"key a\\u001b]52;c;SGVsbG8=\\u0007b\\rc' in approval  # JSON's own escapes
    assert "[U+202E]h[U+2066]i" in approval
    assert "\n  more" in shown  # CRLF in the context is one line break
