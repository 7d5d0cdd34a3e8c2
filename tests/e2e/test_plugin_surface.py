"""A new surface is a new plug-in and nothing else: a tiny `test:` surface, written entirely
here, brings its own settings, responder kind and id pattern, work variant, config section and
/healthz entry, and is run by the unchanged core through the real HTTP API and outbox loop."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

import bot.surfaces
from bot.app import describe
from bot.config import AyeConfig, config_model
from core.app.ports import CLOSE, POST, AnswerResult, AskRow, Surface
from core.app.service import Said as OnWork
from core.app.service import Service, SurfacePlugin
from core.domain import kinds
from core.domain.answering import Attempt
from core.domain.kinds import SurfaceKind
from core.domain.responders import Responder
from tests.conftest import Aye, StartAye, settings_for

NAME = "test"
TOKEN_ENV = "TEST_SURFACE_TOKEN"
# Lower-case handles only: `test:ALICE` is not a test responder.
HANDLE = re.compile(r"^[a-z][a-z0-9-]{0,38}$")
WAIT = 5.0  # seconds: the bound on every wait for something the loops do


class RoomWork(BaseModel):
    """`work: {"test": {"room": "r1"}}`: the room an agent works in."""

    model_config = ConfigDict(extra="forbid")

    room: Annotated[StrictStr, Field(pattern=r"^r[0-9]{1,6}$")]


class RoomSection(BaseModel):
    """The config file's `[test]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lobby: str = "r0"


@dataclass(frozen=True, slots=True, repr=False)
class RoomSettings:
    token: str


def read_settings(env: Mapping[str, str]) -> RoomSettings | None:
    token = env.get(TOKEN_ENV, "").strip()
    return RoomSettings(token) if token else None


def describe_settings(settings: RoomSettings | None) -> str:
    return f"{NAME}: off (set {TOKEN_ENV})" if settings is None else f"{NAME}: on"


@dataclass(frozen=True, slots=True)
class Said:
    """Something written in a room (core.domain.answering.Reply), never naming an ask by ref."""

    text: str
    ref: str | None = None
    ref_answer: str | None = None


class RoomSurface:
    """The surface: records what the core hands it, and answers through the core."""

    name = NAME

    def __init__(self, settings: RoomSettings, section: RoomSection, asks: Service) -> None:
        self.settings = settings
        self.section = section
        self.asks = asks
        self.delivered: list[tuple[str, str]] = []
        self.changed = asyncio.Event()
        self.started = False

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return responder.kind == NAME

    def wants(self, ask: AskRow, action: str) -> bool:
        return any(r.partition(":")[0] == NAME for r in ask.responders)

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        self.delivered.append((ask.id, action))
        self.changed.set()

    def health(self) -> dict[str, Any]:
        posts = sum(1 for _, action in self.delivered if action == POST)
        return {"on": True, "posts": posts, "lobby": self.section.lobby, "started": self.started}

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/test-surface/say", self._say)]

    async def start(self, session: Any) -> None:
        self.started = True

    async def close(self) -> None:
        self.started = False

    # -- what people do here ----------------------------------------------------------------

    async def press(self, ask_id: str, who: str, text: str) -> AnswerResult:
        """A button on one ask."""
        ask = await self.asks.find(ask_id)
        assert ask is not None
        return await self.asks.answer(ask, Attempt(Responder(NAME, who), NAME), text)

    async def say(self, room: str, who: str, text: str) -> AnswerResult:
        """A line written in a room: the core works out which ask it answers."""
        key = f"{NAME}:{room}"
        said = OnWork(key, Responder(NAME, who), NAME)
        return await self.asks.answer_on_work(said, Said(text), None)

    async def _say(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.settings.token}":
            return web.json_response({"error": "unauthorized"}, status=401)
        body = await request.json()
        result = await self.say(body["room"], body["who"], body["text"])
        return web.json_response({"taken": result.taken, "reason": result.reason})

    async def seen(self, ask_id: str, action: str) -> None:
        """Until the outbox loop has handed this ask's `action` to the surface."""
        while (ask_id, action) not in self.delivered:
            self.changed.clear()
            await self.changed.wait()


