"""Client connections: how many at once, how long a request's headers and body may take, and
one log line at most for a burst of failed accepts.

- Headers: a connection has `header_timeout` from when it is made, and again from when a
  request's handler is done (keep-alive), to deliver a request's headers; else it is closed.
  Never while a handler runs or a response is still going out. (aiohttp's keep-alive timer
  does not start until a first request before 3.14.5, so a silent connection stayed forever.)
- Body: from the moment its headers arrive, a request's body has `body_timeout` to arrive in
  full. Past that, reading it raises BodyTimeout and the request is answered 408 (connection
  closed). A parked wait has no body: only the upload is bounded, never the handler's time.
- Count: at most `cap` client connections are open, the cap leaving files for the process's
  own (store, Slack, outgoing HTTP) and for sockets accepted but not yet closed. A connection
  past the cap takes the place of the longest-idle one (no request under way: a new one not
  yet sent its headers, or a keep-alive one between requests), as nginx reuses keep-alive
  connections; only when every slot holds a request under way is the new one closed at once.
  So thousands of idle connections cannot keep `/healthz` out, and accept() sees no EMFILE.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from ask_api.routes import ApiError
from core.domain.logline import FIELDS, emit

log = logging.getLogger("aye")

HEADER_TIMEOUT_S = 30.0
BODY_TIMEOUT_S = 30.0
# The soft file limit is raised toward the hard one, to this at most: an idle aiohttp
# connection costs memory too, and this is far above what agents and webhooks need.
FILES_WANTED = 65_536
# Files the process keeps for itself: store connections, Slack's websocket, outgoing HTTP.
RESERVE_MIN = 256
RESERVE_SHARE = 0.10
# asyncio accepts up to `backlog` sockets per loop pass, and a socket turned away still holds
# its file for about three passes: room for four passes of accepts keeps EMFILE from accept().
ACCEPT_BACKLOG = 128
ACCEPT_HEADROOM = 4 * ACCEPT_BACKLOG
# The message asyncio's exception handler logs when accept() fails for want of files.
ACCEPT_ERROR = "socket.accept() out of system resource"
LOG_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class Limits:
    cap: int  # at most this many client connections open at once
    header_timeout: float = HEADER_TIMEOUT_S
    body_timeout: float = BODY_TIMEOUT_S

    @classmethod
    def build(cls, header_timeout: float = HEADER_TIMEOUT_S, body_timeout: float = BODY_TIMEOUT_S,
              max_connections: int | None = None) -> Limits:
        """The limits, with the cap worked out from the file limit unless given."""
        cap = max_connections if max_connections is not None else connection_cap(raise_file_limit())
        return cls(cap, header_timeout, body_timeout)


def raise_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE toward the hard limit (FILES_WANTED at most), as servers
    commonly do (asyncio polls with epoll, so many files are fine); the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return FILES_WANTED
    want = FILES_WANTED if hard == resource.RLIM_INFINITY else min(hard, FILES_WANTED)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):  # a platform's own ceiling (macOS): keep what we have
            pass
    return soft


def connection_cap(files: int) -> int:
    """How many client connections a process allowed `files` open files may hold."""
    reserve = max(RESERVE_MIN, int(files * RESERVE_SHARE))
    return max(files // 4, files - reserve - ACCEPT_HEADROOM)


class BodyTimeout(asyncio.TimeoutError):
    """The request's body did not arrive in time. A TimeoutError, so that aiohttp's own
    draining of an unread body after the response ends quietly."""


class _Connection(asyncio.Protocol):
    """Stands in front of aiohttp's protocol for one connection: asks the guard for a slot
    when the connection is made, and makes aiohttp's protocol only once it has one."""

    def __init__(self, guard: Guard, server: web.Server) -> None:
        self.guard, self.server = guard, server
        self.transport: asyncio.Transport | None = None
        self.handler: asyncio.Protocol | None = None
        self.deadline: asyncio.TimerHandle | None = None  # for the next request's headers

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.guard.admit(self):
            transport.abort()
            return
        self.handler = self.server()
        self.guard.handlers[self.handler] = self
        self.handler.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        if self.handler is not None:
            self.handler.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.handler is not None:
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self.handler.eof_received() if self.handler is not None else None

    def pause_writing(self) -> None:
        if self.handler is not None:
            self.handler.pause_writing()

    def resume_writing(self) -> None:
        if self.handler is not None:
            self.handler.resume_writing()

    def idle(self) -> bool:
        """Nothing to lose by closing it: no response still being sent."""
        return self.transport is not None and self.transport.get_write_buffer_size() == 0

    def arm(self, seconds: float) -> None:
        self.disarm()
        self.deadline = asyncio.get_running_loop().call_later(seconds, self.guard.headers_late, self)

    def disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None


