"""The kinds a process knows are one value (core.domain.kinds.Kinds), built in the composition
root from the surfaces' plug-ins (bot.surfaces.kinds_of) and handed down; importing a surface
fills nothing."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from pydantic import BaseModel

from ask_api.schemas import bodies
from bot.surfaces import KINDS, PLUGINS, kinds_of
from core.domain import identity, kinds
from core.domain.kinds import CORE, CORE_KINDS, Kinds, SurfaceKind
from core.domain.responders import Responder


class RoomWork(BaseModel):
    room: str


ROOM = SurfaceKind("room", re.compile(r"^[a-z]+$"), work_model=RoomWork,
                   work_key=lambda work: str(work["room"]))


def test_the_core_knows_its_own_kinds_alone() -> None:
    assert CORE.names() == list(CORE_KINDS)
    assert CORE.with_work() == []


def test_adding_makes_another_value_and_leaves_the_first_as_it_was() -> None:
    more = CORE.adding([ROOM])
    assert more.names() == [*CORE_KINDS, "room"] and more.known("room") is ROOM
    assert CORE.known("room") is None
    assert more == CORE.adding([ROOM]) and hash(more) == hash(CORE.adding([ROOM]))
    assert more != CORE


def test_a_kind_added_again_replaces_it_in_its_place() -> None:
    other = SurfaceKind("room", re.compile(r"^[0-9]+$"))
    both = CORE.adding([ROOM, SurfaceKind("hall", re.compile(".")), other])
    assert both.names() == [*CORE_KINDS, "room", "hall"] and both["room"] is other


def test_a_surface_may_not_bring_a_core_kind() -> None:
    with pytest.raises(ValueError, match="the operator kind is the core's own"):
        CORE.adding([SurfaceKind("operator", re.compile("."))])


def test_the_process_kinds_are_the_core_s_and_each_plug_in_s() -> None:
    assert KINDS == kinds_of(PLUGINS)
    assert KINDS.names() == [*CORE_KINDS, "slack", "github"]  # email's is the core's own
    assert [k.name for k in KINDS.with_work()] == ["slack", "github"]


def test_importing_the_surfaces_fills_nothing() -> None:
    probe = ("import bot.surfaces; from core.domain import kinds; "
             "print(','.join(kinds.names()))")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == ",".join(CORE_KINDS)


def test_responders_and_works_are_read_with_the_kinds_handed_to_them() -> None:
    with_room = CORE.adding([ROOM])
    assert Responder.parse("room:lobby", with_room) == Responder("room", "lobby")
    with pytest.raises(ValueError, match=r"the kind must be one of operator, external, person, email$"):
        Responder.parse("room:lobby", CORE)
    assert identity.work_key({"room": {"room": "r9"}}, with_room) == "room:r9"
    assert identity.work_key({"room": {"room": "r9"}}, CORE) is None


def test_the_request_models_are_built_once_per_kinds_value() -> None:
    made = bodies(kinds_of(PLUGINS))
    assert bodies(kinds_of(PLUGINS)) is made
    work = made.start.model_fields["work"].annotation
    assert isinstance(work, type) and set(work.model_fields) == {"slack", "github"}
    room = bodies(CORE.adding([ROOM])).start.model_fields["work"].annotation
    assert isinstance(room, type) and set(room.model_fields) == {"room"}


def test_the_kinds_in_use_are_those_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "_KINDS", CORE)
    kinds.use(CORE.adding([ROOM]))
    assert kinds.in_use() == CORE.adding([ROOM]) and Responder.parse("room:x") == Responder("room", "x")
    assert isinstance(kinds.in_use(), Kinds)
