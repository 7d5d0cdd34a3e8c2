"""A sensitive answer is erased once it has reached the agent, and only then: a wait whose client
went away before the answer (a client-side timeout, a connection closed, an MCP client that gave
up) erases nothing, and the agent's next read gets the value; the read after that shows it
erased.

aye serves here as `aye serve` does (bot.connections.serve: no handler cancellation, so a
parked wait whose client went is woken by the answer like any other), on a real socket, and the
clients are real: aiohttp, aye's own Python client, and the MCP SDK's client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx2
import pytest
from aiohttp import web
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ask_api.mcp.sent import carries
from ask_api.tokens import TokenBook
from aye_client import AyeClient
from bot.app import SERVICE, create_app
from bot.config import Config
from bot.connections import GuardedSite, Limits, serve
from core.app.service import Service
from tests.conftest import (
    AGENT_HEADERS,
    AGENT_TOKEN,
    OPERATOR_HEADERS,
    OPERATOR_TOKEN,
    eventually,
    settings_for,
)

SECRET = "correct-horse-battery"
ERASED = {"value": None, "option": None, "note": None, "erased": True}
SHORT = aiohttp.ClientTimeout(total=0.5)  # the client gives up long before the server's wait


@dataclass
class Served:
    """The app as `aye serve` runs it, and an HTTP session for the test's own calls."""

    app: web.Application
    site: GuardedSite
    url: str
    http: aiohttp.ClientSession

    @property
    def asks(self) -> Service:
        return self.app[SERVICE]

    async def call(self, method: str, path: str, headers: dict[str, str] | None = None,
                   **kwargs: Any) -> tuple[int, Any]:
        async with self.http.request(method, self.url + path, headers=headers or AGENT_HEADERS,
                                     **kwargs) as resp:
            return resp.status, await resp.json()

    async def sensitive_ask(self) -> dict[str, Any]:
        status, ask = await self.call("POST", "/v1/asks",
                                      json={"question": "The vault password?", "sensitive": True})
        assert status == 201, ask
        return ask  # type: ignore[no-any-return]

    async def answer(self, ask: dict[str, Any]) -> None:
        status, body = await self.call("POST", f"/v1/asks/{ask['id']}/answer",
                                       OPERATOR_HEADERS, json={"answer": SECRET})
        assert status == 200, body

    async def answer_of(self, ask: dict[str, Any]) -> dict[str, Any]:
        status, body = await self.call("GET", f"/v1/asks/{ask['id']}")
        assert status == 200, body
        return body["answer"]  # type: ignore[no-any-return]

    async def parked(self) -> None:
        await eventually(holds(lambda: len(self.asks.parts.signals.waiters) >= 1))

    async def clients_gone(self) -> None:
        """Until the server has seen every client connection but the test's own close."""
        await self.http.close()
        await eventually(holds(lambda: not self.site.guard.open))
        self.http = aiohttp.ClientSession()

    async def finished(self, route: str, count: int = 1) -> None:
        """Until `count` requests to `route` (its pattern) have been answered, as /metrics
        counts them: the handler has returned, whatever it did after waking."""
        async def done() -> bool:
            async with self.http.get(self.url + "/metrics", headers=OPERATOR_HEADERS) as resp:
                text = await resp.text()
            line = re.compile(r'^aye_http_requests_total\{[^}]*route="' + re.escape(route)
                              + r'"[^}]*\} (\S+)$', re.M)
            return sum(float(v) for v in line.findall(text)) >= count

        await eventually(done)


