"""Running the process: start the app, bind, say where, and stop cleanly on SIGTERM/SIGINT.

Start-up is in this order so that each failure is one line naming its cause: the app's start
(the store: unreachable, refused, newer schema), then the bind (address in use), and only then
"listening on". On a stop signal parked agents are answered with their ask as it stands, new
connections are refused, sends in flight finish, one line is logged, and the process exits 0,
all within about 10 s.

Connections (bot/connections.py): at start the soft RLIMIT_NOFILE is raised toward the hard
limit (65,536 at most), and client connections are capped below it, leaving files for the
process's own; a request's headers and its body must each arrive within 30 s; a burst of
failed accepts logs one line a minute.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence

from aiohttp import web

from bot import logs
from bot.connections import (
    BODY_TIMEOUT_S,
    HEADER_TIMEOUT_S,
    AcceptErrors,
    CannotBind,
    Limits,
    serve,
)
from core.domain.logline import emit

log = logging.getLogger("aye")

# In-flight requests get this long once parked waits are released (they return at once).
SHUTDOWN_TIMEOUT_S = 3.0


class CannotListen(Exception):
    """The address cannot be bound; the message is one line for the operator."""


def cannot_listen(host: str, port: int, exc: OSError) -> CannotListen:
    why = os.strerror(exc.errno) if exc.errno else str(exc)
    if exc.errno == errno.EADDRINUSE:
        why += " (another aye serve? set AYE_PORT, or --port, to listen on another port)"
    return CannotListen(f"cannot listen on {host}:{port}: {why}")


def check_port(host: str, port: int) -> None:
    """CannotListen now when `host`:`port` is already taken, so that a second `aye serve`
    stops before it makes a token file or creates and migrates a store. (The real bind comes
    after the store opens; this only catches the common case early.)"""
    if port == 0:
        return
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return  # the real bind says what is wrong with the name
    family, kind, proto, _, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        # As asyncio's server sets it: a port left in TIME_WAIT is not "in use".
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise cannot_listen(host, port, exc) from None


async def run(
    app: web.Application, host: str, port: int, banner: Callable[[int], Sequence[str]],
    release: Callable[[], int], *, header_timeout: float = HEADER_TIMEOUT_S,
    body_timeout: float = BODY_TIMEOUT_S, max_connections: int | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT. `banner(port)` gives the start-up lines (printed once
    bound, with the port actually bound); `release()` lets parked agents go and says how many.
    `max_connections` defaults to the cap worked out from the file limit."""
    limits = Limits.build(header_timeout, body_timeout, max_connections)
    accept_errors = AcceptErrors()
    logging.getLogger("asyncio").addFilter(accept_errors)
    try:
        await _serve_until_stopped(app, host, port, limits, banner, release)
    finally:
        logging.getLogger("asyncio").removeFilter(accept_errors)


async def _serve_until_stopped(
    app: web.Application, host: str, port: int, limits: Limits,
    banner: Callable[[int], Sequence[str]], release: Callable[[], int],
) -> None:
    try:
        runner, site = await serve(app, host, port, limits, access_log=None, handle_signals=False,
                                   shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    except CannotBind as failed:
        # The errno says it plainly.
        raise cannot_listen(host, port, failed.error) from None
    for line in banner(site.port):
        logs.say(line)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        emit(log, "aye.stopping", parked=release())
    finally:
        await runner.cleanup()
