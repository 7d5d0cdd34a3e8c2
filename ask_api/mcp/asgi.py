"""A one-route bridge from aiohttp to an ASGI application (the MCP SDK's streamable-HTTP
session manager, which exists only as ASGI): the request as an ASGI `http` scope, its body as
`http.request` messages, the response written back as it is sent (so each SSE event reaches the
client at once), and `http.disconnect` once the client has gone. An application that must know
whether its response reached the client (a sensitive answer is erased only then) asks the
scope's `Sent` (SENT)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from starlette.types import ASGIApp, Message, Scope

from ask_api.response_reached import end_whole

log = logging.getLogger("aye.mcp")

# aiohttp frames the response itself: these headers of the application's are its to set.
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding"})
# aiohttp tells a handler nothing when its client goes (unless handler cancellation is on for
# the whole server), so a streaming response looks at the connection this often.
GONE_CHECK_S = 1.0
SENT = "aye.sent"  # the ASGI scope's key for the exchange's Sent


# Applications still finishing after their client went (see serve()): kept from the collector.
_finishing: set[asyncio.Task[None]] = set()


async def serve(
    app: ASGIApp, request: web.Request, extra: Mapping[str, Any], head: bytes = b""
) -> web.StreamResponse:
    """Run `app` for `request`, its scope carrying `extra` (who is calling), and return the
    response it streamed. `head`: the start of the body, already read from the request.

    The application runs in a task of its own: aiohttp may cancel a handler whose client has
    gone (test servers do, and so does a server with handler_cancellation), but an ASGI
    application is never cancelled for that; it is told (`http.disconnect`) and finishes its
    own way. The SDK's session manager depends on it: a session whose opening request was
    cancelled after its response went out is thrown away."""
    exchange = Exchange(request, head)
    scope = scope_of(request, {**extra, SENT: exchange.sent})

    async def run() -> None:
        await app(scope, exchange.receive, exchange.send)

    running = asyncio.create_task(run())
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        exchange.done = True
        exchange.sent.settle(False)
        if not running.done():
            _finishing.add(running)
            running.add_done_callback(_finished)
        raise
    return await exchange.finish()


def _finished(task: asyncio.Task[None]) -> None:
    _finishing.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.debug("mcp: a request finished after its client went error=%s", type(task.exception()).__name__)


def scope_of(request: web.Request, extra: Mapping[str, Any]) -> Scope:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport else None
    local = transport.get_extra_info("sockname") if transport else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.rel_url.raw_path.encode("ascii", "replace"),
        "query_string": request.rel_url.raw_query_string.encode("ascii", "replace"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(local[:2]) if isinstance(local, tuple) else None,
        "state": {},
        **extra,
    }


@dataclass(slots=True)
class _Listener:
    carries: Callable[[bytes], bool]
    told: Callable[[bool], None]
    written: bool = False  # a chunk it carries went to the connection


class Sent:
    """Whether something the application sent reached the client, for one exchange.

    `when(carries, told)`: `carries(chunk)` is asked of each chunk of the body as it is written
    to the connection; once the response has ended, `told(True)` if a chunk it carries was
    written and the response then ended in full on a connection still open, `told(False)`
    otherwise (the client went; or the response had already ended)."""

    def __init__(self) -> None:
        self._listening: list[_Listener] = []
        self._settled = False

    def when(self, carries: Callable[[bytes], bool], told: Callable[[bool], None]) -> None:
        if self._settled:
            told(False)
        else:
            self._listening.append(_Listener(carries, told))

    def wrote(self, chunk: bytes) -> None:
        for listener in self._listening:
            if not listener.written and listener.carries(chunk):
                listener.written = True

    def settle(self, whole: bool) -> None:
        if self._settled:
            return
        self._settled = True
        listening, self._listening = self._listening, []
        for listener in listening:
            try:
                listener.told(whole and listener.written)
            except Exception:  # one listener's failure must not cost the others their news
                log.exception("mcp: a sent-listener failed")


class Exchange:
    """One request and its response, as ASGI's `receive` and `send`."""

    def __init__(self, request: web.Request, head: bytes = b"") -> None:
        self.request = request
        self.head = head  # the start of the body, read before the application ran
        self.response: web.StreamResponse | None = None
        self.body_read = False
        self.done = False
        self.sent = Sent()

    async def receive(self) -> Message:
        if not self.body_read:
            chunk, self.head = self.head, b""
            chunk = chunk or await self.request.content.readany()
            self.body_read = not chunk or self.request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not self.body_read}
        await self._gone()
        return {"type": "http.disconnect"}

    async def _gone(self) -> None:
        while not self.done:
            transport = self.request.transport
            if transport is None or transport.is_closing():
                return
            await asyncio.sleep(GONE_CHECK_S)

    async def send(self, message: Message) -> None:
        if self.done:
            return
        if message["type"] == "http.response.start":
            self.response = response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", ()):
                if name.lower() not in HOP_BY_HOP:
                    response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            # Headers go at once: an SSE stream's client is waiting for them.
            await self._write(response, b"", more=True, prepare=True)
        elif message["type"] == "http.response.body" and self.response is not None:
            await self._write(self.response, message.get("body", b""), message.get("more_body", False))

    async def _write(
        self, response: web.StreamResponse, body: bytes, more: bool, prepare: bool = False
    ) -> None:
        try:
            if prepare:
                await response.prepare(self.request)
            if body:
                await response.write(body)
                self.sent.wrote(body)
            if not more:
                self.done = True
                self.sent.settle(await end_whole(self.request, response))
        except ConnectionError:
            # The client has gone: the rest is dropped, and the application's next receive()
            # says so (a tool waiting on an ask goes on; the ask stays open).
            self.done = True
            self.sent.settle(False)

    async def finish(self) -> web.StreamResponse:
        if self.response is None:
            self.sent.settle(False)
            log.warning("mcp: the application sent no response path=%s", self.request.path)
            return web.json_response(
                {"error": "internal", "message": "no response"}, status=500
            )
        if not self.done:
            await self._write(self.response, b"", more=False)
        self.sent.settle(False)  # ended without its last write (the client went): nothing reached
        return self.response
