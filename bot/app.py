"""The process: one aiohttp application holding the store, the API, the surfaces and the loops."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
from aiohttp import web
from dotenv import load_dotenv

from ask_api.audit import routes as audit_routes
from ask_api.callbacks import NAME as CALLBACKS
from ask_api.callbacks import Callbacks, Target
from ask_api.external import Door
from ask_api.mcp.mount import setup as setup_mcp
from ask_api.routes import CALLER, AskApi, errors
from ask_api.tokens import TokenBook
from ask_api.whoami import routes as whoami_routes
from bot import logs
from bot.config import AyeConfig, ConfigError, load_config
from bot.connections import BodyTimeout
from bot.listener import PgListener
from bot.loops import Deliverer, run_audit_head, run_clock
from bot.metrics import setup as setup_metrics
from bot.run import CannotListen, check_port, run
from bot.settings import AUDIT_HEAD_EVERY_S, Settings, SettingsError, reach
from bot.sign_ins import Teams, sign_in_providers
from bot.surfaces import PLUGINS, register
from bot.token_file import TokenFileError, settle_tokens, token_file_path
from core.app import delivery
from core.app.keys import Keyring
from core.app.parts import Parts
from core.app.ports import SurfaceConfigError
from core.app.service import Service, SurfacePlugin
from core.app.timing import Clock
from core.domain.logline import emit
from handlers.web import events_session, operator_session, operator_session_alive, sign_ins
from handlers.web import setup as setup_inbox
from handlers.web.providers import SIGNS_IN_AS, SLACK
from handlers.web.providers import describe as describe_sign_ins
from store.db import Store, StoreError

log = logging.getLogger("aye")
ACCESS = logging.getLogger("aye.access")

SERVICE = web.AppKey("service", Service)
# What /healthz says of each surface, on or off, in the order of the plug-ins.
SURFACE_NAMES = web.AppKey("surface_names", list[str])
# On SIGTERM: in-flight sends get this long to finish; the whole stop stays within 10 s.
DRAIN_S = 5.0
ENV_FILE = ".env"
# GitHub sends webhook payloads of up to 25 MB; the /v1 routes hold their own 64 KiB limit.
MAX_REQUEST = 26 * 1024 * 1024


def create_app(
    settings: Settings, config: AyeConfig, tokens: TokenBook, clock: Clock | None = None,
    plugins: Sequence[SurfacePlugin] = PLUGINS,
) -> web.Application:
    """The whole process, with the surfaces of `plugins` that the environment turns on."""
    logs.quiet_libraries()
    known = register(plugins)  # the surfaces' kinds, handed down from here
    store = Store(settings.database_url, settings.listen_url)
    clock = clock or Clock()
    keys = Keyring(store, settings.signing_key_path, settings.public_url, clock.now)
    parts = Parts.build(store, config.defaults, config.gates, clock, people=config.directory(),
                        keys=keys)
    service = Service(parts, tokens.derived_key(b"surfaces"))
    for plugin in plugins:
        surface_settings = plugin.read_settings(settings.env)
        if surface_settings is not None:
            service.add_surface(plugin.build(surface_settings, config.section(plugin.name), service))
    service.add_surface(Callbacks(service, callback_targets(config)))
    api = AskApi(service, tokens, known, session_ok=operator_session,
                 public_url=settings.public_url, session_alive=operator_session_alive)
    door = Door(service, {v.name: v.build() for v in config.verifiers},
                key=tokens.derived_key(b"external deliveries"))
    # events_session before api.auth: GET /v1/events takes the inbox's session, from the store.
    app = web.Application(middlewares=[access_log, errors, events_session, api.auth],
                          client_max_size=MAX_REQUEST)
    app[SERVICE] = service
    app[SURFACE_NAMES] = [p.name for p in plugins]
    app.add_routes(api.routes())
    app.add_routes(door.routes())
    app.add_routes(whoami_routes())
    app.add_routes(audit_routes(service))
    app.add_routes([web.get("/healthz", healthz)])
    for surface in parts.places.values():
        app.add_routes(surface.routes())
    sign_ins_on = sign_in_providers(settings, config, plugins, slack_teams(service))
    # Whoever signs in to the inbox as themselves can answer there: an ask for them is
    # reachable with or without their surface running.
    service.inbox_signs_in(frozenset(SIGNS_IN_AS[p.name] for p in sign_ins_on))
    setup_inbox(
        app, service, operator_ok=tokens.is_operator,
        secure=(settings.public_url or "").startswith("https://"),
        session_key=tokens.derived_key(b"web inbox sessions"),
        providers=sign_ins_on, origin=settings.origin, public_url=settings.public_url,
    )
    app.cleanup_ctx.append(functools.partial(_lifecycle, head_every=settings.audit_head_every))
    # After the store's lifecycle: MCP sessions start once the store is open, end before it closes.
    setup_mcp(app, service, tokens, host=settings.host, kinds=known, public_url=settings.public_url)
    # Last: its middleware goes first (it sees every status), its series start with every surface.
    setup_metrics(app, service, tokens)
    return app


def callback_targets(config: AyeConfig) -> dict[str, Target]:
    """Each agent that may be called back: its secret and allowed URL prefixes."""
    return {
        agent.name: Target(secret, tuple(agent.callback_urls))
        for agent in config.agents
        if (secret := agent.callback_secret()) is not None
    }


def slack_teams(service: Service) -> Teams | None:
    """The Slack surface's teams whose members may answer, asked at each sign-in (its own
    team is known once auth.test came back); None while the Slack bot is off."""
    teams = getattr(service.parts.places.get(SLACK), "answering_teams", None)
    return teams if callable(teams) else None


def unused_sections(
    settings: Settings, config: AyeConfig, plugins: Sequence[SurfacePlugin] = PLUGINS
) -> None:
    """A surface's config section set while the surface is off would silently do nothing:
    SurfaceConfigError naming it."""
    for plugin in plugins:
        section, model = config.section(plugin.name), plugin.kind.config_model
        if section is None or model is None or section == model():
            continue
        if plugin.kept_while_off(settings.env, section):
            continue
        if plugin.read_settings(settings.env) is None:
            raise SurfaceConfigError(
                f"{settings.config_path}: [{plugin.name}] is set, but {plugin.describe(None)}"
            )


def surface_warnings(settings: Settings, config: AyeConfig) -> list[str]:
    """Each surface's start-up warnings (Slack on with no Slack responder, an email: responder
    with email off), in the order of the plug-ins."""
    return [line for p in PLUGINS for line in p.warnings(p.read_settings(settings.env), config)]


def where(settings: Settings, port: int) -> list[str]:
    """The start-up lines of where things are: the config file read (or none), the inbox,
    and MCP's streamable HTTP endpoint."""
    path = settings.config_path.resolve()
    read = f"config {path}" if path.exists() else f"no config file at {path}; using the defaults"
    origin = (settings.public_url or reach(settings.host, port)).rstrip("/")
    return [read, f"inbox {origin}/inbox",
            f"mcp {reach(settings.host, port)}/mcp (agents: see the README's MCP section)"]


