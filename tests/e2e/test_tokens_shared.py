"""Generated tokens on one store: every `aye serve` on it accepts the same ones, whatever folder
it starts in. The first keeps their hashes in the store (never a token in clear); a process whose
folder has no matching aye-tokens.json exits 2 with one line, writing no file of its own."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from tests.e2e.test_process import base_env
from tests.stores import HeadDatabase, dsn, postgres_at_head

LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
START_S = 30
TOKEN_FILE = "aye-tokens.json"
ELSEWHERE = ("the store keeps the tokens another aye serve generated, and {file} {what}: set "
             "AYE_OPERATOR_TOKEN and AYE_AGENT_TOKEN, or copy that process's aye-tokens.json here")


class Serve:
    """`aye serve` with no AYE_OPERATOR_TOKEN/AYE_AGENT_TOKEN, in its own folder."""

    def __init__(self, folder: Path, database_url: str) -> None:
        folder.mkdir(exist_ok=True)
        self.folder, self.log = folder, folder / "serve.log"
        env = base_env(folder, database_url, AYE_PORT="0")
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=folder,
                                         env=env, stdout=out, stderr=subprocess.STDOUT)
        self.url = ""

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def outcome(self) -> int | None:
        """None once it listens (self.url is then where), else its exit code."""
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            found = LISTENING.search(self.output())
            if found:
                self.url = f"http://127.0.0.1:{found.group(1)}"
                return None
            if self.proc.poll() is not None:
                return self.proc.returncode
            await asyncio.sleep(0.05)
        self.stop(signal.SIGKILL)
        raise AssertionError("aye serve neither listened nor exited: " + self.output())

    def tokens(self) -> dict[str, str]:
        return dict(json.loads((self.folder / TOKEN_FILE).read_text()))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)


@pytest.fixture
async def started() -> AsyncIterator[list[Serve]]:
    processes: list[Serve] = []
    yield processes
    for serve in processes:
        serve.stop(signal.SIGKILL)


@pytest.fixture
async def postgres(pg_head: HeadDatabase | None) -> str:
    return await postgres_at_head(pg_head)


async def status(url: str, token: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(
        url + "/v1/whoami", headers={"Authorization": f"Bearer {token}"}
    ) as resp:
        return resp.status


async def pg_text(url: str) -> str:
    """Every row of every table, as text."""
    conn = await asyncpg.connect(dsn(url))
    try:
        tables = [r["tablename"] for r in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return repr([await conn.fetch(f'SELECT * FROM "{t}"') for t in tables])
    finally:
        await conn.close()


def only_line(serve: Serve) -> str:
    lines = serve.output().strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], serve.output()
    return lines[0]


async def test_two_processes_on_one_postgresql_share_one_pair_of_tokens(
    tmp_path: Path, postgres: str, started: list[Serve]
) -> None:
    # Both start at once, each in a folder of its own: the database decides one pair.
    first, second = Serve(tmp_path / "a", postgres), Serve(tmp_path / "b", postgres)
    started += [first, second]
    outcomes = await asyncio.gather(first.outcome(), second.outcome())
    assert sorted(outcomes, key=str) == [2, None], (first.output(), second.output())
    up, down = (first, second) if outcomes[0] is None else (second, first)
    # The loser says what to do in one line, and wrote no file of tokens nobody accepts.
    assert only_line(down) == "aye: " + ELSEWHERE.format(
        file=down.folder.resolve() / TOKEN_FILE, what="is not here")
    assert not (down.folder / TOKEN_FILE).exists()
    tokens = up.tokens()
    assert await status(up.url, tokens["operator"]) == 200
    everything = await pg_text(postgres)
    assert tokens["operator"] not in everything and tokens["agent"] not in everything
    assert "token_sha256:operator" in everything and "token_sha256:agent" in everything

    # With the file copied, the second process accepts the first one's tokens, and they it.
    shutil.copy(up.folder / TOKEN_FILE, down.folder / TOKEN_FILE)
    again = Serve(down.folder, postgres)
    started.append(again)
    assert await again.outcome() is None, again.output()
    for serve in (up, again):
        assert await status(serve.url, tokens["operator"]) == 200
        assert await status(serve.url, tokens["agent"]) == 200
    assert again.tokens() == tokens

    # A third folder holding other tokens is refused too, and its file left as it was.
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / TOKEN_FILE).write_text(json.dumps({"operator": "mine", "agent": "mine2"}))
    other = Serve(tmp_path / "c", postgres)
    started.append(other)
    assert await other.outcome() == 2
    assert only_line(other) == "aye: " + ELSEWHERE.format(
        file=(tmp_path / "c" / TOKEN_FILE).resolve(), what="holds others")
    assert json.loads((tmp_path / "c" / TOKEN_FILE).read_text())["operator"] == "mine"


async def test_on_sqlite_the_store_keeps_hashes_and_a_lost_file_is_exit_2(
    tmp_path: Path, sqlite_url: str, started: list[Serve]
) -> None:
    first = Serve(tmp_path, sqlite_url)
    started.append(first)
    assert await first.outcome() is None, first.output()
    tokens = first.tokens()
    assert await status(first.url, tokens["agent"]) == 200
    first.stop()
    db = sqlite_url.split("///", 1)[1]
    with sqlite3.connect(db) as conn:
        kept = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'token_sha256:%'"))
    assert set(kept) == {"token_sha256:operator", "token_sha256:agent"}
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("aye.db*"))
    assert tokens["operator"].encode() not in raw and tokens["agent"].encode() not in raw

    (tmp_path / TOKEN_FILE).rename(tmp_path / "kept.json")
    lost = Serve(tmp_path, sqlite_url)
    started.append(lost)
    assert await lost.outcome() == 2
    assert only_line(lost) == "aye: " + ELSEWHERE.format(
        file=(tmp_path / TOKEN_FILE).resolve(), what="is not here")
    assert not (tmp_path / TOKEN_FILE).exists()

    (tmp_path / "kept.json").rename(tmp_path / TOKEN_FILE)
    back = Serve(tmp_path, sqlite_url)
    started.append(back)
    assert await back.outcome() is None, back.output()
    assert await status(back.url, tokens["operator"]) == 200
