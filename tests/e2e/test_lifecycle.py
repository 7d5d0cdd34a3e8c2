"""Starting and stopping `aye serve` as an operator meets it: one line per start-up failure,
"listening on" only once bound, and a stop that answers parked agents and exits at once."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from tests.conftest import PG_SERVER
from tests.e2e.test_process import (
    AGENT,
    START_S,
    Api,
    Server,
    base_env,
    bound_port,
    start_server,
    store_url,
)

__all__ = ["store_url"]  # a fixture, used by name below


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What aye said on stderr, without its log lines (a fresh store logs its migration)."""
    return [line for line in done.stderr.splitlines() if line.startswith("aye: ")]


def serve_once(tmp: Path, database_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = base_env(tmp, database_url, AYE_OPERATOR_TOKEN="op", AYE_AGENT_TOKEN="agent", **env)
    return subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp, env=full,
                          capture_output=True, text=True, timeout=60)


async def test_sigterm_answers_parked_waits_and_exits_0_within_10s(
    tmp_path: Path, store_url: str
) -> None:
    server: Server = await start_server(tmp_path, store_url)
    async with aiohttp.ClientSession() as session:
        api = Api(session, server.url)
        made = [(await api.call("POST", "/v1/asks", json={"question": f"q{i}?"}))[1] for i in range(3)]
        waits = [
            asyncio.create_task(api.call("GET", f"/v1/asks/{a['id']}/wait?timeout=120"))
            for a in made
        ]
        await _until_parked(api, 3)
        began = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        answered = await asyncio.wait_for(asyncio.gather(*waits), 10)
        code = await asyncio.to_thread(server.proc.wait, 10)
        took = time.monotonic() - began
    assert [(status, body["status"]) for status, body in answered] == [(200, "open")] * 3
    assert code == 0
    assert took < 10
    stopping = [line for line in server.output().splitlines() if "aye.stopping" in line]
    assert len(stopping) == 1 and "parked=3" in stopping[0]


async def _until_parked(api: Api, count: int) -> None:
    for _ in range(500):
        status, health = await api.call("GET", "/healthz", token=AGENT)
        if status == 200 and health["parked"] >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the waits did not park")


def test_an_address_in_use_is_one_line_and_nothing_claims_to_listen(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_once(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT=str(port))
    assert done.returncode == 2
    assert said(done) == [f"aye: cannot listen on 127.0.0.1:{port}: Address already in use "
                          "(another aye serve? set AYE_PORT, or --port, to listen on another port)"]
    assert "listening on" not in done.stdout
    # It failed before making anything: no store created and migrated, no token file.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aye.toml"]


def test_a_missing_postgresql_database_is_one_line_naming_the_store(tmp_path: Path) -> None:
    url = PG_SERVER.rsplit("/", 1)[0] + "/aye_no_such_database"
    done = serve_once(tmp_path, url, AYE_PORT="0")
    assert done.returncode == 2
    lines = said(done)
    assert len(lines) == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert lines[0].startswith(f"aye: cannot open the store {url}:")
    assert "aye_no_such_database" in lines[0] and "listening on" not in done.stdout


def test_a_wrong_postgresql_port_blames_the_store_not_the_listen_address(tmp_path: Path) -> None:
    url = "postgresql+asyncpg://postgres:secret@127.0.0.1:1/test"
    done = serve_once(tmp_path, url, AYE_PORT="0")
    assert done.returncode == 2
    lines = said(done)
    assert len(lines) == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert lines[0].startswith("aye: cannot open the store postgresql+asyncpg://postgres:***@127.0.0.1:1/test:")
    assert "secret" not in done.stderr and "cannot listen" not in done.stderr


async def test_a_second_process_on_one_sqlite_file_refuses_to_start(tmp_path: Path) -> None:
    """It would never wake the first one's parked agents: one process per SQLite file."""
    url = f"sqlite+aiosqlite:///{tmp_path}/aye.db"
    first: Server = await start_server(tmp_path, url)
    try:
        done = await asyncio.to_thread(serve_once, tmp_path, url, AYE_PORT="0")
    finally:
        first.proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(first.proc.wait, 10)
    assert done.returncode == 2
    assert said(done) == [
        f"aye: the SQLite store {tmp_path}/aye.db is in use by another aye process: run one "
        "process per SQLite file (PostgreSQL for several)"
    ]
    # Once the first has stopped, the file is free again.
    again = await start_server(tmp_path, url)
    again.proc.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(again.proc.wait, 10) == 0


async def test_serve_reads_dot_env_and_the_real_environment_wins(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "AYE_OPERATOR_TOKEN=op-from-dotenv\nAYE_AGENT_TOKEN=agent-from-dotenv\nAYE_PORT=1\n"
    )
    # AYE_PORT=0 (a port the system finds free, said in "listening on") wins over the .env's 1.
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT="0")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        port = await bound_port(Server(proc, "", log), time.monotonic() + START_S)
        assert port not in (None, 1), log.read_text()
        async with aiohttp.ClientSession() as session:
            api = Api(session, f"http://127.0.0.1:{port}")
            for _ in range(500):
                with contextlib.suppress(aiohttp.ClientError):
                    if (await api.call("GET", "/healthz"))[0] == 200:
                        break
                await asyncio.sleep(0.02)
            assert (await api.call("GET", "/v1/asks", token="op-from-dotenv"))[0] == 200
            assert (await api.call("GET", "/v1/asks", token="agent-from-dotenv"))[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 10)
    assert "generated tokens" not in log.read_text()


def test_a_config_section_for_a_surface_that_is_off_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "aye.toml").write_text("[slack]\ndefault_channel = 'C0123ABCD'\n")
    done = serve_once(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT="0")
    assert done.returncode == 2
    assert said(done) == [
        f"aye: {tmp_path}/aye.toml: [slack] is set, but slack: off (set SLACK_BOT_TOKEN and "
        "SLACK_APP_TOKEN to turn it on)"
    ]
