"""`aye tui`'s event stream when the server goes away: against a scripted stream, the second
connection resumes with the last event's id in Last-Event-ID; against a real `aye serve`
stopped and started again, the TUI says in one line that it cannot reach it, does not crash,
and is live again (with what was asked meanwhile) once the server is back."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from aiohttp import web
from textual.widgets import Static

from bot.tui.api import Api
from bot.tui.events import Frame, follow
from tests.e2e.test_process import free_port, start_server, stop
from tests.e2e.test_tui import ask, inbox, listed, tui, until
from tests.local_server import LocalServer


class CutStream(LocalServer):
    """Sends one event and ends the stream; records each connection's Last-Event-ID."""

    name = "scripted event stream"

    def __init__(self) -> None:
        super().__init__()
        self.resumed_from: list[str | None] = []

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/v1/events", self.events)
        await self._serve(app)

    async def events(self, request: web.Request) -> web.StreamResponse:
        self.resumed_from.append(request.headers.get("Last-Event-ID"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        number = len(self.resumed_from) * 10
        await response.write(b"retry: 2000\n\n: keep-alive\n\n")
        await response.write(f"id: {number}\nevent: ask.created\ndata: ".encode())
        await response.write(f'{{"id": "a{number}", "ref": "q{number}"}}\n\n'.encode())
        return response  # ended: the client must come back, from event `number`


class Recorder:
    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.resumes: list[bool] = []
        self.losses: list[str] = []
        self.changed = asyncio.Event()

    async def connected(self, resumed: bool) -> None:
        self.resumes.append(resumed)

    def event(self, frame: Frame) -> None:
        self.frames.append(frame)
        self.changed.set()

    def lost(self, why: str, retry_in: float, attempt: int) -> None:
        self.losses.append(why)


async def test_a_cut_stream_is_resumed_from_the_last_event_id() -> None:
    async with CutStream() as stream:
        api, seen = Api(stream.base_url, "op"), Recorder()
        following = asyncio.ensure_future(follow(api, seen))
        try:
            while len(seen.frames) < 3:
                seen.changed.clear()
                await asyncio.wait_for(seen.changed.wait(), 10)
        finally:
            following.cancel()
            await api.close()
    assert stream.resumed_from[:3] == [None, "10", "20"]
    assert [f.id for f in seen.frames[:3]] == ["10", "20", "30"]
    assert [f.ask["ref"] for f in seen.frames[:3]] == ["q10", "q20", "q30"]
    assert seen.resumes[:3] == [False, True, True]
    assert seen.losses[0] == "the server ended the event stream"


async def test_when_the_server_goes_away_it_says_so_and_comes_back_live(
    tmp_path: Path, sqlite_url: str
) -> None:
    url, port = sqlite_url, free_port()
    server = await start_server(tmp_path, url, port=port)
    try:
        async with tui(server) as (app, pilot):
            status = lambda: str(inbox(app).query_one("#status", Static).content)  # noqa: E731
            stop(server)
            await until(pilot, lambda: "cannot be reached" in status(), "the server gone")
            assert "\n" not in status() and status().startswith(f"aye at {server.url} ")
            server = await start_server(tmp_path, url, port=port)
            meanwhile = await ask(server, question="Asked while the TUI was away?")
            await until(pilot, lambda: listed(app, meanwhile["ref"]), "the ask asked meanwhile")
            await until(pilot, lambda: status().startswith("live"), "live again")
            assert app.is_running
    finally:
        stop(server, signal.SIGKILL)