def describe(settings: Settings, plugins: Sequence[SurfacePlugin] = PLUGINS) -> list[str]:
    """One start-up line per surface (and the warning lines a surface adds below its own);
    SurfaceConfigError when one is half-configured."""
    return [line for plugin in plugins
            for line in plugin.describe(plugin.read_settings(settings.env)).splitlines()]


async def _lifecycle(
    app: web.Application, head_every: float = AUDIT_HEAD_EVERY_S
) -> AsyncIterator[None]:
    # One exit stack owns everything long-lived: if any later step fails at startup, what
    # was opened before it is still closed (aiohttp would skip earlier cleanup_ctx otherwise).
    parts = app[SERVICE].parts
    async with AsyncExitStack() as stack:
        stack.push_async_callback(parts.store.close)
        # Before the store closes: the creates queued in a batch commit and are answered.
        stack.push_async_callback(parts.batcher.close)
        # And the agents' reads queued (core.app.reads) are written.
        stack.push_async_callback(parts.reads.close)
        await parts.store.open()
        log.info(await parts.keys.start())
        if parts.store.is_postgres:
            listener = PgListener(
                parts.store.listen_url, parts.signals.waiters, parts.stream.poke, parts.store.sent_here,
            )
            await listener.start()
            stack.push_async_callback(listener.close)
        session = aiohttp.ClientSession()
        stack.push_async_callback(session.close)
        sign_ins(app).http.use(session)
        for surface in parts.places.values():
            await surface.start(session)
            stack.push_async_callback(surface.close)
        deliverer = Deliverer(parts)
        await parts.stream.start()
        tasks = [
            asyncio.create_task(run_clock(parts), name="aye-clock"),
            asyncio.create_task(deliverer.run(), name="aye-outbox"),
            asyncio.create_task(parts.stream.run(), name="aye-events"),
            asyncio.create_task(run_audit_head(parts, head_every), name="aye-audit-head"),
        ]
        stack.push_async_callback(_cancel, tasks)
        # Runs first on the way out: sends in flight finish before the loops are cancelled.
        stack.push_async_callback(deliverer.drain, tasks[1], DRAIN_S)
        yield


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel the loops and wait for them; one that went on (a cancellation lost in a library)
    is cancelled again, so the way out never hangs."""
    for task in tasks:
        task.cancel()
    pending = set(tasks)
    while pending:
        _, pending = await asyncio.wait(pending, timeout=1.0)
        for task in pending:
            task.cancel()
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            log.error("a loop ended error=%s", type(task.exception()).__name__)


@web.middleware
async def access_log(request: web.Request, handler: Any) -> web.StreamResponse:
    """One line per request: method, route (its pattern, never a ref or a query), status,
    duration and the agent's name; never a token or a body."""
    started = time.monotonic()
    status = 500
    try:
        response: web.StreamResponse = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except BodyTimeout:  # the connections' guard (bot/connections.py) answers it 408
        status = 408
        raise
    finally:
        resource = request.match_info.route.resource
        caller = request.get(CALLER)
        emit(ACCESS, "http.request", method=request.method,
             route=resource.canonical if resource is not None else "(no route)", status=status,
             ms=round((time.monotonic() - started) * 1000, 1),
             agent=caller.agent.name if caller is not None and caller.agent else None)