class Guard:
    """Counts the open connections, keeps the idle ones oldest first, and bounds each
    request's body in time (its middleware runs first, once a request's headers are in)."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits, self.clock = limits, clock
        self.open: set[_Connection] = set()
        self.waiting: OrderedDict[_Connection, None] = OrderedDict()  # no request under way
        self.handlers: dict[object, _Connection] = {}
        self.refused = self.evicted = 0
        self.told: float | None = None

    def admit(self, conn: _Connection) -> bool:
        if len(self.open) >= self.limits.cap and not self._evict():
            self.refused += 1
            self._tell_full()
            return False
        self.open.add(conn)
        self._rest(conn)
        return True

    def release(self, conn: _Connection) -> None:
        conn.disarm()
        self.open.discard(conn)
        self.waiting.pop(conn, None)
        if conn.handler is not None:
            self.handlers.pop(conn.handler, None)

    def _rest(self, conn: _Connection) -> None:
        """No request under way on `conn`: the next one's headers are due in time."""
        self.waiting[conn] = None
        conn.arm(self.limits.header_timeout)

    def _close(self, conn: _Connection) -> None:
        self.release(conn)
        assert conn.transport is not None
        conn.transport.close()

    def headers_late(self, conn: _Connection) -> None:
        conn.deadline = None
        if conn not in self.waiting:
            return  # a request began meanwhile
        if conn.idle():
            self._close(conn)
        else:
            conn.arm(self.limits.header_timeout)  # a response is still going out: not idle yet

    def _evict(self) -> bool:
        victim = next((c for c in self.waiting if c.idle()), None)
        if victim is None:
            return False
        self._close(victim)
        self.evicted += 1
        self._tell_full()
        return True

    def _tell_full(self) -> None:
        now = self.clock()
        if self.told is not None and now - self.told < LOG_EVERY_S:
            return
        emit(log, "http.connections_full", level=logging.WARNING, cap=self.limits.cap,
             refused=self.refused, evicted=self.evicted, per=f"{LOG_EVERY_S:g}s")
        self.told, self.refused, self.evicted = now, 0, 0

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        conn = self.handlers.get(request.protocol)
        if conn is not None:
            self.waiting.pop(conn, None)
            conn.disarm()
        late = self._watch_body(request)
        try:
            response = await handler(request)
        except BodyTimeout:
            return self._too_slow()
        finally:
            if late is not None:
                late.cancel()
            if conn is not None and conn in self.open:
                self._rest(conn)
        if isinstance(request.content.exception(), BodyTimeout) and not response.prepared:
            return self._too_slow()  # the handler caught it and answered something else
        return response

    def _watch_body(self, request: web.Request) -> asyncio.TimerHandle | None:
        content = request.content
        if content.is_eof():
            return None

        def check() -> None:
            if not content.is_eof():
                content.set_exception(BodyTimeout())

        return asyncio.get_running_loop().call_later(self.limits.body_timeout, check)

    def _too_slow(self) -> web.StreamResponse:
        within = f"the request body did not arrive within {self.limits.body_timeout:g} s"
        response = ApiError(408, "body_timeout", within).response()
        response.force_close()
        return response


class GuardedSite(web.BaseSite):
    """A TCP site whose connections go through `guard`."""

    def __init__(self, runner: web.BaseRunner, guard: Guard, host: str, port: int) -> None:
        super().__init__(runner, backlog=ACCEPT_BACKLOG)
        self.guard, self.host, self.asked = guard, host, port

    @property
    def name(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def port(self) -> int:
        sockets = getattr(self._server, "sockets", None) or []
        return int(sockets[0].getsockname()[1]) if sockets else self.asked

    async def start(self) -> None:
        await super().start()
        assert self._runner.server is not None
        factory = functools.partial(_Connection, self.guard, self._runner.server)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(factory, self.host, self.asked, backlog=self._backlog)


class CannotBind(Exception):
    """The listening socket could not be bound: `error` says why (the app is cleaned up)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


async def serve(app: web.Application, host: str, port: int, limits: Limits,
                **runner_options: Any) -> tuple[web.AppRunner, GuardedSite]:
    """Start `app` (its start-up errors raise as they are), then bind host:port behind a
    Guard (CannotBind)."""
    guard = Guard(limits)
    app.middlewares.insert(0, guard.middleware)  # first: it starts the body's clock
    runner = web.AppRunner(app, **runner_options)
    await runner.setup()
    site = GuardedSite(runner, guard, host, port)
    try:
        await site.start()
    except BaseException as exc:
        await runner.cleanup()
        if isinstance(exc, OSError):
            raise CannotBind(exc) from None
        raise
    return runner, site


class AcceptErrors(logging.Filter):
    """asyncio logs every failed accept() (Python 3.11 once per waiting connection, up to the
    backlog each pass): one line, `http.accept_errors count=N`, at most every `every` s."""

    def __init__(self, every: float = LOG_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every, self.clock = every, clock
        self.count = 0
        self.last: float | None = None
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith(ACCEPT_ERROR):
            return True
        with self.lock:
            self.count += 1
            now = self.clock()
            if self.last is not None and now - self.last < self.every:
                return False
            count, self.count, self.last = self.count, 0, now
        exc = record.exc_info[1] if record.exc_info else None
        code = getattr(exc, "errno", None)
        record.msg, record.args = "http.accept_errors", ()
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        setattr(record, FIELDS, {"count": count, "error": errno.errorcode.get(code or 0, type(exc).__name__),
                                 "per": f"{self.every:g}s"})
        return True