def holds(condition: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return condition()

    return check


@pytest.fixture
async def served(database_url: str) -> AsyncIterator[Served]:
    config = Config()
    app = create_app(settings_for(database_url), config,
                     TokenBook.build(config, OPERATOR_TOKEN, AGENT_TOKEN))
    runner, site = await serve(app, "127.0.0.1", 0, Limits.build(max_connections=64),
                               access_log=None, handle_signals=False)
    http = aiohttp.ClientSession()
    it = Served(app, site, f"http://127.0.0.1:{site.port}", http)
    try:
        yield it
    finally:
        await it.http.close()
        await runner.cleanup()


async def assert_read_once_more(served: Served, ask: dict[str, Any]) -> None:
    """The value is still there for the agent's next read, and that read erases it."""
    assert (await served.answer_of(ask))["value"] == SECRET
    assert await served.answer_of(ask) == ERASED
    status, view = await served.call("GET", f"/v1/asks/{ask['id']}", OPERATOR_HEADERS)
    assert status == 200
    events = [e["event"] for e in view["history"]]
    assert events.count("read") == 1 and view["history"][-1] == {**view["history"][-1],
                                                                   "erased": True}


# -- the HTTP waits ---------------------------------------------------------------------------


async def test_a_wait_whose_client_timed_out_erases_nothing(served: Served) -> None:
    ask = await served.sensitive_ask()
    parked = asyncio.create_task(served.call(
        "GET", f"/v1/asks/{ask['id']}/wait?timeout=60", timeout=SHORT))
    await served.parked()
    with pytest.raises(TimeoutError):
        await parked
    await served.clients_gone()
    await served.answer(ask)
    await served.finished("/v1/asks/{id}/wait")  # woke on the answer, and wrote to nobody
    await assert_read_once_more(served, ask)


async def test_a_wait_on_several_whose_client_went_erases_nothing(served: Served) -> None:
    ask = await served.sensitive_ask()
    other = await served.sensitive_ask()
    parked = asyncio.create_task(served.call(
        "POST", "/v1/asks/wait", json={"ids": [ask["id"], other["ref"]], "until": "any",
                                       "timeout": 60}))
    await served.parked()
    parked.cancel()  # the client closes its connection
    with contextlib.suppress(asyncio.CancelledError):
        await parked
    await served.clients_gone()
    await served.answer(ask)
    await served.finished("/v1/asks/wait")
    await assert_read_once_more(served, ask)
    # A wait whose client stayed reads (and erases) what it carried.
    await served.answer(other)
    status, body = await served.call("POST", "/v1/asks/wait", json={"ids": [other["id"]]})
    assert status == 200 and body["asks"][0]["answer"]["value"] == SECRET
    assert await served.answer_of(other) == ERASED


async def test_the_python_clients_wait_cut_by_wait_for_erases_nothing(served: Served) -> None:
    ask = await served.sensitive_ask()
    async with AyeClient(served.url, AGENT_TOKEN) as aye:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(aye.wait(ask["id"]), 0.5)
    await served.clients_gone()
    await served.answer(ask)
    await served.finished("/v1/asks/{id}/wait")
    async with AyeClient(served.url, AGENT_TOKEN) as aye:
        got = await aye.wait(ask["id"], timeout=5)
        assert got["answer"]["value"] == SECRET
        again = await aye.wait(ask["id"], timeout=5)
    assert again["answer"] == ERASED


# -- clients that close as soon as they have read ---------------------------------------------


def read_and_close(port: int, path: str, request_line: str, close: bool) -> bytes:
    """One request over a raw socket (in a thread, so it reads the instant the kernel has the
    bytes, not when the server's loop lets it), the whole response read, then the socket closed
    at once: as curl, a one-shot `requests.get` or an HTTP/1.0 client do."""
    head = (f"GET {path} {request_line}\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {AGENT_TOKEN}\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        headers, _, body = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?im)^content-length:\s*(\d+)", headers)[1])  # type: ignore[index]
        while len(body) < length:
            body += sock.recv(65536)
    return body


async def curl(port: int, path: str) -> bytes:
    process = await asyncio.create_subprocess_exec(
        "curl", "-sS", "--noproxy", "*", "-H", f"Authorization: Bearer {AGENT_TOKEN}",
        f"http://127.0.0.1:{port}{path}", stdout=asyncio.subprocess.PIPE)
    out, _ = await process.communicate()
    assert process.returncode == 0
    return out


