"""Shared test harness: the real app on a real store (SQLite, and PostgreSQL where reachable).

Every store/API test that takes `database_url` runs twice: on a fresh SQLite file and on a
database of its own on the PostgreSQL at 127.0.0.1:5432, each at the newest schema revision
(tests/stores.py). Where PostgreSQL is not reachable those runs are skipped, unless
AYE_REQUIRE_PG=1 (set by .ci/run), where they fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from playwright.async_api import expect

from ask_api.tokens import TokenBook
from bot.app import SERVICE, create_app
from bot.config import Config
from bot.settings import Settings
from bot.surfaces import PLUGINS, register
from core.app import deadlines
from core.app.service import Service, SurfacePlugin
from core.app.timing import Clock, ManualClock
from tests.stores import (
    PG_SERVER,
    database_url,
    empty_database_url,
    pg_head,
    pg_session_url,
    postgres_url,
    reset_postgres,
    sqlite_template,
    sqlite_url,
)

# The tests' process knows the surfaces' kinds, as `aye serve` does once it reads its config:
# the config models and responders that test modules validate as they load name them.
register(PLUGINS)

# The stores' fixtures, and what tests import from here.
__all__ = [
    "PG_SERVER",
    "database_url",
    "empty_database_url",
    "pg_head",
    "pg_session_url",
    "postgres_url",
    "reset_postgres",
    "sqlite_template",
    "sqlite_url",
]

# Playwright's assertions wait 5 s by default; on a loaded 2-core CI machine a sign-in's redirects
# (aye, the fake provider, aye again) took longer once. The contract's own limits (the inbox's
# LIVE_S) are passed to the assertions that test them.
expect.set_options(timeout=15_000)

pytest_plugins = ["tests.fake_slack", "tests.fake_github"]

OPERATOR_TOKEN = "op-test-token"
AGENT_TOKEN = "agent-test-token"
AGENT_HEADERS = {"Authorization": f"Bearer {AGENT_TOKEN}"}
OPERATOR_HEADERS = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # slack-sdk copies HTTP(S)_PROXY into an explicit proxy and ignores NO_PROXY: traffic to
    # the local fakes would go to the proxy.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def settings_for(database_url: str, **env: str) -> Settings:
    base = {"AYE_DATABASE_URL": database_url, "AYE_CONFIG": "/nonexistent/aye.toml"}
    base.update(env)
    return Settings.from_env(base)


@dataclass
class Aye:
    """A running aye app and clients speaking to it as the operator and as an agent."""

    client: TestClient[Any, Any]
    app: web.Application
    clock: Clock
    headers: dict[str, str] = field(default_factory=lambda: dict(AGENT_HEADERS))

    @property
    def asks(self) -> Service:
        return self.app[SERVICE]

    @property
    def url(self) -> str:
        return str(self.client.make_url(""))

    async def ask(self, expect: int = 201, headers: dict[str, str] | None = None,
                  **body: Any) -> dict[str, Any]:
        resp = await self.client.post("/v1/asks", json=body, headers=headers or self.headers)
        data = await resp.json()
        assert resp.status == expect, data
        return data  # type: ignore[no-any-return]

    async def get(self, ident: str, operator: bool = False) -> dict[str, Any]:
        resp = await self.client.get(
            f"/v1/asks/{ident}", headers=OPERATOR_HEADERS if operator else self.headers
        )
        assert resp.status == 200, await resp.text()
        return await resp.json()  # type: ignore[no-any-return]

    async def answer(self, ident: str, answer: Any, note: str | None = None) -> tuple[int, Any]:
        body = {"answer": answer} | ({"note": note} if note else {})
        resp = await self.client.post(
            f"/v1/asks/{ident}/answer", json=body, headers=OPERATOR_HEADERS
        )
        return resp.status, await resp.json()

    async def wait(self, ident: str, timeout: float = 5) -> dict[str, Any]:
        resp = await self.client.get(
            f"/v1/asks/{ident}/wait", params={"timeout": str(timeout)}, headers=self.headers
        )
        assert resp.status == 200, await resp.text()
        return await resp.json()  # type: ignore[no-any-return]

    async def parked(self, count: int = 1) -> None:
        """Until `count` agents are parked on this app's waiters."""
        await eventually(self._has_parked(count))

    def _has_parked(self, count: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return len(self.asks.parts.signals.waiters) >= count

        return check

    async def tick(self) -> None:
        """Fire what is due now, as the clock loop would, without waiting for it."""
        await deadlines.fire_due(self.asks.parts)


StartAye = Callable[..., Awaitable[Aye]]


@pytest.fixture
async def start_aye() -> AsyncIterator[StartAye]:
    """Start an aye app (several, for multi-process scenarios on one store)."""
    started: list[TestClient[Any, Any]] = []

    async def start(
        database_url: str,
        config: Config | None = None,
        clock: Clock | None = None,
        env: dict[str, str] | None = None,
        tokens: TokenBook | None = None,
        plugins: Sequence[SurfacePlugin] = PLUGINS,
    ) -> Aye:
        config = config or Config()
        clock = clock or Clock()
        settings = settings_for(database_url, **(env or {}))
        book = tokens or TokenBook.build(config, OPERATOR_TOKEN, AGENT_TOKEN)
        app = create_app(settings, config, book, clock, plugins=plugins)
        client: TestClient[Any, Any] = TestClient(TestServer(app))
        await client.start_server()
        started.append(client)
        return Aye(client, app, clock)

    yield start
    for client in reversed(started):
        await client.close()


@pytest.fixture
async def aye(start_aye: StartAye, database_url: str) -> Aye:
    return await start_aye(database_url)


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    """Wait for a condition that a background loop makes true (bounded, no fixed sleeps)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)