def build(settings: RoomSettings, section: BaseModel | None, asks: Service) -> Surface:
    assert isinstance(section, RoomSection)
    return RoomSurface(settings, section, asks)


KIND = SurfaceKind(
    NAME, HANDLE, work_model=RoomWork, work_key=lambda work: str(work["room"]),
    config_model=RoomSection,
)
PLUGIN = SurfacePlugin(KIND, read_settings, describe_settings, build)
PLUGINS = [*bot.surfaces.PLUGINS, PLUGIN]
Config = config_model(PLUGINS)
ENV = {TOKEN_ENV: "t"}


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The `test` kind is known for this test only: the registry is put back afterwards, so
    no other test's work model or responder parsing sees it."""
    monkeypatch.setattr(kinds, "_KINDS", dict(kinds._KINDS))
    bot.surfaces.register([PLUGIN])  # what create_app does, needed before a config is read
    yield


def config(**sections: Any) -> AyeConfig:
    return Config.model_validate({"defaults": {"responders": ["test:alice"]}, "test": {"lobby": "r9"}}
                                 | sections)


def surface_of(aye: Aye) -> RoomSurface:
    surface = aye.asks.parts.places[NAME]
    assert isinstance(surface, RoomSurface)
    return surface


@pytest.fixture
async def rooms(start_aye: StartAye, database_url: str) -> Aye:
    return await start_aye(database_url, config(), env=ENV, plugins=PLUGINS)


async def healthz(aye: Aye) -> dict[str, Any]:
    resp = await aye.client.get("/healthz")
    assert resp.status == 200
    return await resp.json()  # type: ignore[no-any-return]


async def test_healthz_shows_the_surface_from_itself(rooms: Aye) -> None:
    body = await healthz(rooms)
    assert body["surfaces"] == {
        "slack": {"on": False},
        "github": {"on": False},
        "email": {"on": False},
        "test": {"on": True, "posts": 0, "lobby": "r9", "started": True},  # its own section
    }


def test_the_start_up_line_comes_from_the_surface() -> None:
    on = describe(settings_for("sqlite+aiosqlite:///unused.db", **ENV), PLUGINS)
    off = describe(settings_for("sqlite+aiosqlite:///unused.db"), PLUGINS)
    assert on[-1] == "test: on" and off[-1] == f"test: off (set {TOKEN_ENV})"


async def test_the_work_variant_round_trips(rooms: Aye) -> None:
    ask = await rooms.ask(question="Ship it?", work={"test": {"room": "r1"}})
    assert ask["work"] == {"test": {"room": "r1"}}
    assert (await rooms.get(ask["id"]))["work"] == {"test": {"room": "r1"}}
    # Keyed by the surface's own work_key: the room's open asks are found by the core.
    assert [a.id for a in await rooms.asks.open_on_work("test:r1")] == [ask["id"]]


@pytest.mark.parametrize(
    ("work", "field"),
    [
        ({"test": {"room": "lobby"}}, "work.test.room"),
        ({"test": {"room": 1}}, "work.test.room"),
        ({"test": {}}, "work.test.room"),
        ({"test": {"room": "r1", "floor": 2}}, "work.test.floor"),
        ({"test": {"room": "r1"}, "github": {"repo": "o/r", "number": 1}}, "work"),
    ],
)
async def test_an_invalid_work_names_the_field(rooms: Aye, work: Any, field: str) -> None:
    resp = await rooms.client.post(
        "/v1/asks", json={"question": "q", "work": work}, headers=rooms.headers
    )
    body = await resp.json()
    assert (resp.status, body["error"], body["field"]) == (422, "invalid_field", field), body


