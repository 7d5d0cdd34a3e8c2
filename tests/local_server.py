"""What the fakes share: an aiohttp app served on 127.0.0.1, on a free port, for one test."""

from __future__ import annotations

import socket
from types import TracebackType
from typing import Any, Self

from aiohttp import web

SHUTDOWN_TIMEOUT_S = 1.0  # how long closing a fake waits on a handler still running


class LocalServer:
    """Subclasses build their app and call `_serve(app)` from `start()`."""

    name = "local server"

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    async def start(self) -> None:
        raise NotImplementedError

    async def _serve(self, app: web.Application, **runner_options: Any) -> None:
        # aiohttp's 60 s default would let one connection hold a test's teardown for a minute:
        # one accepted as the site stops (the app under test still calling the fake) is closed
        # before its handler first waits, so its request is dropped and nothing wakes the
        # handler; shutdown then waits out the whole timeout. A fake has nothing to finish.
        runner_options.setdefault("shutdown_timeout", SHUTDOWN_TIMEOUT_S)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, **runner_options)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = int(sock.getsockname()[1])
        try:
            await web.SockSite(runner, sock).start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._runner = runner

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError(f"the {self.name} is not started")
        return f"http://127.0.0.1:{self._port}"