CLOSING_CLIENTS: list[Callable[[int, str], Awaitable[bytes]]] = [
    lambda port, path: asyncio.to_thread(read_and_close, port, path, "HTTP/1.0", False),
    lambda port, path: asyncio.to_thread(read_and_close, port, path, "HTTP/1.1", True),
    lambda port, path: asyncio.to_thread(read_and_close, port, path, "HTTP/1.0", True),
]
if shutil.which("curl"):
    CLOSING_CLIENTS.append(curl)


@contextlib.asynccontextmanager
async def busy_loop() -> AsyncIterator[None]:
    """Other work on the server's loop, as on a server under load: every turn of the loop ends
    with a few milliseconds of it (a reader that is always ready, run after the turn's other
    callbacks, in a call that lets other threads and processes run meanwhile). A client that
    closes the instant it has read has then closed before the server's loop looks again."""
    loop = asyncio.get_running_loop()
    ready, other = socket.socketpair()
    other.send(b"x")  # never read: `ready` is readable at every turn
    loop.add_reader(ready, time.sleep, 0.003)
    try:
        yield
    finally:
        loop.remove_reader(ready)
        ready.close()
        other.close()


async def test_a_read_by_a_client_that_closes_at_once_erases(served: Served) -> None:
    """The response was handed in full to an open connection: it was delivered, though the
    client closed the instant it had read it. The next read shows the answer erased."""
    missed = []
    for round in range(2):
        for number, client in enumerate(CLOSING_CLIENTS):
            ask = await served.sensitive_ask()
            await served.answer(ask)
            async with busy_loop():
                got = json.loads(await client(served.site.port, f"/v1/asks/{ask['id']}"))
            assert got["answer"]["value"] == SECRET
            if await served.answer_of(ask) != ERASED:
                missed.append((round, number))
    assert missed == []


# -- MCP --------------------------------------------------------------------------------------


class CutProxy:
    """A TCP proxy in front of aye that can be cut, as a proxy or a network fails: every
    connection through it drops at once, and nothing more gets through (not even the courtesy
    `notifications/cancelled` an MCP client sends when a call is abandoned)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._pipe, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]
        await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))

    def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    writer.transport.abort()


@contextlib.asynccontextmanager
async def mcp_client(url: str, mode: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(url + "/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_mcp_wait_cut_off_from_its_client_erases_nothing(served: Served, mode: str) -> None:
    ask = await served.sensitive_ask()
    proxy = CutProxy(served.site.port)
    with contextlib.suppress(Exception):  # the client's own way of saying its call was cut
        async with mcp_client(await proxy.start(), mode) as client:
            waiting = asyncio.create_task(client.call_tool("wait", {"ref": ask["ref"],
                                                                    "wait_s": 60}))
            await served.parked()
            proxy.cut()
            await waiting
    await served.clients_gone()
    await served.answer(ask)
    # The tool woke on the answer (or was cancelled): its read, if any, is done or under way.
    await eventually(holds(lambda: len(served.asks.parts.signals.waiters) == 0))
    async with mcp_client(served.url, mode) as client:
        got = await client.call_tool("wait", {"ref": ask["ref"], "wait_s": 5})
        assert got.structured_content["answer"]["value"] == SECRET
        again = await client.call_tool("wait", {"ref": ask["ref"], "wait_s": 5})
    assert again.structured_content["answer"] == ERASED


def test_only_the_requests_own_successful_result_counts_as_carried() -> None:
    result = b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{}}}'
    assert carries(b"event: message\r\ndata: " + result + b"\r\n\r\n", 7)
    assert carries(result, 7)  # a JSON response, not a stream
    assert not carries(result, 8)
    assert not carries(b'data: {"jsonrpc":"2.0","id":7,"result":{"isError":true}}\n\n', 7)
    assert not carries(b'data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n', 7)
    assert not carries(b'data: {"jsonrpc":"2.0","id":7,"error":{"code":-32603}}\n\n', 7)
    assert not carries(b": ping\r\n\r\n", 7)