async def test_post_then_an_answer_in_the_room_wakes_the_agent(rooms: Aye) -> None:
    surface = surface_of(rooms)
    ask = await rooms.ask(question="Ship it?", options=["yes", "no"], work={"test": {"room": "r1"}})
    await asyncio.wait_for(surface.seen(ask["id"], POST), WAIT)  # through the real outbox loop
    assert (await healthz(rooms))["surfaces"]["test"]["posts"] == 1

    waiting = asyncio.create_task(rooms.wait(ask["id"], timeout=30))
    await rooms.parked()
    resp = await rooms.client.post(
        "/test-surface/say", json={"room": "r1", "who": "alice", "text": "yes"},
        headers={"Authorization": "Bearer t"},
    )
    assert await resp.json() == {"taken": True, "reason": None}
    woke = await asyncio.wait_for(waiting, WAIT)
    assert woke["status"] == "answered"
    assert woke["answer"] == {"value": "yes", "option": 1, "note": None}  # 1-based
    await asyncio.wait_for(surface.seen(ask["id"], CLOSE), WAIT)

    view = await rooms.get(ask["id"], operator=True)
    assert (view["answered_by"], view["surface"]) == ("test:alice", "test")
    assert [e["event"] for e in view["history"]][:2] == ["created", "answered"]


async def test_an_answer_on_one_ask_through_the_core(rooms: Aye) -> None:
    surface = surface_of(rooms)
    ask = await rooms.ask(question="Name?")
    await asyncio.wait_for(surface.seen(ask["id"], POST), WAIT)
    waiting = asyncio.create_task(rooms.wait(ask["id"], timeout=30))
    await rooms.parked()
    result = await surface.press(ask["id"], "alice", "Ada")
    assert result.taken
    assert (await asyncio.wait_for(waiting, WAIT))["answer"]["value"] == "Ada"
    await asyncio.wait_for(surface.seen(ask["id"], CLOSE), WAIT)


async def test_someone_else_is_refused_and_it_is_recorded(rooms: Aye) -> None:
    surface = surface_of(rooms)
    ask = await rooms.ask(question="Ship it?", options=["yes", "no"], work={"test": {"room": "r1"}})
    await asyncio.wait_for(surface.seen(ask["id"], POST), WAIT)
    said = await surface.say("r1", "mallory", "yes")
    assert (said.taken, said.reason) == (False, "not_a_responder")
    pressed = await surface.press(ask["id"], "mallory", "no")
    assert (pressed.taken, pressed.reason) == (False, "not_a_responder")

    view = await rooms.get(ask["id"], operator=True)
    assert view["status"] == "open" and view["answer"] is None
    refused = [e for e in view["history"] if e["event"] == "refused"]
    assert [(e["by"], e["why"], e["surface"]) for e in refused] == [
        ("test:mallory", "not_a_responder", "test")
    ] * 2
    assert (ask["id"], CLOSE) not in surface.delivered


async def test_the_surface_off_reaches_nobody(start_aye: StartAye, database_url: str) -> None:
    bob = config(defaults={"responders": ["test:bob"]})
    aye = await start_aye(database_url, bob, plugins=PLUGINS)  # no TEST_SURFACE_TOKEN
    assert NAME not in aye.asks.parts.places
    assert (await healthz(aye))["surfaces"]["test"] == {"on": False}
    resp = await aye.client.post(
        "/v1/asks", json={"question": "q", "work": {"test": {"room": "r1"}}}, headers=aye.headers
    )
    assert resp.status == 422
    assert (await resp.json())["error"] == "no_reachable_responder"
    assert (await aye.client.post("/test-surface/say", json={})).status == 404  # nor its route


def test_the_id_pattern_is_the_surfaces_own() -> None:
    with pytest.raises(ValidationError, match=r"'test:ALICE' is not a valid test responder"):
        config(defaults={"responders": ["test:ALICE"]})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        config(test={"lobby": "r1", "colour": "blue"})  # its section is strict too
    assert config().defaults.responders == [Responder(NAME, "alice")]


def test_without_the_plug_in_the_kind_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "_KINDS", {k: v for k, v in kinds._KINDS.items() if k != NAME})
    with pytest.raises(ValidationError, match="the kind must be one of"):
        config_model(bot.surfaces.PLUGINS).model_validate({"defaults": {"responders": ["test:alice"]}})
