"""Callbacks go only where the operator allowed, over the real API (SQLite and PostgreSQL), a
real receiver on 127.0.0.1 and `aye serve` itself: URLs that escaped a string-prefix check are
422 on every way in (asks, calls, starts, MCP's ask tool); a host that resolves to a blocked
address is a dead letter `blocked_address` that never connects and is never retried; an
allowed loopback prefix still delivers; redirects are not followed; bad prefixes are exit 2."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from sqlalchemy import select

from ask_api.callbacks import NAME as CALLBACKS
from ask_api.callbacks import Callbacks
from ask_api.tokens import TokenBook
from bot.config import AyeConfig, Config, ConfigError, load_config
from core.app.timing import ManualClock
from store.models import OutboxRow
from tests.conftest import OPERATOR_TOKEN, Aye, StartAye, eventually
from tests.e2e.test_mcp_http import connected, error, start_mcp_aye
from tests.e2e.test_process import base_env
from tests.local_server import LocalServer

TOKEN = "token-cb-ssrf"
AGENT = {"Authorization": f"Bearer {TOKEN}"}
OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
ISSUE = {"github": {"repo": "octo/app", "number": 7}}


class Receiver(LocalServer):
    """The agent's receiver, and what else listens on its host: every request is recorded,
    whatever its path (`/admin` stands for what a callback must never reach)."""

    name = "callback receiver"

    def __init__(self, status: int = 204) -> None:
        super().__init__()
        self.status = status
        self.got: list[str] = []

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        await self._serve(app)

    async def handle(self, request: web.Request) -> web.Response:
        self.got.append(request.path_qs)
        if request.path.startswith("/hooks/"):
            return web.Response(status=self.status, headers={"Location": "/admin"})
        return web.Response(status=200)  # /admin and the rest: a signed POST here is the harm


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as found:
        yield found


def agent_config(prefixes: list[str], monkeypatch: pytest.MonkeyPatch, **extra: Any) -> AyeConfig:
    monkeypatch.setenv("AYE_TOKEN_CB_SSRF", TOKEN)
    monkeypatch.setenv("AYE_CB_SSRF_SECRET", "ssrf-test-secret")
    return Config.model_validate({"agents": [{
        "name": "cb", "token_env": "AYE_TOKEN_CB_SSRF", "callback_secret_env": "AYE_CB_SSRF_SECRET",
        "callback_urls": prefixes}], **extra})


async def calling_back(start_aye: StartAye, database_url: str, cfg: AyeConfig,
                       clock: ManualClock | None = None) -> Aye:
    return await start_aye(database_url, cfg, clock, tokens=TokenBook.build(cfg, OPERATOR_TOKEN, None))


def escapes(base: str, port: int) -> list[str]:
    """URLs that `startswith` let through for the prefixes `{base}/hooks/` (127.0.0.1) and
    `https://hooks.test/hooks/`: the issue's variants first, then their relatives."""
    return [
        f"{base}/hooks/../admin",
        f"{base}/hooks/%2e%2e/admin",
        f"{base}/hooks/./../admin",
        f"https://hooks.test@127.0.0.1:{port}/hooks/",
        f"http://[::ffff:127.0.0.1]:{port}/hooks/aye",
        f"http://0x7f000001:{port}/hooks/aye",
        "https://hooks.test.127.0.0.1.nip.io/hooks/aye",
        f"{base}/hooks/%2E%2E/admin",
        f"{base}/hooks/..%2fadmin",
        f"{base}/hooks/..%5Cadmin",
        f"{base}/hooks/..;/admin",
        f"{base}/hooks/%252e%252e/admin",
        f"http://2130706433:{port}/hooks/aye",
        f"http://0177.0.0.1:{port}/hooks/aye",
        f"http://user:pw@127.0.0.1:{port}/hooks/aye",
        f"{base}/hooksevil/aye",
    ]


