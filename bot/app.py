"""The process: one aiohttp application holding the store, the API, the surfaces and the loops."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import aiohttp
from aiohttp import web

from ask_api.routes import AskApi, errors
from bot import logs
from bot.broker import Broker
from bot.clock import Clock
from bot.config import Config, ConfigError, load_config
from bot.loops import Deliverer, run_clock
from bot.settings import Settings, SettingsError
from bot.tokens import TokenBook, ensure_tokens, token_file_path
from bot.waiters import PgListener
from handlers import SurfaceConfigError, build_surfaces, describe
from store.db import Store, StoreError

log = logging.getLogger("aye")

BROKER = web.AppKey("broker", Broker)
# GitHub sends webhook payloads of up to 25 MB; the /v1 routes hold their own 64 KiB limit.
MAX_REQUEST = 26 * 1024 * 1024


def create_app(
    settings: Settings, config: Config, tokens: TokenBook, clock: Clock | None = None
) -> web.Application:
    logs.quiet_libraries()
    store = Store(settings.database_url)
    broker = Broker(store, config, clock)
    surfaces = build_surfaces(settings, config, broker)
    for surface in surfaces:
        broker.add_surface(surface)
    api = AskApi(broker, tokens)
    app = web.Application(middlewares=[errors, api.auth], client_max_size=MAX_REQUEST)
    app[BROKER] = broker
    app.add_routes(api.routes())
    app.add_routes([web.get("/healthz", healthz)])
    for surface in surfaces:
        app.add_routes(surface.routes())
    app.cleanup_ctx.append(_lifecycle)
    return app


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    # One exit stack owns everything long-lived: if any later step fails at startup, what
    # was opened before it is still closed (aiohttp would skip earlier cleanup_ctx otherwise).
    broker = app[BROKER]
    async with AsyncExitStack() as stack:
        stack.push_async_callback(broker.store.close)
        await broker.store.open()
        if broker.store.is_postgres:
            listener = PgListener(broker.store.url, broker.waiters)
            await listener.start()
            stack.push_async_callback(listener.close)
        session = aiohttp.ClientSession()
        stack.push_async_callback(session.close)
        for surface in broker.surfaces.values():
            await surface.start(session)
            stack.push_async_callback(surface.close)
        tasks = [
            asyncio.create_task(run_clock(broker), name="aye-clock"),
            asyncio.create_task(Deliverer(broker).run(), name="aye-outbox"),
        ]
        stack.push_async_callback(_cancel, tasks)
        yield


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def healthz(request: web.Request) -> web.Response:
    broker = request.app[BROKER]
    store_ok = await broker.store.ping()
    surfaces = {"slack": {"on": False}, "github": {"on": False}}
    for name, surface in broker.surfaces.items():
        surfaces[name] = surface.health()
    body = {
        "ok": store_ok,
        "store": "ok" if store_ok else "unreachable",
        "surfaces": surfaces,
        "parked": len(broker.waiters),
    }
    return web.json_response(body, status=200 if store_ok else 503)


def _fail(line: str) -> int:
    print(f"aye: {line}", file=sys.stderr)
    return 2


def serve() -> int:
    """`aye serve`: exit 2 with one line when the environment or the config is unusable."""
    logs.setup()
    try:
        settings = Settings.from_env()
        config = load_config(settings.config_path)
        surface_lines = describe(settings)
        store_line = Store(settings.database_url).describe()
    except (SettingsError, ConfigError, SurfaceConfigError, StoreError) as exc:
        return _fail(str(exc))
    token_path = token_file_path(settings.database_url)
    try:
        operator, agent, _ = ensure_tokens(
            token_path, settings.operator_token, settings.agent_token, need_agent=not config.agents
        )
    except OSError as exc:
        return _fail(f"cannot write the token file {token_path}: {exc.strerror}")
    tokens = TokenBook.build(config, operator, agent)
    try:
        app = create_app(settings, config, tokens)
    except SurfaceConfigError as exc:
        return _fail(str(exc))
    print(f"aye: listening on http://{settings.host}:{settings.port}", flush=True)
    print(f"aye: store {store_line}", flush=True)
    if not settings.config_path.exists():
        print(f"aye: no config file at {settings.config_path}; using the defaults", flush=True)
    for line in surface_lines:
        print(f"aye: {line}", flush=True)
    if settings.operator_token is None or (not config.agents and settings.agent_token is None):
        print(f"aye: generated tokens are kept in {token_path.resolve()}", flush=True)
    if config.agents:
        print(f"aye: agents: {', '.join(a.name for a in config.agents)}", flush=True)
    try:
        web.run_app(app, host=settings.host, port=settings.port, print=None,
                    access_log=None, handle_signals=True)
    except OSError as exc:
        return _fail(f"cannot listen on {settings.host}:{settings.port}: {exc.strerror}")
    except StoreError as exc:
        return _fail(str(exc))
    return 0
