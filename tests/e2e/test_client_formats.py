"""The Python client with answer formats and bounded gated calls: `ask` sends a format's fields
and returns the value typed (a list, a bool, a dict, a string) from the real app on SQLite and
PostgreSQL; `gated(..., timeout_s=)` sends its bound, and a refusal carries who and why. What
the client sends is read by a tiny scripted aye on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest
from aiohttp import web

from aye_client import (
    ApprovalRefused,
    ApprovalTimedOut,
    ApprovalUnavailable,
    AyeClient,
    connect,
)
from aye_client import client as client_module
from bot.config import Config
from tests.conftest import AGENT_TOKEN, OPERATOR_HEADERS, Aye, StartAye
from tests.local_server import LocalServer

FORM = {
    "type": "object",
    "properties": {"region": {"type": "string", "enum": ["eu", "us"]},
                   "count": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["region"],
}
MEDIA = [{"kind": "image", "url": "https://cdn.example/plot.png", "caption": "Costs"}]


async def open_ref(aye: Aye) -> str:
    """The ref of the one open ask, once the client has made it and parked on it."""
    await aye.parked(1)
    resp = await aye.client.get("/v1/asks?status=open", headers=OPERATOR_HEADERS)
    [ask] = (await resp.json())["asks"]
    return str(ask["ref"])


@pytest.mark.parametrize(("fields", "given", "value"), [
    ({"options": ["red", "green", "blue"], "format": "multi", "min": 1, "max": 2}, "3, 1",
     ["red", "blue"]),
    ({"format": "confirm"}, "no", False),
    ({"format": "ack"}, "ok", True),
    ({"format": "form", "schema": FORM}, '{"region": "eu", "count": 2}',
     {"region": "eu", "count": 2}),
    ({"options": ["red", "blue"]}, "2", "blue"),
    ({"media": MEDIA}, "as you like", "as you like"),
])
async def test_ask_sends_the_format_and_returns_the_value_typed(
    aye: Aye, fields: dict[str, Any], given: str, value: Any
) -> None:
    async with AyeClient(aye.url, AGENT_TOKEN) as client:
        asked = asyncio.create_task(client.ask("Well?", **fields))
        ref = await open_ref(aye)
        view = await aye.get(ref)
        for name, sent in fields.items():
            assert view[name] == sent
        assert view["format"] == fields.get("format", "choice" if "options" in fields else "text")

        status, reply = await aye.answer(ref, given)
        assert status == 200, reply

        got = await asyncio.wait_for(asked, 10)
    assert got == value and type(got) is type(value)


async def test_gated_with_timeout_s_bounds_the_approval_and_a_refusal_says_who_and_why(
    start_aye: StartAye, database_url: str
) -> None:
    gates = Config.model_validate({"gates": [{"operations": ["deploy."], "timeout": "2h"}]})
    aye = await start_aye(database_url, gates)
    async with connect(aye.url, AGENT_TOKEN) as client:
        async def deploy() -> None:
            async with client.gated("deploy.prod", {"version": "1.4.2"}, timeout_s=600):
                raise AssertionError("ran without an approval")

        gated = asyncio.create_task(deploy())
        ref = await open_ref(aye)
        view = await aye.get(ref)
        left = datetime.fromisoformat(view["deadline"]).timestamp() - aye.clock.now()
        assert 590 < left <= 600  # the caller's bound, not the gate's two hours

        assert (await aye.answer(ref, "refuse", note="Not on a Friday."))[0] == 200

        with pytest.raises(ApprovalRefused) as refused:
            await asyncio.wait_for(gated, 10)
    assert (refused.value.by, refused.value.note) == ("operator:local", "Not on a Friday.")
    assert refused.value.operation == "deploy.prod" and refused.value.repeat is False


# -- what the client sends: a scripted aye ----------------------------------------------------


class ScriptedAye(LocalServer):
    """Answers each request with the next scripted (status, body) of its route (the last one
    again once the others are used), parking a wait on an open ask as aye does, and keeps
    every body it was sent."""

    name = "scripted aye"

    def __init__(self) -> None:
        super().__init__()
        self.script: dict[str, list[tuple[int, Any]]] = {}
        self.sent: dict[str, list[Any]] = {}

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        await self._serve(app)

    async def _handle(self, request: web.Request) -> web.Response:
        route = f"{request.method} {request.path}"
        body = await request.read()
        self.sent.setdefault(route, []).append(json.loads(body) if body else None)
        queue = self.script[route]
        status, reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if request.path.endswith("/wait") and reply.get("status") == "open":
            await asyncio.sleep(float(request.query.get("timeout", "0")))
        return web.json_response(reply, status=status)


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedAye]:
    async with ScriptedAye() as server:
        yield server


PENDING = {"decision": "pending", "ask": {"id": "a1", "status": "open"}}
APPROVED = {"id": "a1", "status": "answered", "outcome": "approved"}
ALLOW = {"decision": "allow", "approval": "a1"}


async def test_timeout_s_is_sent_only_when_given(scripted: ScriptedAye) -> None:
    scripted.script["POST /v1/calls"] = [(202, PENDING), (200, ALLOW), (200, {"decision": "allow"})]
    scripted.script["GET /v1/asks/a1/wait"] = [(200, APPROVED)]
    async with AyeClient(scripted.base_url, "t") as client:
        async with client.gated("deploy.prod", {"v": 1}, timeout_s=600) as approval:
            assert approval == "a1"

        @client.gated("db.migrate")
        async def migrate(revision: str) -> str:
            return revision

        assert await migrate("0042") == "0042"
    assert scripted.sent["POST /v1/calls"] == [
        {"operation": "deploy.prod", "input": {"v": 1}, "work": None, "timeout_s": 600},
        {"operation": "deploy.prod", "input": {"v": 1}, "work": None, "timeout_s": 600},
        {"operation": "db.migrate", "input": {"revision": "0042"}, "work": None},
    ]


async def test_ask_sends_only_the_fields_given_with_a_key_and_retries_a_503(
    scripted: ScriptedAye,
) -> None:
    answered = {"id": "q1", "status": "answered",
                "answer": {"value": ["a"], "option": None, "options": [1], "note": None}}
    scripted.script["POST /v1/asks"] = [(503, {}), (201, {"id": "q1", "status": "open"})]
    scripted.script["GET /v1/asks/q1/wait"] = [(200, answered)]
    async with AyeClient(scripted.base_url, "t") as client:
        assert await client.ask("Which?", options=["a", "b"], format="multi", max=1) == ["a"]
    first, again = scripted.sent["POST /v1/asks"]
    assert first == again  # the same key: a create retried across a restart asks once
    assert set(first) == {"question", "options", "format", "max", "key"}


@pytest.mark.parametrize(("reply", "raised"), [
    ({"decision": "refuse", "error": "approval_refused", "by": "github:octocat",
      "note": "Still no.", "repeat": True}, ApprovalRefused),
    ({"decision": "refuse", "error": "approval_unavailable"}, ApprovalUnavailable),
    ({"decision": "refuse", "error": "approval_timed_out"}, ApprovalTimedOut),
])
async def test_a_refusal_at_once_is_told_apart(
    scripted: ScriptedAye, reply: dict[str, Any], raised: type[Exception]
) -> None:
    scripted.script["POST /v1/calls"] = [(403, reply)]
    async with AyeClient(scripted.base_url, "t") as client:
        with pytest.raises(raised) as caught:
            await client.call("deploy.prod", {"v": 1})
    if isinstance(caught.value, ApprovalRefused):
        assert (caught.value.by, caught.value.note) == ("github:octocat", "Still no.")
        assert caught.value.repeat is True and "remembered" in str(caught.value)
    assert len(scripted.sent["POST /v1/calls"]) == 1  # at once: not tried again, no wait
    assert "GET /v1/asks/a1/wait" not in scripted.sent


async def test_a_bounded_call_stops_waiting_when_no_expiry_comes(
    scripted: ScriptedAye, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server that does not keep the bound: the approval stays open past it.
    monkeypatch.setattr(client_module, "TIMEOUT_GRACE_S", 0.0)
    scripted.script["POST /v1/calls"] = [(202, PENDING)]
    scripted.script["GET /v1/asks/a1/wait"] = [(200, {"id": "a1", "status": "open"})]
    async with AyeClient(scripted.base_url, "t") as client:
        with pytest.raises(ApprovalTimedOut):
            await asyncio.wait_for(client.call("deploy.prod", None, timeout_s=1), 10)
