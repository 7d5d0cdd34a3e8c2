"""`aye serve` as a real process: start-up, the CLI, crashes, and several processes on one store."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.stores import HeadDatabase, postgres_at_head

OP = "op-proc-token"
AGENT = "agent-proc-token"


def free_port() -> int:
    """A port free a moment ago, no longer held: another test's server may take it before a
    process binds it. For aye serve use start_server (AYE_PORT=0); for a refused URL,
    nothing_listening()."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def base_env(tmp: Path, database_url: str, **extra: str) -> dict[str, str]:
    """The server's environment, with AYE_CONFIG naming tmp/aye.toml (empty unless a test
    writes one: a named config file must exist)."""
    (tmp / "aye.toml").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AYE_", "SLACK_", "GITHUB_"))}
    env.update(AYE_DATABASE_URL=database_url, AYE_CONFIG=str(tmp / "aye.toml"), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


LISTENING = re.compile(r"listening on http://(?:\[[^\]]*\]|[^\s:/\"]+):(\d+)")  # text or JSON
START_S = 20  # for a start on a loaded machine


async def start_server(
    tmp: Path, database_url: str, name: str = "aye", port: int | None = None, **env: str
) -> Server:
    """`aye serve`, up and answering. With no `port` it listens where the system finds one free
    (AYE_PORT=0) and says which: a port picked here and bound by the process later could be
    taken in between by another worker's server, whose answers would then pass for this one's.
    With a `port` (a restart where a client waits), a start that found it taken is tried again
    until the deadline. Either way only a port the process itself said it bound is used."""
    deadline = time.monotonic() + START_S
    while True:
        server = _spawn(tmp, database_url, name, port or 0, env)
        bound = await bound_port(server, deadline)
        if bound is not None:
            break
        if port is None or "cannot listen on" not in server.output():
            raise AssertionError(f"aye serve exited {server.proc.returncode}: {server.output()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"port {port} stayed taken: {server.output()}")
        await asyncio.sleep(0.1)  # another test's probe of the port is gone within moments
    server.url = f"http://127.0.0.1:{bound}"
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(server.url + "/healthz") as resp:
                    if resp.status == 200:
                        return server
            except aiohttp.ClientError:
                pass
            if server.proc.poll() is not None or time.monotonic() > deadline:
                stop(server, signal.SIGKILL)  # never leave a server running behind a failed test
                raise AssertionError("aye serve did not come up: " + server.output())
            await asyncio.sleep(0.05)


def _spawn(tmp: Path, database_url: str, name: str, port: int, env: dict[str, str]) -> Server:
    taken = {p.name for p in tmp.glob(f"{name}-*.log")}
    log = tmp / next(f"{name}-{n}.log" for n in itertools.count() if f"{name}-{n}.log" not in taken)
    full = base_env(tmp, database_url, AYE_PORT=str(port), AYE_OPERATOR_TOKEN=OP,
                    AYE_AGENT_TOKEN=AGENT, **env)
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=tmp, env=full,
                                stdout=out, stderr=subprocess.STDOUT)
    return Server(proc, "", log)


async def bound_port(server: Server, deadline: float) -> int | None:
    """The port from the process's "listening on" line, once printed; None when it exited
    without one. Past the deadline: killed, and AssertionError."""
    while True:
        found = LISTENING.search(server.output())
        if found:
            return int(found.group(1))
        if server.proc.poll() is not None:
            return None
        if time.monotonic() > deadline:
            stop(server, signal.SIGKILL)
            raise AssertionError("aye serve did not come up: " + server.output())
        await asyncio.sleep(0.05)


@contextlib.contextmanager
def nothing_listening() -> Iterator[str]:
    """An http:// URL on a port held (bound, not listening) for the block: connections to it are
    refused, and no other test's server can take it meanwhile, as one could a port only probed."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


def stop(server: Server, sig: int = signal.SIGTERM) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(sig)
        server.proc.wait(timeout=15)


@pytest.fixture
def store_url(database_url: str) -> str:
    """A store at head, on SQLite and on PostgreSQL, for `aye serve` processes."""
    return database_url


@pytest.fixture
async def servers() -> AsyncIterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        stop(server, signal.SIGKILL)


class Api:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def call(self, method: str, path: str, token: str = AGENT, **kw: Any) -> tuple[int, Any]:
        async with self.session.request(method, self.url + path,
                                        headers={"Authorization": f"Bearer {token}"}, **kw) as r:
            return r.status, await r.json()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def run_cli(tmp: Path, url: str, *args: str, token: str | None = OP) -> subprocess.CompletedProcess[str]:
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/aye.db", AYE_URL=url)
    if token:
        env["AYE_OPERATOR_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=30)


# -- start-up -----------------------------------------------------------------------------------


def test_a_typo_in_aye_config_stops_serve_with_exit_2(tmp_path: Path) -> None:
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT="0",
                   AYE_CONFIG=str(tmp_path / "aye.tmol"))
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"aye: {tmp_path / 'aye.tmol'}: no such file (AYE_CONFIG names it)"]


@pytest.mark.parametrize("agents", [False, True])
def test_an_operator_token_equal_to_an_agents_stops_serve_with_exit_2(
    tmp_path: Path, agents: bool
) -> None:
    extra = {"AYE_OPERATOR_TOKEN": "same", "AYE_PORT": "0"}
    if agents:
        (tmp_path / "aye.toml").write_text("[[agents]]\nname = 'ci'\ntoken_env = 'AYE_TOKEN_CI'\n")
        extra["AYE_TOKEN_CI"] = "same"
    else:
        extra["AYE_AGENT_TOKEN"] = "same"
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", **extra)
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "AYE_OPERATOR_TOKEN is the same as the token of" in lines[0]
    assert "same" not in lines[0].replace("the same as", "")  # the token itself is never shown


VERIFIER = ("[[verifiers]]\nname = 'docsign'\nsecret_env = 'AYE_T_SECRET'\n"
            "header = 'X-Signature-256'\nscheme = 'hmac-sha256'\n")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("[[gates]]\noperations = ['deploy.']\ntimeout = '10s'\n", "gates[1].timeout"),
        ("[defaults]\nunknown = 1\n", "defaults.unknown: unknown key"),
        ("[[gates]]\noperations = ['human.approve']\n", "gates[1].operations"),
        (VERIFIER.replace("hmac-sha256", "hmac-md5"), "verifiers[1].scheme: 'hmac-md5' is not a known"),
        (VERIFIER.replace("AYE_T_SECRET", "AYE_T_UNSET"),
         "verifiers[1].secret_env: environment variable AYE_T_UNSET is not set"),
        (VERIFIER + "tolerance = '5m'\n", "verifiers[1]: tolerance needs timestamp_header"),
        ("[[agents]]\nname = 'a'\ntoken_env = 'AYE_T_SECRET'\nverifiers = ['nobody']\n",
         "agent a: verifiers names 'nobody'"),
        ("[[gates]]\noperations = ['x.']\nresponders = ['external:docsign']\n",
         "gates[1].responders[1]"),
    ],
)
def test_bad_config_stops_serve_with_exit_2(tmp_path: Path, config: str, expected: str) -> None:
    (tmp_path / "aye.toml").write_text(config)
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT="0",
                   AYE_T_SECRET="s3cret")
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(tmp_path / "aye.toml") in lines[0] and expected in lines[0]


async def test_a_server_started_on_a_taken_port_is_ours_not_the_one_that_had_it(
    tmp_path: Path, sqlite_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    """The harness: with xdist, another test's server can take the port a test asks for (a
    restart's) or was given. Its /healthz answers too; only aye's own "listening on" says
    the port is this process's. Until the other lets go, the start is tried again."""
    async def healthy(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    decoy = web.Application()
    decoy.router.add_get("/healthz", healthy)
    runner = web.AppRunner(decoy)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    starting = asyncio.ensure_future(start_server(tmp_path, sqlite_url, port=port))
    try:
        async with asyncio.timeout(20):  # until a start found the port taken
            while not any("cannot listen on" in log.read_text() for log in tmp_path.glob("aye-*.log")):
                if starting.done():
                    break
                await asyncio.sleep(0.05)
    finally:
        await runner.cleanup()
    server = await starting
    servers.append(server)
    assert server.url == f"http://127.0.0.1:{port}"
    status, me = await Api(session, server.url).call("GET", "/v1/whoami", token=OP)
    assert status == 200, me


async def test_zero_config_serve_and_cli(tmp_path: Path, servers: list[Server]) -> None:
    """No env, no config: tokens generated once into an owner-only file the CLI reads."""
    env = base_env(tmp_path, "sqlite+aiosqlite:///./aye.db", AYE_PORT="0")  # a port found free
    env.pop("AYE_DATABASE_URL")
    env.pop("AYE_CONFIG")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, "", log)
    servers.append(server)
    port = await bound_port(server, time.monotonic() + START_S)
    server.url = f"http://127.0.0.1:{port}"
    token_file = tmp_path / "aye-tokens.json"
    async with aiohttp.ClientSession() as session:
        for _ in range(400):
            try:
                async with session.get(server.url + "/healthz") as resp:
                    if resp.status == 200:
                        break
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)
    text = server.output()
    assert f"listening on http://127.0.0.1:{port}" in text
    assert "sqlite+aiosqlite:///./aye.db" in text and "slack: off" in text and "github: off" in text
    assert str(token_file) in text
    assert token_file.stat().st_mode & 0o777 == 0o600
    import json

    tokens = json.loads(token_file.read_text())
    assert tokens["operator"] not in text and tokens["agent"] not in text
    async with aiohttp.ClientSession() as session:
        api = Api(session, server.url)
        status, ask = await api.call("POST", "/v1/asks", token=tokens["agent"],
                                     json={"question": "Rotate the key?", "options": ["yes", "no"]})
        assert status == 201
    cli_env = {k: v for k, v in env.items() if k != "AYE_OPERATOR_TOKEN"}
    cli_env["AYE_URL"] = server.url
    listed = subprocess.run([sys.executable, "-m", "bot", "asks"], cwd=tmp_path, env=cli_env,
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    assert ask["ref"] in listed.stdout and "Rotate the key?" in listed.stdout


async def test_cli_commands(tmp_path: Path, servers: list[Server], session: aiohttp.ClientSession) -> None:
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db")
    servers.append(server)
    api = Api(session, server.url)
    _, first = await api.call("POST", "/v1/asks", json={
        "question": "Deploy the release\nto production?", "options": ["yes", "no"],
        "context": "All checks green.", "timeout_s": 7200})
    _, second = await api.call("POST", "/v1/asks", json={"question": "Which region?"})

    listed = run_cli(tmp_path, server.url, "asks")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["REF", "STATUS", "AGENT", "AGE", "DEADLINE", "QUESTION"]
    row = next(line for line in lines if line.startswith(first["ref"] + " "))
    assert "Deploy the release to production?" in row and "in 2h" in row and "ago" in row
    # Aligned: the question column starts at the same place on every line.
    assert len({line.index(q) for line, q in zip(lines, ["QUESTION", "Which", "Deploy"],
                                                        strict=False)}) == 1

    shown = run_cli(tmp_path, server.url, "show", first["ref"])
    assert shown.returncode == 0
    for text in ("All checks green.", "1. yes", "2. no", "operator:local", "created"):
        assert text in shown.stdout

    taken = run_cli(tmp_path, server.url, "answer", first["ref"], "2", "--note", "not on a Friday")
    assert taken.returncode == 0 and "taken" in taken.stdout
    refused = run_cli(tmp_path, server.url, "answer", first["ref"], "1")
    assert refused.returncode == 1 and "already answered" in refused.stderr
    invalid = run_cli(tmp_path, server.url, "answer", second["ref"], "", )
    assert invalid.returncode == 1
    _, got = await api.call("GET", f"/v1/asks/{first['id']}")
    assert got["answer"] == {"value": "no", "option": 2, "note": "not on a Friday"}

    assert run_cli(tmp_path, server.url, "withdraw", second["ref"]).returncode == 0
    assert run_cli(tmp_path, server.url, "withdraw", second["ref"]).returncode == 1
    assert "no open asks" in run_cli(tmp_path, server.url, "asks").stdout
    assert second["ref"] in run_cli(tmp_path, server.url, "asks", "--all").stdout
    assert run_cli(tmp_path, server.url, "frobnicate").returncode == 2
    with nothing_listening() as refused:
        assert run_cli(tmp_path, refused, "asks").returncode == 3
    assert run_cli(tmp_path, server.url, "asks", token="wrong").returncode == 2
    assert run_cli(tmp_path, "notaurl", "asks").returncode == 2


# -- crashes -------------------------------------------------------------------------------------


async def test_sigkill_loses_nothing(
    tmp_path: Path, store_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    server = await start_server(tmp_path, store_url)
    servers.append(server)
    api = Api(session, server.url)
    made = []
    for i in range(20):
        status, ask = await api.call("POST", "/v1/asks", json={
            "question": f"q{i}", "options": ["a", "b"], "timeout_s": 3600 + i})
        assert status == 201
        made.append(ask)
    answered = made[::2]
    for ask in answered:
        status, _ = await api.call("POST", f"/v1/asks/{ask['ref']}/answer", token=OP,
                                   json={"answer": "b", "note": "ok"})
        assert status == 200
    before = {a["id"]: (await api.call("GET", f"/v1/asks/{a['id']}", token=OP))[1] for a in made}
    stop(server, signal.SIGKILL)

    again = await start_server(tmp_path, store_url, name="again")
    servers.append(again)
    api = Api(session, again.url)
    for ask in made:
        status, after = await api.call("GET", f"/v1/asks/{ask['id']}", token=OP)
        assert status == 200
        assert after == before[ask["id"]]
    for ask in answered:
        assert before[ask["id"]]["answer"] == {"value": "b", "option": 2, "note": "ok"}


async def test_sensitive_value_never_in_logs_or_database(
    tmp_path: Path, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    db = tmp_path / "aye.db"
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{db}")
    servers.append(server)
    api = Api(session, server.url)
    secret = "s3cr3t-Pa55word-for-db"
    _, ask = await api.call("POST", "/v1/asks", json={"question": "DB password?", "sensitive": True})
    status, _ = await api.call("POST", f"/v1/asks/{ask['ref']}/answer", token=OP,
                               json={"answer": secret, "note": "note-" + secret})
    assert status == 200
    status, body = await api.call("POST", f"/v1/asks/{ask['ref']}/answer", token=OP,
                                  json={"answer": secret})
    assert status == 409 and secret not in str(body)
    _, read = await api.call("GET", f"/v1/asks/{ask['id']}/wait?timeout=1")
    assert read["answer"]["value"] == secret
    _, read = await api.call("GET", f"/v1/asks/{ask['id']}")
    assert read["answer"]["value"] is None
    stop(server)
    files = [p for p in tmp_path.iterdir() if p.name.startswith("aye.db")]
    for path in files:
        assert secret.encode() not in path.read_bytes(), path.name
    assert secret not in server.output()
    assert "ask.answered" in server.output() and "ask.erased" in server.output()


# -- several processes on one PostgreSQL ---------------------------------------------------------


QUORUM = """
[[gates]]
operations = ["deploy."]
responders = ["operator:local", "github:bob"]
approvals = 2
"""


@pytest.fixture(params=["direct", "pgbouncer"])
async def two_servers(
    request: pytest.FixtureRequest, tmp_path: Path, pg_head: HeadDatabase | None,
    servers: list[Server], session: aiohttp.ClientSession,
) -> tuple[Api, Api]:
    """Two `aye serve` processes on one PostgreSQL database, with a gate of two approvals:
    straight to it, or through PgBouncer in transaction mode (LISTEN on AYE_LISTEN_URL, direct)."""
    url = await postgres_at_head(pg_head)
    (tmp_path / "aye.toml").write_text(QUORUM)
    pooled = request.param == "pgbouncer"
    for name in ("one", "two"):
        servers.append(await (start_server(tmp_path, request.getfixturevalue("pgbouncer")(url),
                                           name=name, AYE_LISTEN_URL=url) if pooled
                               else start_server(tmp_path, url, name=name)))
    return Api(session, servers[0].url), Api(session, servers[1].url)


async def parked(api: Api, count: int) -> None:
    """Until `count` agents are parked on this process (as /healthz reports)."""
    for _ in range(500):
        async with api.session.get(api.url + "/healthz") as resp:
            if (await resp.json())["parked"] >= count:
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the agent never parked")


async def test_two_processes_race_and_wake(two_servers: tuple[Api, Api]) -> None:
    a, b = two_servers
    _, ask = await a.call("POST", "/v1/asks", json={"question": "race", "options": ["x", "y"]})

    # Parked on process two, answered on process one: woken within a second.
    waiting = asyncio.create_task(b.call("GET", f"/v1/asks/{ask['id']}/wait?timeout=30"))
    await parked(b, 1)
    results = await asyncio.gather(*(
        (a if i % 2 else b).call("POST", f"/v1/asks/{ask['id']}/answer", token=OP,
                                 json={"answer": "x" if i % 3 else "y"})
        for i in range(50)))
    answered_at = time.monotonic()
    status, woke = await asyncio.wait_for(waiting, 5)
    assert time.monotonic() - answered_at < 1.0
    assert status == 200 and woke["status"] == "answered"
    assert sorted(s for s, _ in results) == [200] + [409] * 49
    _, view = await a.call("GET", f"/v1/asks/{ask['id']}", token=OP)
    events = [e["event"] for e in view["history"]]
    assert events.count("answered") == 1 and events.count("late") == 49


async def test_two_processes_expire_each_ask_once(two_servers: tuple[Api, Api]) -> None:
    a, b = two_servers
    made = [(await (a if i % 2 else b).call("POST", "/v1/asks", json={
        "question": f"q{i}", "timeout_s": 1}))[1] for i in range(10)]
    for ask in made:
        _, got = await b.call("GET", f"/v1/asks/{ask['id']}/wait?timeout=5")
        assert got["status"] == "expired"
    for ask in made:
        _, view = await a.call("GET", f"/v1/asks/{ask['id']}", token=OP)
        assert [e["event"] for e in view["history"]].count("expired") == 1
        expired_at = next(e["at"] for e in view["history"] if e["event"] == "expired")
        late = _ts(expired_at) - _ts(view["deadline"])
        assert 0 <= late < 1.0, late


async def test_two_processes_count_each_approval_once(two_servers: tuple[Api, Api]) -> None:
    a, b = two_servers
    status, made = await a.call("POST", "/v1/calls", json={"operation": "deploy.prod", "input": {}})
    assert status == 202, made
    ask = made["ask"]["id"]
    tried = await asyncio.gather(*(
        (a if i % 2 else b).call("POST", f"/v1/asks/{ask}/answer", token=OP, json={"answer": "approve"})
        for i in range(20)))
    # One person approving on both processes at once: counted once, towards a quorum of two.
    assert sorted(s for s, _ in tried) == [200] + [409] * 19
    assert [r for s, r in tried if s == 200] == [
        {"outcome": "taken", "ref": made["ask"]["ref"], "approvals": 1, "needed": 2}]
    assert {r["error"] for s, r in tried if s == 409} == {"already_approved"}
    _, view = await b.call("GET", f"/v1/asks/{ask}", token=OP)
    assert view["status"] == "open"
    assert view["approvals"] == {"needed": 2, "approvers": ["operator:local"]}
    assert [e["event"] for e in view["history"]].count("approved") == 1


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.fixture(autouse=True)
def _chdir_guard() -> Iterator[None]:
    cwd = os.getcwd()
    yield
    os.chdir(cwd)
