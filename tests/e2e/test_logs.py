"""The process's log lines: one line per record whatever a value holds, and requests aiohttp
cannot parse logged as noise, not as errors."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.http_exceptions import BadStatusLine

from bot.logs import KeyValueFormatter, ProtocolNoise
from core.domain.logline import FIELDS
from tests.e2e.test_process import Server, start_server, stop

FORGERY = "2026-01-01T00:00:00Z error aye.asks ask.answered ref=q1 by=operator:local"
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e"]


def record(msg: str, *args: object, level: int = logging.INFO, name: str = "aye",
           exc: BaseException | None = None, **fields: object) -> logging.LogRecord:
    made = logging.LogRecord(name, level, __file__, 1, msg, args,
                             (type(exc), exc, None) if exc else None)
    setattr(made, FIELDS, fields)
    return made


def formatted(made: logging.LogRecord) -> str:
    return KeyValueFormatter().format(made)


@pytest.mark.parametrize("brk", BREAKS)
def test_a_line_break_in_a_value_cannot_forge_a_line(brk: str) -> None:
    line = formatted(record("ask.created", ref="q1", agent=f"bot{brk}{FORGERY}"))
    assert len(line.splitlines()) == 1, line
    assert brk not in line
    assert " ref=q1 " in line and "agent=\"bot\\" in line


@pytest.mark.parametrize("brk", BREAKS)
def test_a_line_break_in_the_message_cannot_forge_a_line(brk: str) -> None:
    line = formatted(record("Error handling request from %s", f"x{brk}{FORGERY}"))
    assert len(line.splitlines()) == 1, line
    assert brk not in line


def test_controls_are_escaped_visibly_and_plain_values_stay_bare() -> None:
    line = formatted(record("event\x1b[2K", ref="q1", a="x\ny", b="\u2028", c="\x1b]52;c;AA\x07",
                            d="\u202eevil", e="back\\slash", f=""))
    assert line.endswith(
        ' event\\x1b[2K ref=q1 a="x\\ny" b="\\u2028" c="\\x1b]52;c;AA\\x07" d="\\u202eevil"'
        ' e="back\\\\slash" f=""'
    ), line
    # A backslash sequence written as text and the control it spells are told apart.
    assert formatted(record("e", v="a\\nb")) != formatted(record("e", v="a\nb"))
    for c in "\x00\x07\x1b\x7f\x9b\u202e\u2066\u200f":
        assert c not in line and c not in formatted(record("e", v=f"x{c}y"))


def test_the_exception_class_is_kept_and_its_text_is_not() -> None:
    line = formatted(record("store.failed", level=logging.ERROR, exc=ValueError("token-abc")))
    assert line.endswith(" error aye store.failed error=ValueError") and "token-abc" not in line


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def garbage(name: str = "aiohttp.server") -> logging.LogRecord:
    return record("Error handling request from %s", "127.0.0.1", level=logging.ERROR, name=name,
                  exc=BadStatusLine("\x16\x03\x01"))


def test_malformed_requests_are_one_warning_a_minute_with_a_count() -> None:
    clock = Clock()
    noise = ProtocolNoise(clock=clock)
    first = garbage()
    assert noise.filter(first)
    assert first.levelno == logging.WARNING and first.exc_info is None
    assert formatted(first).endswith(
        " warning aiohttp.server http.malformed_requests count=1 error=BadStatusLine per=60s")
    passed = [noise.filter(garbage()) for _ in range(49)]
    assert not any(passed)
    clock.now += 59
    assert not noise.filter(garbage())
    clock.now += 1
    later = garbage()
    assert noise.filter(later)
    assert getattr(later, FIELDS)["count"] == 51


def test_malformed_requests_are_at_debug_where_debug_is_on() -> None:
    logger = logging.getLogger("aye.test.protocol")
    logger.setLevel(logging.DEBUG)
    try:
        noise = ProtocolNoise(clock=Clock())
        assert noise.filter(garbage(logger.name))
        again = garbage(logger.name)
        assert noise.filter(again) and again.levelno == logging.DEBUG and again.exc_info is None
    finally:
        logger.setLevel(logging.NOTSET)


def test_other_errors_pass_untouched() -> None:
    noise = ProtocolNoise(clock=Clock())
    for _ in range(3):
        bug = record("Unhandled exception", level=logging.ERROR, name="aiohttp.server",
                     exc=RuntimeError("bug"))
        assert noise.filter(bug) and bug.levelno == logging.ERROR and bug.exc_info is not None


# -- a real `aye serve` ----------------------------------------------------------------------

GARBAGE = [
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40,  # TLS to a plain port
    b"GET / HTTP/1.1\r\nHost\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"GET /\x00 HTTP/1.1\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX: \x01\r\n\r\n",
    b"garbage garbage\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n\x16\x03\x01garbage\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"X: " + b"a" * 70000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
]


def send(port: int, payload: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(payload)
            while sock.recv(65536):  # until aye answers and closes
                pass
        except OSError:
            pass


@pytest.fixture
async def server(tmp_path: Path, sqlite_url: str) -> AsyncIterator[Server]:
    started = await start_server(tmp_path, sqlite_url)
    try:
        yield started
    finally:
        stop(started)


async def test_garbage_requests_log_no_error_and_one_line(server: Server) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    for i in range(50):
        await asyncio.to_thread(send, port, GARBAGE[i % len(GARBAGE)])
    stop(server)
    lines = server.output().splitlines()
    noise = [line for line in lines if "aiohttp" in line or "malformed" in line]
    assert len(noise) <= 1, "\n".join(noise)
    assert [line for line in lines if "malformed_requests" in line], "\n".join(lines)
    assert not [line for line in lines if " error " in line or line.startswith(" ")], lines
    assert "Traceback" not in server.output()
