"""Running the process: start the app, bind, say where, and stop cleanly on SIGTERM/SIGINT.

Start-up is in this order so that each failure is one line naming its cause: the app's start
(the store: unreachable, refused, newer schema), then the bind (address in use), and only then
"listening on". On a stop signal parked agents are answered with their ask as it stands, new
connections are refused, sends in flight finish, one line is logged, and the process exits 0,
all within about 10 s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Sequence

from aiohttp import web

from bot.core.logs import emit

log = logging.getLogger("aye")

# In-flight requests get this long once parked waits are released (they return at once).
SHUTDOWN_TIMEOUT_S = 3.0


class CannotListen(Exception):
    """The address cannot be bound; the message is one line for the operator."""


async def run(
    app: web.Application, host: str, port: int, banner: Callable[[int], Sequence[str]],
    release: Callable[[], int],
) -> None:
    """Serve until SIGTERM or SIGINT. `banner(port)` gives the start-up lines (printed once
    bound, with the port actually bound); `release()` lets parked agents go and says how many."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False,
                           shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        # aiohttp rewords the error ("error while attempting to bind…"): the errno says it plainly.
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise CannotListen(f"cannot listen on {host}:{port}: {why}") from None
    for line in banner(_bound_port(site, port)):
        print(f"aye: {line}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        emit(log, "aye.stopping", parked=release())
    finally:
        await runner.cleanup()


def _bound_port(site: web.TCPSite, asked: int) -> int:
    server = site._server  # aiohttp keeps the listening server here; port 0 picks one
    sockets = getattr(server, "sockets", None) or []
    return int(sockets[0].getsockname()[1]) if sockets else asked
