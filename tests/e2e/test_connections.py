"""Client connections as a client meets them, over real sockets on 127.0.0.1: headers and body
each within their deadline, a parked wait never cut off, a cap on open connections that idle
ones cannot use to keep /healthz out, and one log line for a burst of failed accepts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ask_api.tokens import TokenBook
from bot.app import create_app
from bot.config import Config
from bot.connections import (
    ACCEPT_ERROR,
    AcceptErrors,
    GuardedSite,
    Limits,
    connection_cap,
    raise_file_limit,
    serve,
)
from bot.logs import KeyValueFormatter
from tests.conftest import AGENT_HEADERS, AGENT_TOKEN, OPERATOR_TOKEN, eventually, settings_for

DEADLINE = 0.5
SHORT = Limits(cap=100, header_timeout=DEADLINE, body_timeout=DEADLINE)
GET_HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


@dataclass
class Served:
    site: GuardedSite = field(init=False)
    bodies: list[bytes] = field(default_factory=list)
    parked: int = 0
    gate: asyncio.Event = field(default_factory=asyncio.Event)  # lets the parked go

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.site.port}"

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.site.port)


def _app(served: Served) -> web.Application:
    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def upload(request: web.Request) -> web.Response:
        body = await request.read()
        served.bodies.append(body)
        await asyncio.sleep(float(request.query.get("then_wait", "0")))  # a handler parking
        return web.json_response({"size": len(body)})

    async def wait(request: web.Request) -> web.Response:
        await asyncio.sleep(float(request.query["s"]))  # a long poll's own waiting
        return web.json_response({"waited": True})

    async def park(request: web.Request) -> web.Response:
        served.parked += 1
        await served.gate.wait()
        return web.json_response({"released": True})

    app = web.Application()
    app.add_routes([web.get("/healthz", healthz), web.post("/upload", upload),
                    web.get("/wait", wait), web.get("/park", park)])
    return app


@contextlib.asynccontextmanager
async def serving(limits: Limits = SHORT) -> AsyncIterator[Served]:
    served = Served()
    runner, served.site = await serve(_app(served), "127.0.0.1", 0, limits, access_log=None,
                                      handle_signals=False, shutdown_timeout=0.5)
    try:
        yield served
    finally:
        served.gate.set()
        await runner.cleanup()


async def closed_after(reader: asyncio.StreamReader, limit: float = 10) -> tuple[bytes, float]:
    """What the server sent before closing, and how long after the call it closed."""
    began = time.monotonic()
    try:
        got = await asyncio.wait_for(reader.read(), limit)
    except ConnectionResetError:
        got = b""
    return got, time.monotonic() - began


async def response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One HTTP/1.1 response with a Content-Length: its status and body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    lines = head.decode().split("\r\n")
    length = next(int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length"))
    return int(lines[0].split()[1]), await asyncio.wait_for(reader.readexactly(length), 10)


async def trickle(writer: asyncio.StreamWriter, pieces: list[bytes], until: asyncio.Task[Any]) -> None:
    """Send a piece every DEADLINE/5 s (the client's pace, not a wait) until `until` is done."""
    with contextlib.suppress(ConnectionError):
        for piece in pieces:
            if until.done():
                return
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(DEADLINE / 5)


# -- headers ---------------------------------------------------------------------------------


async def test_half_a_request_line_is_closed_at_the_header_deadline() -> None:
    async with serving() as served:
        reader, writer = await served.connect()
        writer.write(b"GET /heal")
        got, took = await closed_after(reader)
        writer.close()
    assert got == b""
    assert DEADLINE * 0.9 <= took < DEADLINE + 2


async def test_headers_trickled_a_line_at_a_time_are_closed_at_the_deadline() -> None:
    """Slowloris: bytes keep coming, but the headers never end; the deadline is for all of them."""
    async with serving() as served:
        reader, writer = await served.connect()
        began = time.monotonic()
        closed = asyncio.create_task(closed_after(reader))
        writer.write(b"GET /healthz HTTP/1.1\r\n")
        await trickle(writer, [f"X-Slow-{n}: 1\r\n".encode() for n in range(40)], closed)
        got, _ = await closed
        writer.close()
    assert got == b""
    assert DEADLINE * 0.9 <= time.monotonic() - began < DEADLINE + 2


async def test_a_keep_alive_connection_serves_a_second_request_then_idles_out() -> None:
    async with serving() as served:
        reader, writer = await served.connect()
        writer.write(GET_HEALTHZ)
        first = await response(reader)
        writer.write(GET_HEALTHZ)
        second = await response(reader)
        got, took = await closed_after(reader)  # the header deadline runs again from the response
        writer.close()
    assert first == second == (200, b'{"ok": true}')
    assert got == b"" and DEADLINE * 0.9 <= took < DEADLINE + 2


# -- bodies ----------------------------------------------------------------------------------


async def test_a_body_that_stalls_is_408_and_the_handler_never_has_it() -> None:
    async with serving() as served:
        reader, writer = await served.connect()
        writer.write(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10)
        began = time.monotonic()
        got, _ = await closed_after(reader)
        took = time.monotonic() - began
        writer.close()
    assert got.startswith(b"HTTP/1.1 408 ")
    said = b'{"error": "body_timeout", "message": "the request body did not arrive within 0.5 s"}'
    assert got.endswith(said)
    assert DEADLINE * 0.9 <= took < DEADLINE + 2
    assert served.bodies == []


async def test_a_body_trickled_a_byte_at_a_time_is_408_at_the_deadline() -> None:
    async with serving() as served:
        reader, writer = await served.connect()
        writer.write(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        began = time.monotonic()
        answered = asyncio.create_task(closed_after(reader))
        await trickle(writer, [b"x"] * 100, answered)
        got, _ = await answered
        writer.close()
    # 408, or a reset: bytes still coming when the server closes make the kernel reset the
    # connection, which may drop the 408 before the client reads it (Go's servers do the same).
    assert got == b"" or got.startswith(b"HTTP/1.1 408 ")
    assert DEADLINE * 0.9 <= time.monotonic() - began < DEADLINE + 2
    assert served.bodies == []


# -- a handler's own time --------------------------------------------------------------------


async def test_a_long_poll_outlasting_both_deadlines_is_not_cut_off() -> None:
    async with serving() as served, aiohttp.ClientSession() as session:
        async def call(method: str, path: str, body: bytes | None = None) -> tuple[int, object]:
            async with session.request(method, served.url + path, data=body) as resp:
                return resp.status, await resp.json()

        began = time.monotonic()
        answers = await asyncio.gather(
            call("GET", f"/wait?s={DEADLINE + 2}"),
            call("POST", f"/upload?then_wait={DEADLINE + 2}", b"z" * 100_000),
        )
    assert list(answers) == [(200, {"waited": True}), (200, {"size": 100_000})]
    assert time.monotonic() - began >= DEADLINE + 2


async def test_in_aye_itself_a_stalled_ask_is_408_and_a_parked_wait_is_answered(tmp_path: Path) -> None:
    """The real app's middlewares (auth, errors) behind the guard, on SQLite."""
    config = Config()
    app = create_app(settings_for(f"sqlite+aiosqlite:///{tmp_path}/aye.db"), config,
                     TokenBook.build(config, OPERATOR_TOKEN, AGENT_TOKEN))
    runner, site = await serve(app, "127.0.0.1", 0, SHORT, access_log=None, shutdown_timeout=0.5)
    url = f"http://127.0.0.1:{site.port}"
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        writer.write(f"POST /v1/asks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {AGENT_TOKEN}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode())
        stalled, _ = await closed_after(reader)
        writer.close()
        async with aiohttp.ClientSession(headers=AGENT_HEADERS) as session:
            async with session.post(url + "/v1/asks", json={"question": "ship?"}) as resp:
                made, ask = resp.status, await resp.json()
            began = time.monotonic()
            async with session.get(url + f"/v1/asks/{ask['id']}/wait?timeout=3") as resp:
                waited = (resp.status, (await resp.json())["status"])
            took = time.monotonic() - began
    finally:
        await runner.cleanup()
    assert stalled.startswith(b"HTTP/1.1 408 ") and b'"error": "body_timeout"' in stalled
    assert made == 201  # a whole body in time is read as ever
    assert waited == (200, "open") and took >= 3


# -- the cap ---------------------------------------------------------------------------------


async def test_past_the_cap_idle_connections_give_way_and_healthz_answers() -> None:
    """200 idle connections against a cap of 50: the server holds 50, the oldest idle ones
    are closed at once (long before any deadline), and /healthz still answers."""
    async with serving(Limits(cap=50, header_timeout=30, body_timeout=30)) as served:
        idle = [await served.connect() for _ in range(200)]
        reads = [asyncio.create_task(closed_after(r, 30)) for r, _ in idle]
        began = time.monotonic()
        while sum(t.done() for t in reads) < 150:
            await asyncio.wait([t for t in reads if not t.done()], timeout=10,
                               return_when=asyncio.FIRST_COMPLETED)
            assert time.monotonic() - began < 10, "connections past the cap were not closed"
        held = len(served.site.guard.open)
        async with aiohttp.ClientSession() as session, session.get(served.url + "/healthz") as resp:
            health = resp.status
        closed = [t.result()[0] for t in reads if t.done()]
        newest_open = all(not t.done() for t in reads[151:])
        for task in reads:
            task.cancel()
        for _, writer in idle:
            writer.close()
    assert (held, health) == (50, 200)
    assert len(closed) >= 150 and set(closed) == {b""}
    assert newest_open, "a newer connection was closed before the oldest idle ones"


async def test_when_every_slot_has_a_request_under_way_a_new_connection_is_closed_at_once() -> None:
    async with serving(Limits(cap=5, header_timeout=30, body_timeout=30)) as served:
        busy = [await served.connect() for _ in range(5)]
        for _, writer in busy:
            writer.write(b"GET /park HTTP/1.1\r\nHost: x\r\n\r\n")

        async def all_parked() -> bool:
            return served.parked == 5

        await eventually(all_parked)
        reader, writer = await served.connect()
        writer.write(GET_HEALTHZ)
        refused, took = await closed_after(reader)
        writer.close()
        served.gate.set()
        answers = [await response(r) for r, _ in busy]
        for _, w in busy:
            w.close()
    assert refused == b"" and took < 2
    assert answers == [(200, b'{"released": true}')] * 5


def test_the_cap_leaves_files_for_the_process_and_for_accepts_in_flight() -> None:
    assert connection_cap(20_000) == 20_000 - 2_000 - 512
    assert connection_cap(65_536) == 65_536 - 6_553 - 512
    assert connection_cap(1_024) == 256  # a small limit still serves a quarter of it


# -- accept errors ---------------------------------------------------------------------------


def _accept_error() -> logging.LogRecord:
    """As asyncio's exception handler logs it, with the exception."""
    exc_info = (OSError, OSError(24, "Too many open files"), None)
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1,
                             ACCEPT_ERROR + "\nsocket: <socket>", (), exc_info)


def test_a_burst_of_accept_errors_is_one_line_a_window_with_its_count() -> None:
    now = [0.0]
    noise = AcceptErrors(every=60, clock=lambda: now[0])
    shown = []
    for n in range(1000):
        now[0] = n * 0.1  # 1,000 errors over 100 s
        record = _accept_error()
        if noise.filter(record):
            shown.append(KeyValueFormatter().format(record))
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "Task exception", (), None)
    assert noise.filter(other) and other.msg == "Task exception"
    assert [line.split(" ", 1)[1] for line in shown] == [
        "error asyncio http.accept_errors count=1 error=EMFILE per=60s",
        "error asyncio http.accept_errors count=600 error=EMFILE per=60s",
    ]


# -- a whole process under a flood -------------------------------------------------------------

SERVER = """
import asyncio, resource, sys
from aiohttp import web
from bot import logs
from bot.run import run
files, cap = int(sys.argv[1]), sys.argv[2]
resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
logs.setup()
async def healthz(request):
    return web.json_response({"ok": True})
app = web.Application()
app.router.add_get("/healthz", healthz)
asyncio.run(run(app, "127.0.0.1", 0, lambda port: [str(port)], lambda: 0, header_timeout=30,
                max_connections=None if cap == "auto" else int(cap)))
"""


async def _flood(files: int, cap: str, count: int, wait: float = 5) -> tuple[list[int], str]:
    """Hold `count` idle connections to a process limited to `files` files, asking /healthz as
    they come: the /healthz statuses (0: no answer) and what the process logged."""
    if raise_file_limit() < count + 256:
        pytest.skip(f"this test process may not open {count} connections")
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(files), cap],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held: list[asyncio.StreamWriter] = []
    statuses: list[int] = []
    try:
        assert proc.stdout is not None
        port = int((await asyncio.to_thread(proc.stdout.readline)).split()[-1])
        timeout = aiohttp.ClientTimeout(total=wait)
        # A new connection for each /healthz: one kept alive would prove nothing.
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            for _ in range(count // 250):
                opened = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port)
                                                for _ in range(250)), return_exceptions=True)
                held += [o[1] for o in opened if isinstance(o, tuple)]
                statuses.append(await _health(session, f"http://127.0.0.1:{port}/healthz"))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=20)
        for writer in held:
            writer.close()
    return statuses, err.decode()


async def _health(session: aiohttp.ClientSession, url: str) -> int:
    try:
        async with session.get(url) as resp:
            return resp.status
    except (TimeoutError, aiohttp.ClientError):
        return 0


async def test_a_flood_of_idle_connections_leaves_healthz_answering_and_accept_quiet() -> None:
    """3,000 idle connections to a process allowed 1,200 files (cap 432): /healthz answers
    every time, accept() never runs out of files, and the cap is said once."""
    statuses, err = await _flood(1_200, "auto", 3_000)
    assert statuses == [200] * 12
    assert ACCEPT_ERROR not in err and "accept_errors" not in err
    full = [line for line in err.splitlines() if "http.connections_full" in line]
    assert len(full) == 1 and "cap=432" in full[0], err


async def test_without_the_cap_accept_errors_are_one_line_not_thousands() -> None:
    """The same flood with no cap below the file limit: accept() fails again and again,
    and the log says so once with the count."""
    statuses, err = await _flood(400, "100000", 500, wait=1)
    lines = [line for line in err.splitlines() if "accept" in line]
    assert len(lines) == 1 and "http.accept_errors count=" in lines[0] and "EMFILE" in lines[0], err
    assert ACCEPT_ERROR not in err
    assert 0 in statuses  # what the cap is for