async def test_urls_that_escape_a_prefix_are_refused_on_every_way_in(
    start_aye: StartAye, database_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = int(receiver.base_url.rsplit(":", 1)[1])
    cfg = agent_config([receiver.base_url + "/hooks/", "https://hooks.test/hooks/"], monkeypatch)
    aye = await calling_back(start_aye, database_url, cfg)
    refused = escapes(receiver.base_url, port)
    for url in refused:
        body = await aye.ask(expect=422, headers=AGENT, question="?", callback_url=url)
        assert body["field"] == "callback_url", (url, body)
        assert body["message"].startswith("callback_url: "), body
    for url in refused[:8]:
        for route, extra in (("/v1/calls", {"operation": "x.y"}), ("/v1/starts", {"work": ISSUE})):
            resp = await aye.client.post(route, headers=AGENT, json={**extra, "callback_url": url})
            got = await resp.json()
            assert (resp.status, got["field"]) == (422, "callback_url"), (route, url, got)
    listed = await (await aye.client.get("/v1/asks", headers=AGENT)).json()
    assert listed["asks"] == [] and receiver.got == []


async def test_mcp_s_ask_tool_refuses_them_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_config(["http://127.0.0.1:9/hooks/"], monkeypatch)  # sets the agent's env
    config = {"agents": [{"name": "cb", "token_env": "AYE_TOKEN_CB_SSRF",
                          "callback_secret_env": "AYE_CB_SSRF_SECRET",
                          "callback_urls": ["http://127.0.0.1:9/hooks/"]}]}
    aye = await start_mcp_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config)
    try:
        async with connected(aye, token=TOKEN) as client:
            for url in escapes("http://127.0.0.1:9", 9)[:8]:
                called = await client.call_tool(
                    "ask", {"question": "?", "callback_url": url, "wait_s": 0})
                assert error(called).startswith("invalid_field: callback_url"), (url, called)
    finally:
        await aye.client.close()


