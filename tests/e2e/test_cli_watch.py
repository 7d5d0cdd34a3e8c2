"""`aye watch` against a real `aye serve`: one line per event as it comes, a reconnect that
resumes where it left off after the server restarts, exit 2 on a wrong token, exit 3 when
nothing answers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.test_process import (
    AGENT,
    OP,
    Api,
    Server,
    base_env,
    nothing_listening,
    start_server,
    stop,
)


def watcher(tmp: Path, url: str, token: str = OP, background: bool = False
            ) -> subprocess.Popen[bytes]:
    """`aye watch`; `background`: started as a script's `aye watch &` is, SIGINT ignored (a
    shell starts a background job so when job control is off, as in scripts and CI)."""
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/unused.db", AYE_URL=url,
                   AYE_OPERATOR_TOKEN=token)
    command = [sys.executable, "-m", "bot", "watch"]
    if background:
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    return subprocess.Popen(command, cwd=tmp, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


async def next_line(proc: subprocess.Popen[bytes], timeout: float = 10) -> str:
    assert proc.stdout is not None
    raw = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout)
    return raw.decode()


@pytest.mark.parametrize("started", ["foreground", "background"])
async def test_watch_prints_each_event_and_resumes_after_a_restart(
    tmp_path: Path, sqlite_url: str, started: str
) -> None:
    """And stops on SIGINT however it was started."""
    url = sqlite_url
    server: Server = await start_server(tmp_path, url)
    port = int(server.url.rpartition(":")[2])  # the restart listens where the watch reconnects
    proc = watcher(tmp_path, server.url, background=started == "background")
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            # The stream starts "now": ask until the watch, once connected, shows one.
            line, refs = "", []
            reading = asyncio.ensure_future(next_line(proc, 20))
            while not reading.done():
                _, ask = await api.call("POST", "/v1/asks", json={"question": "Ship\x1b[31m it?"})
                refs.append(ask["ref"])
                await asyncio.wait([reading], timeout=0.5)
            line = reading.result()
            assert "created" in line and "Ship" in line and any(r in line for r in refs)
            while ask["ref"] not in line:  # the rest it has yet to print
                line = await next_line(proc)
            assert "\x1b" not in line  # terminal control characters are not passed through
            await api.call("POST", f"/v1/asks/{ask['ref']}/answer", token=OP, json={"answer": "yes"})
            line = await next_line(proc)
            assert "answered" in line and "by operator:local" in line
            stop(server)
            # While it is down, nothing; once it is back, the watch carries on by itself.
            server = await start_server(tmp_path, url, port=port)
            api = Api(session, server.url)
            _, second = await api.call("POST", "/v1/asks", json={"question": "Again?"})
            line = await next_line(proc, 20)
            assert "created" in line and second["ref"] in line
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()  # a watch that would not stop fails the test, and is not left running
            raise
        finally:
            stop(server, signal.SIGKILL)
    assert proc.returncode == 0


async def test_watch_with_a_wrong_token_exits_2(tmp_path: Path, sqlite_url: str) -> None:
    server = await start_server(tmp_path, sqlite_url)
    try:
        proc = watcher(tmp_path, server.url, token=AGENT + "x")
        _, err = await asyncio.to_thread(proc.communicate, timeout=20)
        assert proc.returncode == 2 and b"token" in err
    finally:
        stop(server, signal.SIGKILL)


def test_watch_with_nothing_listening_exits_3(tmp_path: Path) -> None:
    with nothing_listening() as refused:
        env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/x.db", AYE_URL=refused,
                       AYE_OPERATOR_TOKEN=OP)
        done = subprocess.run([sys.executable, "-m", "bot", "watch"], cwd=tmp_path, env=env,
                              capture_output=True, timeout=30)
    assert done.returncode == 3 and b"cannot reach aye" in done.stderr
    assert os.linesep.encode() in done.stderr
