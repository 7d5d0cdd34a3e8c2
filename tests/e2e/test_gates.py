"""Approval gates and escalation over /v1/calls, with the clock moved by hand."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aye_client import ApprovalRefused, ApprovalTimedOut, ApprovalUnavailable, AyeClient
from bot.config import Config
from core.app.timing import ManualClock
from core.domain.responders import Responder
from store.models import AskRow
from tests.conftest import AGENT_HEADERS, AGENT_TOKEN, Aye, StartAye

GATES = {
    "defaults": {"responders": ["operator:local"]},
    "gates": [
        {"operations": ["deploy."], "timeout": "2h"},
        {"operations": ["deploy.prod"], "timeout": "10m"},
        {"operations": ["db.*"], "timeout": "1h",
         "escalate": {"responders": ["operator:local"], "timeout": "30m"}},
    ],
}
ISSUE = {"github": {"repo": "octo/app", "number": 7}}


class RecordingSurface:
    """A surface of our own (the core's seam, not a library): reaches GitHub people on issues."""

    name = "recording"

    def __init__(self) -> None:
        self.delivered: list[tuple[str, str]] = []
        self.event = asyncio.Event()

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return responder.kind == "github" and bool(work and "github" in work)

    def wants(self, ask: AskRow, action: str) -> bool:
        return True

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        self.delivered.append((ask.id, action))
        self.event.set()

    def health(self) -> dict[str, Any]:
        return {"on": True}

    def routes(self) -> list[Any]:
        return []

    async def start(self, session: Any) -> None:
        return None

    async def close(self) -> None:
        return None


async def call(aye: Aye, operation: str, input_: Any = None, work: Any = None) -> tuple[int, Any]:
    body: dict[str, Any] = {"operation": operation, "input": input_}
    if work is not None:
        body["work"] = work
    resp = await aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    return resp.status, await resp.json()


@pytest.fixture
async def gated(start_aye: StartAye, database_url: str, manual_clock: ManualClock) -> Aye:
    return await start_aye(database_url, Config.model_validate(GATES), manual_clock)


async def test_not_gated_is_allowed(gated: Aye) -> None:
    assert await call(gated, "build.all", {"x": 1}) == (200, {"decision": "allow"})
    assert await call(gated, "deploy", {}) == (200, {"decision": "allow"})  # "deploy." is a prefix


async def test_an_operation_in_other_case_is_gated_all_the_same(gated: Aye) -> None:
    """`DEPLOY.prod` must not slip past a `deploy.` gate."""
    for operation in ("DEPLOY.prod", "Deploy.Staging"):
        status, body = await call(gated, operation, {"v": 1})
        assert (status, body["decision"]) == (202, "pending")
        assert body["ask"]["operation"] == operation.lower()  # stored as it is matched


async def test_approve_once(gated: Aye) -> None:
    status, pending = await call(gated, "deploy.staging", {"version": "1.2", "canary": True})
    assert status == 202 and pending["decision"] == "pending"
    ask = pending["ask"]
    assert ask["kind"] == "approval" and ask["options"] == ["approve", "refuse"]
    assert ask["operation"] == "deploy.staging" and ask["input"] == {"version": "1.2", "canary": True}
    assert "deploy.staging" in ask["question"] and '"version":"1.2"' in ask["context"]
    assert ask["ref"].startswith("a")

    # Identical while pending (key order does not matter): the same ask, nothing new.
    status, again = await call(gated, "deploy.staging", {"canary": True, "version": "1.2"})
    assert status == 202 and again["ask"]["id"] == ask["id"]
    # A different input is a different call.
    _, other = await call(gated, "deploy.staging", {"version": "1.3", "canary": True})
    assert other["ask"]["id"] != ask["id"]

    assert (await gated.answer(ask["ref"], "approve"))[0] == 200
    woke = await gated.wait(ask["id"])
    assert woke["outcome"] == "approved" and "by" not in woke
    status, allowed = await call(gated, "deploy.staging", {"version": "1.2", "canary": True})
    assert (status, allowed["decision"], allowed["approval"]) == (200, "allow", ask["id"])
    assert allowed["receipt"].count(".") == 2  # signed: tests/e2e/test_receipts.py checks it
    # Used up: the same call again asks again.
    status, third = await call(gated, "deploy.staging", {"version": "1.2", "canary": True})
    assert status == 202 and third["ask"]["id"] not in (ask["id"], other["ask"]["id"])
    history = (await gated.get(ask["id"], operator=True))["history"]
    assert [e["event"] for e in history] == ["created", "answered", "read", "used"]
    assert history[0]["operation"] == "deploy.staging" and history[0]["agent"] == "default"
    assert len(history[0]["input_sha256"]) == len(history[0]["call_sha256"]) == 64


async def test_identical_calls_racing_share_one_ask(gated: Aye) -> None:
    replies = await asyncio.gather(*(call(gated, "deploy.x", {"n": 1}) for _ in range(10)))
    assert {r[1]["ask"]["id"] for r in replies} == {replies[0][1]["ask"]["id"]}
    listed = await (await gated.client.get("/v1/asks", headers=AGENT_HEADERS)).json()
    assert len(listed["asks"]) == 1


async def test_the_most_specific_gate_governs(gated: Aye, manual_clock: ManualClock) -> None:
    _, prod = await call(gated, "deploy.prod", {})
    _, staging = await call(gated, "deploy.staging", {})
    assert prod["ask"]["deadline"] < staging["ask"]["deadline"]  # 10m beats 2h
    manual_clock.advance(11 * 60)
    await gated.tick()
    assert (await gated.get(prod["ask"]["id"]))["outcome"] == "approval_timed_out"
    assert (await gated.get(staging["ask"]["id"]))["status"] == "open"


async def test_approval_expires_after_the_window(gated: Aye, manual_clock: ManualClock) -> None:
    _, pending = await call(gated, "deploy.prod", {"v": 2})
    assert (await gated.answer(pending["ask"]["id"], "1"))[0] == 200
    manual_clock.advance(10 * 60 + 1)  # the gate's timeout, counted from the approval
    status, again = await call(gated, "deploy.prod", {"v": 2})
    assert status == 202 and again["ask"]["id"] != pending["ask"]["id"]


async def test_refusal_names_who(gated: Aye) -> None:
    _, pending = await call(gated, "deploy.prod", {})
    assert (await gated.answer(pending["ask"]["ref"], "REFUSE"))[0] == 200
    ask = await gated.wait(pending["ask"]["id"])
    assert ask["outcome"] == "approval_refused" and ask["by"] == "operator:local"
    status, again = await call(gated, "deploy.prod", {})
    # Remembered for the gate's timeout (10m): refused at once, nothing asked again.
    assert status == 403 and again["repeat"] is True and again["by"] == "operator:local"


async def test_timeout_refuses(gated: Aye, manual_clock: ManualClock) -> None:
    _, pending = await call(gated, "deploy.prod", {})
    waiting = asyncio.create_task(gated.wait(pending["ask"]["id"], timeout=30))
    await gated.parked()
    manual_clock.advance(600)
    ask = await asyncio.wait_for(waiting, 3)
    assert ask["status"] == "expired" and ask["outcome"] == "approval_timed_out"


async def test_unavailable_without_a_reachable_responder(start_aye: StartAye, database_url: str) -> None:
    config = Config.model_validate({"gates": [{"operations": ["pay."], "responders": ["slack:U0123ABCD"]}]})
    aye = await start_aye(database_url, config)
    status, body = await call(aye, "pay.invoice", {"amount": 40})
    assert status == 403
    assert body["decision"] == "refuse" and body["error"] == "approval_unavailable"


async def test_escalation_widens_then_times_out(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    config = Config.model_validate({"gates": [{
        "operations": ["db.drop"], "responders": ["github:alice"], "timeout": "1h",
        "escalate": {"responders": ["operator:local"], "timeout": "30m"}}]})
    aye = await start_aye(database_url, config, manual_clock)
    surface = RecordingSurface()
    aye.asks.add_surface(surface)
    status, pending = await call(aye, "db.drop", {"table": "users"}, ISSUE)
    assert status == 202
    ask = pending["ask"]
    created = manual_clock.now()
    assert ask["deadline"] == (await aye.get(ask["id"]))["deadline"]

    status, body = await aye.answer(ask["ref"], "approve")
    assert (status, body["error"]) == (403, "not_a_responder")  # not yet: alice's alone

    manual_clock.advance(3600)
    await aye.tick()
    view = await aye.get(ask["id"], operator=True)
    assert view["status"] == "open"
    assert view["escalation"]["responders"] == ["operator:local"]
    assert view["escalation"]["escalated_at"] is not None
    escalated = [e for e in view["history"] if e["event"] == "escalated"]
    assert len(escalated) == 1 and escalated[0]["to"] == ["operator:local"]
    await asyncio.wait_for(_delivered(surface, ask["id"], "escalate"), 3)
    await aye.tick()  # again: it fires once
    view = await aye.get(ask["id"], operator=True)
    assert [e["event"] for e in view["history"]].count("escalated") == 1

    manual_clock.advance(1800)
    await aye.tick()
    final = await aye.get(ask["id"])
    assert final["outcome"] == "approval_timed_out"
    assert manual_clock.now() - created == 5400


async def test_escalated_responder_may_answer(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    config = Config.model_validate({"gates": [{
        "operations": ["db.drop"], "responders": ["github:alice"], "timeout": "1h",
        "escalate": {"responders": ["operator:local"]}}]})
    aye = await start_aye(database_url, config, manual_clock)
    aye.asks.add_surface(RecordingSurface())
    _, pending = await call(aye, "db.drop", {}, ISSUE)
    manual_clock.advance(3601)
    await aye.tick()
    assert (await aye.answer(pending["ask"]["id"], "approve"))[0] == 200
    assert (await call(aye, "db.drop", {}, ISSUE))[1]["decision"] == "allow"


async def _delivered(surface: RecordingSurface, ask_id: str, action: str) -> None:
    while (ask_id, action) not in surface.delivered:
        surface.event.clear()
        await surface.event.wait()


async def test_two_processes_escalate_and_expire_once(
    start_aye: StartAye, pg_session_url: str | None, manual_clock: ManualClock
) -> None:
    from tests.conftest import postgres_url

    url = await postgres_url(pg_session_url)
    config = Config.model_validate(GATES)
    one = await start_aye(url, config, manual_clock)
    two = await start_aye(url, config, manual_clock)
    made = [(await call(one if i % 2 else two, "db.migrate", {"n": i}))[1]["ask"] for i in range(6)]
    manual_clock.advance(3600)
    await asyncio.gather(one.tick(), two.tick(), one.tick(), two.tick())
    manual_clock.advance(1800)
    await asyncio.gather(one.tick(), two.tick(), one.tick(), two.tick())
    for ask in made:
        view = await one.get(ask["id"], operator=True)
        events = [e["event"] for e in view["history"]]
        assert events.count("escalated") == 1 and events.count("expired") == 1, events
        assert view["outcome"] == "approval_timed_out"


async def test_client_helper(gated: Aye) -> None:
    surface = RecordingSurface()  # tells us, through the outbox, when an ask was posted
    gated.asks.add_surface(surface)
    async with AyeClient(gated.url, AGENT_TOKEN) as client:
        async def approve_when_asked(answer: str, note: str | None = None) -> None:
            seen = len(surface.delivered)
            while not any(action == "post" for _, action in surface.delivered[seen:]):
                surface.event.clear()
                await surface.event.wait()
            ask_id = next(i for i, action in surface.delivered[seen:] if action == "post")
            await gated.answer(ask_id, answer, note)

        ran: list[str] = []

        @client.gated("deploy.prod")
        async def deploy(version: str) -> str:
            ran.append(version)
            return version

        helper = asyncio.create_task(approve_when_asked("approve"))
        assert await deploy("1.4.2") == "1.4.2"
        await helper
        assert ran == ["1.4.2"]

        helper = asyncio.create_task(approve_when_asked("refuse", "not on a Friday"))
        with pytest.raises(ApprovalRefused) as refused:
            async with client.gated("deploy.prod", {"version": "9"}):
                ran.append("never")
        await helper
        assert refused.value.by == "operator:local" and ran == ["1.4.2"]
        assert refused.value.note == "not on a Friday"

        async with client.gated("build.any"):  # not gated
            ran.append("build")

        helper = asyncio.create_task(approve_when_asked("blue"))
        assert await client.ask("Which key?", options=["blue", "red"]) == "blue"
        await helper


async def test_client_helper_raises_for_unavailable_and_timeout(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    config = Config.model_validate({"gates": [
        {"operations": ["pay."], "responders": ["slack:U0123ABCD"]},
        {"operations": ["ship"], "timeout": "1m"}]})
    aye = await start_aye(database_url, config, manual_clock)
    async with AyeClient(aye.url, AGENT_TOKEN) as client:
        with pytest.raises(ApprovalUnavailable):
            await client.call("pay.invoice", {"amount": 1})
        surface = RecordingSurface()
        aye.asks.add_surface(surface)
        task = asyncio.create_task(client.call("ship", {}))
        while not surface.delivered:
            surface.event.clear()
            await surface.event.wait()
        manual_clock.advance(61)
        with pytest.raises(ApprovalTimedOut):
            await asyncio.wait_for(task, 5)


async def test_the_callers_timeout_bounds_a_new_approval(gated: Aye, manual_clock: ManualClock) -> None:
    created = manual_clock.now()
    resp = await gated.client.post(
        "/v1/calls", json={"operation": "db.migrate", "input": {"v": 1}, "timeout_s": 600},
        headers=AGENT_HEADERS,
    )
    assert resp.status == 202
    ask = (await resp.json())["ask"]
    view = await gated.get(ask["id"], operator=True)
    # The gate's hour (and its escalation after) is cut to the caller's ten minutes, and an
    # escalation that would come after that never comes.
    assert "escalation" not in view
    manual_clock.advance(599)
    await gated.tick()
    assert (await gated.get(ask["id"]))["status"] == "open"
    manual_clock.advance(1)
    await gated.tick()
    done = await gated.get(ask["id"])
    assert done["outcome"] == "approval_timed_out"
    assert done["deadline"] == view["deadline"]
    assert abs(_epoch(done["deadline"]) - created - 600) < 1


async def test_a_callers_timeout_past_the_gates_changes_nothing(gated: Aye) -> None:
    resp = await gated.client.post(
        "/v1/calls", json={"operation": "db.migrate", "input": {"v": 2}, "timeout_s": 86400},
        headers=AGENT_HEADERS,
    )
    view = await gated.get((await resp.json())["ask"]["id"], operator=True)
    assert view["escalation"]["responders"] == ["operator:local"]  # the gate's 1h, then 30m more


@pytest.mark.parametrize("bad", [0, -1, "60", 1.5, True, 31536001])
async def test_a_callers_timeout_must_be_whole_seconds(gated: Aye, bad: Any) -> None:
    resp = await gated.client.post(
        "/v1/calls", json={"operation": "db.migrate", "timeout_s": bad}, headers=AGENT_HEADERS
    )
    body = await resp.json()
    assert (resp.status, body["error"], body["field"]) == (422, "invalid_field", "timeout_s")


def _epoch(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