class FakeLookup(AbstractResolver):
    """The callbacks' name lookup (our own seam: Callbacks' resolver asks it), answering from
    a table, as a DNS that points a name at an inside address would."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        return [ResolveResult(hostname=host, host=a, port=port, family=socket.AF_INET6
                              if ":" in a else socket.AF_INET, proto=0, flags=0)
                for a in self.table[host]]

    async def close(self) -> None:
        pass


async def callback_rows(aye: Aye) -> list[OutboxRow]:
    async with aye.asks.parts.store.read() as conn:
        found = await conn.execute(
            select(OutboxRow.__table__).where(OutboxRow.__table__.c.surface == CALLBACKS))  # type: ignore[attr-defined]
        return [OutboxRow.model_construct(**dict(r._mapping)) for r in found.all()]


@pytest.mark.parametrize(
    "addresses",
    [["127.0.0.1"], ["10.0.0.1"], ["169.254.169.254"], ["100.64.0.1"], ["::ffff:127.0.0.1"],
     ["fd00::1", "127.0.0.1", "192.168.0.1"]],
)
async def test_a_host_that_resolves_inside_is_a_dead_letter_never_connected(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch, addresses: list[str],
) -> None:
    connections: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)  # anything at all reaching this port is the failure
        writer.close()

    listener = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        cfg = agent_config([f"https://hooks.test:{port}/hooks/"], monkeypatch)
        aye = await calling_back(start_aye, database_url, cfg, manual_clock)
        callbacks = aye.asks.parts.places[CALLBACKS]
        assert isinstance(callbacks, Callbacks)
        lookup = FakeLookup({"hooks.test": addresses})
        callbacks.resolver.lookup = lookup
        ask = await aye.ask(headers=AGENT, question="Ship?", options=["yes", "no"],
                            callback_url=f"https://hooks.test:{port}/hooks/aye")
        assert (await aye.answer(ask["ref"], "yes"))[0] == 200

        async def buried() -> bool:
            rows = await callback_rows(aye)
            return bool(rows) and rows[0].dead_at is not None

        await eventually(buried)
        [row] = await callback_rows(aye)
        # Tried once, given up at once: no due time, so the outbox never claims it again.
        assert (row.last_error, row.attempts, row.due_at) == ("blocked_address", 1, None)
        assert lookup.asked == ["hooks.test"] and connections == []
        view = await aye.get(ask["id"], operator=True)
        assert any(e["event"] == "undelivered" and e.get("why") == "blocked_address"
                   for e in view["history"]), view["history"]
        metrics = await (await aye.client.get("/metrics", headers=OPERATOR)).text()
        assert 'aye_outbox_dead_letters{surface="callback"} 1.0' in metrics
    finally:
        listener.close()
        await listener.wait_closed()


async def test_a_localhost_prefix_still_delivers(
    start_aye: StartAye, database_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = receiver.base_url.rsplit(":", 1)[1]
    cfg = agent_config([f"http://localhost:{port}/hooks/"], monkeypatch)
    aye = await calling_back(start_aye, database_url, cfg)
    ask = await aye.ask(headers=AGENT, question="Ship?", options=["yes", "no"],
                        callback_url=f"HTTP://LocalHost:{port}/hooks/aye?from=aye")
    await aye.answer(ask["ref"], "yes")

    async def got() -> bool:
        return receiver.got == ["/hooks/aye?from=aye"]

    await eventually(got, 10)


async def test_a_redirect_is_not_followed_and_is_retried(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with Receiver(status=302) as receiver:
        cfg = agent_config([receiver.base_url + "/hooks/"], monkeypatch)
        aye = await calling_back(start_aye, database_url, cfg, manual_clock)
        ask = await aye.ask(headers=AGENT, question="Ship?", options=["yes", "no"],
                            callback_url=receiver.base_url + "/hooks/aye")
        await aye.answer(ask["ref"], "yes")

        async def twice() -> bool:
            manual_clock.advance(1900)  # past any backoff
            return len(receiver.got) >= 2

        await eventually(twice, 10)
        assert set(receiver.got) == {"/hooks/aye"}  # its Location, /admin, never visited
        [row] = await callback_rows(aye)
        assert row.dead_at is None and "302" in (row.last_error or "")


BAD_PREFIXES = [
    "http://hooks.test/", "https://hooks.test", "https://hooks.test/hooks",
    "https://user@hooks.test/", "https://hooks.test/?a=1", "https://hooks.test/#x",
    "https://0x7f000001/", "http://[::ffff:127.0.0.1]/", "http://10.0.0.1/hooks/",
    "https://hooks.test/%2e%2e/", "https://hooks.test/../", "ftp://hooks.test/", "hooks.test/",
]


@pytest.mark.parametrize("prefix", BAD_PREFIXES)
def test_a_bad_prefix_names_its_key(tmp_path: Path, prefix: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AYE_T_TOKEN", "t1")
    monkeypatch.setenv("AYE_T_TOKEN2", "t2")
    path = tmp_path / "aye.toml"
    path.write_text(
        "[[agents]]\nname = 'a'\ntoken_env = 'AYE_T_TOKEN'\ncallback_urls = ['https://ok.test/h/']\n"
        f"[[agents]]\nname = 'b'\ntoken_env = 'AYE_T_TOKEN2'\n"
        f"callback_urls = ['https://ok.test/h/', {prefix!r}]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert f"agents[2].callback_urls[1]: {prefix!r} " in str(caught.value)


def test_aye_serve_with_a_bad_prefix_exits_2_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "aye.toml").write_text(
        "[[agents]]\nname = 'a'\ntoken_env = 'AYE_T_TOKEN'\n"
        "callback_urls = ['https://hooks.test@127.0.0.1:9/']\n")
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT="0",
                   AYE_T_TOKEN="t1")
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "aye.toml: agents[1].callback_urls[0]: 'https://hooks.test@127.0.0.1:9/' " in line
    assert "userinfo" in line
