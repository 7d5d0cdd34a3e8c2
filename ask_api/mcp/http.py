"""`/mcp` on aye's own port and process: the MCP server over streamable HTTP, for agents.

The SDK serves streamable HTTP only as ASGI: its StreamableHTTPSessionManager keeps the
sessions, the SSE streams that carry progress, the 2026 per-request path and the DNS-rebinding
checks. aye is one aiohttp application, so rather than a second server and port, `/mcp` hands
each request to that manager through a small ASGI bridge (ask_api/mcp/asgi.py), and the
manager's task group runs for the app's life (a cleanup_ctx). SSE, not `json_response`: with
JSON responses progress notifications never reach the client.

The bearer token is checked before any MCP handling (ask_api/mcp/mount.py, which also loads
this module, and the SDK, on the first request that needs them). The agent then rides in the
ASGI scope: as the SDK's authenticated user (a session answers only the agent that opened
it) and for the tools, which call the core in-process (ask_api/mcp/local.py).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from aiohttp import web
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from ask_api.http import ApiError, DuplicateKeyError
from ask_api.mcp import asgi
from ask_api.mcp.duplicates import Duplicated, duplicated, error_body
from ask_api.mcp.local import LocalAgent
from ask_api.mcp.sent import AfterSent
from ask_api.mcp.tools import AgentPort, Context, build_server
from ask_api.routes import CALLER
from ask_api.tokens import Caller, TokenBook
from core.app.service import Service
from core.domain.kinds import Kinds
from core.domain.types import AgentInfo

AGENT = "aye.agent"  # the ASGI scope's key for the calling agent
DUPLICATED = "aye.duplicated"  # the ASGI scope's key for a key the body holds twice
# A JSON-RPC envelope around at most 64 KiB of arguments (the API's body limit, checked per call).
MAX_ENVELOPE = 128 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class McpEndpoint:
    """`/mcp`: one MCP server and one session manager for every agent; each request acts for
    the agent its bearer token names."""

    def __init__(
        self, asks: Service, tokens: TokenBook, security: TransportSecuritySettings,
        kinds: Kinds,
    ) -> None:
        self.asks, self.tokens = asks, tokens
        self.server = build_server(self.port_for, kinds)
        self.manager = StreamableHTTPSessionManager(
            app=self.server, json_response=False, security_settings=security,
            max_request_body_size=MAX_ENVELOPE,
        )

    def port_for(self, ctx: Context) -> AgentPort:
        """aye as the agent behind a tool call; an ApiError when there is none, or when the
        call's body held a key twice."""
        scope = getattr(ctx.request, "scope", None) or {}
        agent = scope.get(AGENT)
        if not isinstance(agent, AgentInfo):  # handle() put it there; nothing else serves them
            raise ApiError(401, "unauthorized", "a valid bearer token is required")
        twice = scope.get(DUPLICATED)
        if isinstance(twice, Duplicated) and twice.call == ctx.request_id:
            # The SDK took one of the two: the call is refused before it acts on either.
            raise DuplicateKeyError(twice.key)
        sent = scope.get(asgi.SENT)
        return LocalAgent(self.asks, agent,
                          AfterSent(sent if isinstance(sent, asgi.Sent) else None, ctx.request_id))

    async def serve(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        """A request from `caller` (an agent: ask_api/mcp/mount.py checked the token)."""
        assert caller.agent is not None
        request[CALLER] = caller  # the access line names the agent, as for /v1
        # The SDK binds each session to the principal that opened it; the token never goes in.
        user = AuthenticatedUser(AccessToken(token="", client_id=caller.agent.name, scopes=[]))
        head = await _head(request) if request.method == "POST" else b""
        found = duplicated(head) if len(head) <= MAX_ENVELOPE else None
        if found is not None and found.call is None:
            return web.json_response(error_body(found.key), status=400)
        return await asgi.serve(self.manager.handle_request, request,
                                {"user": user, AGENT: caller.agent, DUPLICATED: found}, head)

    async def lifecycle(self, _app: web.Application) -> AsyncIterator[None]:
        """The session manager's task group, in a task of its own: an anyio task group must be
        left by the task that entered it, and aiohttp may start and clean up an app from
        different tasks."""
        started, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with self.manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(run(), name="aye-mcp")
        ready = asyncio.create_task(started.wait())
        try:
            await asyncio.wait([task, ready], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled while starting (the process is stopping): leave none
            task.cancel()
            raise
        finally:
            ready.cancel()
        if task.done():
            task.result()  # it failed to start: say why
        try:
            yield
        finally:
            stop.set()
            await task


async def _head(request: web.Request) -> bytes:
    """The body, read to its end unless it is over MAX_ENVELOPE (then as much as was read: the
    SDK refuses it, reading on)."""
    chunks, size = [], 0
    while size <= MAX_ENVELOPE and (chunk := await request.content.readany()):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def transport_security(host: str, public_url: str | None = None) -> TransportSecuritySettings:
    """DNS-rebinding protection for aye's own names: a page on another name that resolves to
    aye's address is refused (421), whatever port aye listens on. aye bound to every address
    (0.0.0.0, ::) is reached by names it cannot know, so the Host check is off there; the bearer
    token is required either way, and a browser page has none."""
    public = urlsplit(public_url) if public_url else None
    names = [] if _is_wildcard(host) else [_host_name(host), *LOOPBACK_NAMES]
    if public is not None and public.hostname and names:
        names.append(_host_name(public.hostname))
    if not names:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = list(dict.fromkeys(names))
    hosts = [h for name in names for h in (name, f"{name}:*")]
    origins = [f"http://{name}:*" for name in LOOPBACK_NAMES]
    if public is not None and public.netloc:
        origins.append(f"{public.scheme}://{public.netloc}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host in ("", "*")


def _host_name(host: str) -> str:
    """`host` as a Host header names it: an IPv6 address in brackets."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host.lower()
    return f"[{address}]" if address.version == 6 else str(address)