async def healthz(request: web.Request) -> web.Response:
    parts = request.app[SERVICE].parts
    store_ok = await parts.store.ping()
    surfaces: dict[str, dict[str, Any]] = {name: {"on": False} for name in request.app[SURFACE_NAMES]}
    for name, surface in parts.places.items():
        if name != CALLBACKS:  # not a place people answer: shown on its own below
            surfaces[name] = surface.health()
    body = {
        "ok": store_ok,
        "store": "ok" if store_ok else "unreachable",
        "surfaces": surfaces,
        "callbacks": callbacks.health() if (callbacks := parts.places.get(CALLBACKS)) else None,
        "parked": len(parts.signals.waiters),
        "dead_letters": await delivery.dead_letters(parts) if store_ok else None,
        "sign_in": sign_ins(request.app).methods(),
    }
    return web.json_response(body, status=200 if store_ok else 503)


def _fail(line: str) -> int:
    logs.say(line, level=logging.ERROR, stream=sys.stderr)
    return 2


def serve() -> int:
    """`aye serve`: exit 2 with one line when the environment or the config is unusable."""
    logs.setup(fmt=logs.requested_format(os.environ))
    # A .env in the working folder, as .env.example suggests; the real environment wins.
    load_dotenv(ENV_FILE, override=False)
    try:
        settings = Settings.from_env()
        logs.setup(logs.LEVELS[settings.log_level], settings.log_format)
        config = load_config(settings.config_path, settings.config_named)
        surface_lines = describe(settings)
        unused_sections(settings, config)
        surface_lines.append(describe_sign_ins(sign_in_providers(settings, config, PLUGINS)))
        store_line = Store(settings.database_url).describe()
        surface_lines += surface_warnings(settings, config)
        check_port(settings.host, settings.port)  # busy: fail before a token file or a store
    except (SettingsError, ConfigError, SurfaceConfigError, StoreError, CannotListen) as exc:
        return _fail(str(exc))
    token_path = token_file_path(settings.database_url)
    try:
        operator, agent = settle_tokens(token_path, settings.database_url, settings.operator_token,
                                        settings.agent_token, not config.agents, settings.listen_url)
    except (TokenFileError, StoreError) as exc:
        return _fail(str(exc))
    shared = [a.name for a in config.agents if a.token() == operator]
    if shared or (agent is not None and agent == operator):
        who = f"agent {shared[0]}" if shared else "the default agent (AYE_AGENT_TOKEN)"
        return _fail(f"AYE_OPERATOR_TOKEN is the same as the token of {who}: give each its own")
    tokens = TokenBook.build(config, operator, agent)
    try:
        app = create_app(settings, config, tokens)
    except SurfaceConfigError as exc:
        return _fail(str(exc))

    def banner(port: int) -> list[str]:
        # Pasted in another terminal, the export line points the CLI, curl and the README's
        # examples ($AYE_URL) at the port bound, whatever AYE_PORT says.
        lines = [f"listening on http://{settings.host}:{port}",
                 f"in another terminal: export AYE_URL={reach(settings.host, port)}"]
        lines += [f"store {store_line}", *where(settings, port), *surface_lines]
        if settings.operator_token is None or (not config.agents and settings.agent_token is None):
            lines.append(f"generated tokens are kept in {token_path.resolve()}")
        if config.agents:
            lines.append(f"agents: {', '.join(a.name for a in config.agents)}")
        return lines

    try:
        asyncio.run(run(app, settings.host, settings.port, banner, app[SERVICE].release_waiters))
    except (CannotListen, StoreError) as exc:
        return _fail(str(exc))
    return 0
