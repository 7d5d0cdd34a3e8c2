"""`aye tui`'s live list: the operator's event stream (`GET /v1/events`), followed for as long
as the TUI runs. A stream that is cut (the server restarted, the network dropped) is opened
again with the last event's id in `Last-Event-ID`, so the server sends what was missed and the
list never needs a reload; until the server is back, the listener is told, once per attempt."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from bot.tui.api import Api

READ_TIMEOUT_S = 45.0  # the server sends a comment at least every 15 s
CONNECT_TIMEOUT_S = 10.0
RETRY_S = (0.5, 1.0, 2.0, 5.0)
MAX_FRAME_BYTES = 4 * 1024 * 1024  # an ask with the largest body is far below this


@dataclass(frozen=True)
class Frame:
    """One event: its id, its name (`ask.created`…) and the ask as the operator sees it."""

    id: str
    name: str
    ask: dict[str, Any]


class Listener(Protocol):
    def connected(self, resumed: bool) -> Awaitable[None]:
        """The stream is open; `resumed`: it carries on from an earlier event's id."""

    def event(self, frame: Frame) -> None: ...

    def lost(self, why: str, retry_in: float, attempt: int) -> None: ...


async def follow(api: Api, listener: Listener) -> None:
    """Follow the stream until cancelled, reconnecting with backoff."""
    last: str | None = None
    failures = 0
    while True:
        try:
            async for frame in _stream(api, last, listener):
                last = frame.id or last
                failures = 0
                listener.event(frame)
            why = "the server ended the event stream"
        except _Refused as exc:
            why = str(exc)
            failures = max(failures, len(RETRY_S) - 1)  # a refusal is not fixed in a second
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            why = _words(exc)
        failures += 1
        delay = RETRY_S[min(failures, len(RETRY_S)) - 1]
        listener.lost(why, delay, failures)
        await asyncio.sleep(delay)


class _Refused(Exception):
    pass


async def _stream(api: Api, last: str | None, listener: Listener) -> AsyncIterator[Frame]:
    headers = api.headers | {"Accept": "text/event-stream"}
    if last:
        headers["Last-Event-ID"] = last
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S,
                                    sock_read=READ_TIMEOUT_S)
    async with api.session().get(api.url + "/v1/events", headers=headers, timeout=timeout) as resp:
        if resp.status != 200:
            said = await _message(resp)
            raise _Refused(f"aye refused the event stream (HTTP {resp.status}: {said})")
        await listener.connected(last is not None)
        async for frame in frames(lines(resp.content.iter_any())):
            yield frame


async def _message(resp: aiohttp.ClientResponse) -> str:
    try:
        body = json.loads(await resp.read())
    except ValueError:
        return "no message"
    message = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(message or "no message").split())


async def lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """The stream's lines, however its bytes were cut into chunks (no line-length limit of
    the transport's: one event's data line can be as long as the ask it carries)."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        while (end := pending.find(b"\n")) >= 0:
            yield pending[:end].decode("utf-8", "replace").removesuffix("\r")
            pending = pending[end + 1:]
        if len(pending) > MAX_FRAME_BYTES:
            raise aiohttp.ClientPayloadError("an event stream line beyond any ask's size")


async def frames(source: AsyncIterable[str]) -> AsyncIterator[Frame]:
    """Server-Sent Events: fields until a blank line; comments (`: keep-alive`) and events
    whose data is not a JSON object are passed over."""
    fields: dict[str, str] = {}
    data: list[str] = []
    async for text in source:
        if text.startswith(":"):
            continue
        if text:
            name, _, value = text.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            else:
                fields[name] = value
            continue
        ask = _object("\n".join(data)) if data else None
        if ask is not None:
            yield Frame(fields.get("id", ""), fields.get("event", "message"), ask)
        fields, data = {}, []


def _object(text: str) -> dict[str, Any] | None:
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _words(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "the event stream went quiet"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).lower().split())
