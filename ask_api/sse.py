"""`GET /v1/events`: the event stream (Server-Sent Events) of the caller's asks, as it sees
them; resumed with Last-Event-ID from the store (events are kept a few hours), kept open with
a comment line every 15 s, ended when the process stops."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ask_api.tokens import Caller
from ask_api.views import ask_view, operator_view
from core.app.service import Event, Service, Subscriber
from core.domain import vocabulary

HEARTBEAT_S = 15.0
MAX_ID = 2**63 - 1


def last_event_id(request: web.Request) -> int | None:
    """The stream's resume point: the Last-Event-ID header (or `?last_event_id=`, for clients
    that cannot set headers); None when absent or not an id this stream gave."""
    text = request.headers.get("Last-Event-ID") or request.query.get("last_event_id") or ""
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or int(text) > MAX_ID:
        return None
    return int(text)


def shown(caller: Caller, ask: Any) -> dict[str, Any]:
    """The ask as this caller sees it, never with a sensitive value (an event is not a read:
    the agent reads the value with GET or wait, which erases it)."""
    view = operator_view(ask, None) if caller.is_operator else ask_view(ask)
    if ask.sensitive and ask.status == vocabulary.ANSWERED:
        view["answer"] = {"value": None, "option": None, "note": None, "hidden": True}
    return view


def frame(event: Event, caller: Caller) -> bytes:
    """The event as this caller's stream sends it. Every stream that sees one event gets the
    same bytes per audience (the operator's view, or its agent's), so each is encoded once and
    kept on the event, which the pump hands to every stream."""
    found = event.frames.get(caller.is_operator)
    if found is None:
        data = json.dumps(shown(caller, event.ask), ensure_ascii=False, separators=(",", ":"))
        found = f"id: {event.id}\nevent: {event.name}\ndata: {data}\n\n".encode()
        event.frames[caller.is_operator] = found
    return found


async def stream(
    request: web.Request, asks: Service, caller: Caller,
    alive: Callable[[], Awaitable[bool]] | None = None,
) -> web.StreamResponse:
    """The caller's events; `alive` (a stream opened with the inbox's session) is asked at
    every heartbeat, so a Sign out ends the stream too, on every process."""
    hub = asks.stream
    sub = hub.subscribe(caller.agent.name if caller.agent else None)
    try:
        resume = last_event_id(request)
        # Where it starts, before the client can know the stream is open: an event of a change
        # it makes once it does is newer, never taken for one the stream began after.
        sent = await hub.newest() if resume is None else resume
        hub.starts_at(sent)
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        })
        await response.prepare(request)
        await response.write(b"retry: 2000\n\n")
        while resume is not None:  # what it missed, from the store, until caught up
            missed = await hub.backlog(sub, sent)
            for event in missed:
                await response.write(frame(event, caller))
                sent = event.id
            if not missed:
                break
        await _live(response, sub, caller, sent, alive)
        return response
    except ConnectionResetError:  # the client went away
        return web.Response(status=499)
    finally:
        hub.unsubscribe(sub)


async def _live(
    response: web.StreamResponse, sub: Subscriber, caller: Caller, sent: int,
    alive: Callable[[], Awaitable[bool]] | None,
) -> None:
    while True:
        try:  # asyncio.timeout, not wait_for: a cancellation on the way out is never swallowed
            async with asyncio.timeout(HEARTBEAT_S):
                event = await sub.queue.get()
        except TimeoutError:
            if alive is not None and not await alive():
                return  # signed out (here or on another process): the session opens nothing
            await response.write(b": keep-alive\n\n")
            continue
        if event is None:
            return
        if event.id > sent:  # the backlog may have sent it already
            await response.write(frame(event, caller))
            sent = event.id
