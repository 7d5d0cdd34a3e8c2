"""`/mcp`, mounted without the MCP SDK: the SDK (about 28 MB of a process's memory) is
imported, and its session manager started, on the first request with an agent's token. A
process that never serves MCP never carries it; one that does pays once, on that request.

The bearer token is checked here first, so a request without an agent's token loads nothing:
none or unknown is 401, the operator's is 403 `agents_only`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from aiohttp import web

from ask_api.schemas import SURROGATE
from ask_api.tokens import Caller, TokenBook
from core.app.service import Service
from core.domain.kinds import Kinds

if TYPE_CHECKING:
    from ask_api.mcp.http import McpEndpoint

MCP_PATH = "/mcp"


def caller_of(tokens: TokenBook, request: web.Request) -> Caller | web.Response:
    """The agent a request to /mcp acts for, or the 401/403 that refuses it."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    # Bytes that are not UTF-8 arrive as lone surrogates (surrogateescape): no token has them.
    ok = scheme.lower() == "bearer" and not SURROGATE.search(token)
    caller = tokens.caller(token.strip()) if ok else None
    if caller is None:
        return web.json_response(
            {"error": "unauthorized", "message": "a valid bearer token is required"},
            status=401, headers={"WWW-Authenticate": 'Bearer realm="aye"'},
        )
    if caller.agent is None:
        return web.json_response(
            {"error": "agents_only", "message": "/mcp takes an agent's token"}, status=403
        )
    return caller


class LazyMcp:
    def __init__(
        self, asks: Service, tokens: TokenBook, host: str, public_url: str | None, kinds: Kinds
    ) -> None:
        self.asks, self.tokens, self.kinds = asks, tokens, kinds
        self.host, self.public_url = host, public_url
        self.endpoint: McpEndpoint | None = None
        self._running: AsyncIterator[None] | None = None
        self._loading = asyncio.Lock()
        self._closed = False

    async def handle(self, request: web.Request) -> web.StreamResponse:
        caller = caller_of(self.tokens, request)
        if isinstance(caller, web.Response):
            return caller
        endpoint = await self._started(request.app)
        return await endpoint.serve(request, caller)

    async def _started(self, app: web.Application) -> McpEndpoint:
        async with self._loading:
            if self._closed:
                raise web.HTTPServiceUnavailable(reason="aye is stopping")
            if self.endpoint is None:
                from ask_api.mcp.http import McpEndpoint, transport_security

                endpoint = McpEndpoint(self.asks, self.tokens,
                                       transport_security(self.host, self.public_url), self.kinds)
                running = endpoint.lifecycle(app)
                await running.__anext__()  # the session manager's task group is up
                self._running, self.endpoint = running, endpoint
        return self.endpoint

    async def lifecycle(self, _app: web.Application) -> AsyncIterator[None]:
        """A cleanup_ctx: on the way out, the session manager (if it was started) stops."""
        yield
        async with self._loading:
            self._closed = True
            if self._running is not None:
                with contextlib.suppress(StopAsyncIteration):
                    await self._running.__anext__()


MCP = web.AppKey("mcp", LazyMcp)


def setup(
    app: web.Application, asks: Service, tokens: TokenBook, *, host: str, kinds: Kinds,
    public_url: str | None = None,
) -> LazyMcp:
    """Serve `/mcp` from `app`, its tools' `work` made of `kinds`' variants. Call it after the
    app's own cleanup_ctx is added, so that the store is open before MCP sessions start and
    closed after they end."""
    mount = LazyMcp(asks, tokens, host, public_url, kinds)
    app[MCP] = mount
    app.router.add_route("*", MCP_PATH, mount.handle)
    app.cleanup_ctx.append(mount.lifecycle)
    return mount
