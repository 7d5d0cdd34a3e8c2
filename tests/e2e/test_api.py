"""The /v1 ask API end to end over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from ask_api.tokens import TokenBook
from bot.config import Config
from core.app.timing import ManualClock
from core.domain.answering import Attempt
from core.domain.responders import OPERATOR
from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, OPERATOR_TOKEN, Aye, StartAye


async def test_create_returns_the_ask(aye: Aye) -> None:
    ask = await aye.ask(question="Deploy tonight?", options=["yes", "no"], context="CPU at 90%")
    assert ask["status"] == "open" and ask["kind"] == "question"
    assert ask["ref"].startswith("q") and len(ask["ref"]) <= 8
    assert ask["options"] == ["yes", "no"] and ask["answer"] is None
    assert ask["deadline"].endswith("Z") and ask["created_at"].endswith("Z")
    assert "responders" not in ask and "history" not in ask  # the operator's view only
    assert await aye.get(ask["ref"]) == await aye.get(ask["id"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "question"),
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "x" * 3001}, "question"),
        ({"question": 5}, "question"),
        ({"question": "q", "options": ["only"]}, "options"),
        ({"question": "q", "options": ["a", "A"]}, "options"),
        ({"question": "q", "options": ["a", "b" * 76]}, "options[1]"),
        ({"question": "q", "options": [str(i) for i in range(21)]}, "options"),
        ({"question": "q", "context": "c" * 3001}, "context"),
        ({"question": "q", "deadline": "2020-01-01T00:00:00Z"}, "deadline"),
        ({"question": "q", "deadline": "2099-01-01T00:00:00"}, "deadline"),
        ({"question": "q", "deadline": "2999-01-01T00:00:00Z"}, "deadline"),
        ({"question": "q", "timeout_s": 0}, "timeout_s"),
        ({"question": "q", "timeout_s": "60"}, "timeout_s"),
        ({"question": "q", "timeout_s": 60, "deadline": "2099-01-01T00:00:00Z"}, "timeout_s"),
        ({"question": "q", "work": {"slack": {"channel": "general", "thread_ts": "1.2"}}},
         "work.slack.channel"),
        ({"question": "q", "work": {"github": {"repo": "o/r", "number": 0}}}, "work.github.number"),
        ({"question": "q", "work": {}}, "work"),
        ({"question": "q", "key": "k" * 201}, "key"),
        ({"question": "q", "sensitive": "yes"}, "sensitive"),
        ({"question": "q", "colour": "blue"}, "colour"),
    ],
)
async def test_invalid_bodies_name_the_field(aye: Aye, body: dict[str, Any], field: str | None) -> None:
    resp = await aye.client.post("/v1/asks", json=body, headers=AGENT_HEADERS)
    data = await resp.json()
    assert resp.status == 422, data
    assert data["error"] == "invalid_field"
    assert data.get("field") == field
    assert data["message"]
    listed = await aye.client.get("/v1/asks", headers=OPERATOR_HEADERS)
    assert (await listed.json())["asks"] == []  # nothing was created


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"\xff\xfe", b'"text"'])
async def test_malformed_body_is_400(aye: Aye, raw: bytes) -> None:
    resp = await aye.client.post("/v1/asks", data=raw, headers=AGENT_HEADERS)
    assert resp.status == 400
    assert (await resp.json())["error"] == "malformed_body"


async def test_body_over_64k_is_413(aye: Aye) -> None:
    body = json.dumps({"question": "q", "context": "x" * 70000}).encode()
    resp = await aye.client.post("/v1/asks", data=body, headers=AGENT_HEADERS)
    assert resp.status == 413
    assert (await resp.json())["error"] == "body_too_large"


async def test_tokens(aye: Aye) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": AGENT_HEADERS[
            "Authorization"].replace("Bearer", "Basic")}):
        resp = await aye.client.get("/v1/asks", headers=headers)
        assert resp.status == 401
        assert (await resp.json())["error"] == "unauthorized"
    resp = await aye.client.post("/v1/asks", json={"question": "q"}, headers=OPERATOR_HEADERS)
    assert resp.status == 403


async def test_another_agents_ask_is_404(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AYE_TOKEN_A", "token-a")
    monkeypatch.setenv("AYE_TOKEN_B", "token-b")
    config = Config.model_validate({"agents": [
        {"name": "a", "token_env": "AYE_TOKEN_A"}, {"name": "b", "token_env": "AYE_TOKEN_B"}]})
    aye = await start_aye(database_url, config, tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    a = {"Authorization": "Bearer token-a"}
    b = {"Authorization": "Bearer token-b"}
    ask = await aye.ask(headers=a, question="mine")
    for path in (f"/v1/asks/{ask['id']}", f"/v1/asks/{ask['ref']}", f"/v1/asks/{ask['id']}/wait"):
        resp = await aye.client.get(path, headers=b)
        assert resp.status == 404, path
    assert (await aye.client.delete(f"/v1/asks/{ask['id']}", headers=b)).status == 404
    listed = await (await aye.client.get("/v1/asks", headers=b)).json()
    assert listed["asks"] == []
    assert (await aye.client.get(f"/v1/asks/{ask['id']}", headers=a)).status == 200
    assert (await aye.client.get("/v1/asks/q999999", headers=a)).status == 404


async def test_parked_agent_wakes_with_the_answer(aye: Aye) -> None:
    ask = await aye.ask(question="Which key?", options=["blue", "red"])
    waiting = asyncio.create_task(aye.wait(ask["id"], timeout=30))
    await aye.parked()
    assert not waiting.done()
    status, body = await aye.answer(ask["ref"], " RED ", note="the blue one is revoked")
    assert (status, body["outcome"]) == (200, "taken")
    woke = await asyncio.wait_for(waiting, 2)
    assert woke["status"] == "answered"
    assert woke["answer"] == {"value": "red", "option": 2, "note": "the blue one is revoked"}


async def test_wait_times_out_open(aye: Aye) -> None:
    ask = await aye.ask(question="q")
    assert (await aye.wait(ask["id"], timeout=0))["status"] == "open"
    assert (await aye.wait(ask["id"], timeout=1))["status"] == "open"  # whole seconds only
    for bad in ("-1", "301", "soon", "0.2", "1e1"):
        resp = await aye.client.get(f"/v1/asks/{ask['id']}/wait?timeout={bad}", headers=AGENT_HEADERS)
        assert resp.status == 422
        assert (await resp.json())["field"] == "timeout"


async def test_free_text_answer(aye: Aye) -> None:
    ask = await aye.ask(question="Which credential?")
    assert (await aye.answer(ask["id"], "  the deploy key  "))[0] == 200
    assert (await aye.get(ask["id"]))["answer"] == {
        "value": "the deploy key", "option": None, "note": None}


async def test_refusals_are_recorded(aye: Aye) -> None:
    ask = await aye.ask(question="Go?", options=["go", "stop"])
    status, body = await aye.answer(ask["ref"], "maybe")
    assert (status, body["error"], body["field"]) == (422, "invalid_answer", "answer")
    assert (await aye.answer(ask["ref"], "go"))[0] == 200
    status, body = await aye.answer(ask["ref"], "stop")
    assert (status, body["error"]) == (409, "closed")
    view = await aye.get(ask["ref"], operator=True)
    events = [(e["event"], e.get("why")) for e in view["history"]]
    assert events == [("created", None), ("refused", "invalid_answer"), ("answered", None),
                      ("late", "answered")]
    # Answered over the API (as curl would): recorded as the API's, not the CLI's.
    assert view["answered_by"] == "operator:local" and view["surface"] == "api"
    assert view["responders"] == ["operator:local"]
    assert view["answer"]["value"] == "go"


async def test_fifty_racing_answers_one_wins(aye: Aye) -> None:
    ask = await aye.ask(question="Pick", options=[f"o{i}" for i in range(1, 11)])
    results = await asyncio.gather(*(aye.answer(ask["id"], str(i % 10 + 1)) for i in range(50)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * 49
    history = (await aye.get(ask["id"], operator=True))["history"]
    assert [e["event"] for e in history].count("answered") == 1
    assert [e["event"] for e in history].count("late") == 49
    winner = next(body for status, body in results if status == 200)
    assert winner["outcome"] == "taken"


async def test_answers_that_all_read_the_ask_open_leave_one_winner(aye: Aye) -> None:
    """The race the store's conditional write (`status = open`) decides: every answer read the
    ask while it was open, and writes after another answer committed. Over HTTP on SQLite one
    process's requests never interleave between that read and that write (its store calls do
    not yield), so the answers here are given the row as a surface had read it, as a Slack
    press or a GitHub comment gives it when another answer lands meanwhile."""
    ask = await aye.ask(question="Pick", options=["red", "blue"])
    row = await aye.asks.find(ask["id"])
    assert row is not None and row.status == "open"
    results = await asyncio.gather(*(
        aye.asks.answer(row, Attempt(OPERATOR, "cli"), ["red", "blue"][i % 2]) for i in range(50)
    ))
    winners = [r for r in results if r.taken]
    assert len(winners) == 1
    assert all(not r.taken and r.reason == "answered" for r in results if r not in winners)
    view = await aye.get(ask["id"], operator=True)
    assert view["answer"]["value"] == winners[0].ask.answer_value  # type: ignore[union-attr]
    events = [e["event"] for e in view["history"]]
    assert events.count("answered") == 1 and events.count("late") == 49


async def test_withdraw(aye: Aye) -> None:
    ask = await aye.ask(question="q")
    waiting = asyncio.create_task(aye.wait(ask["id"], timeout=30))
    resp = await aye.client.delete(f"/v1/asks/{ask['ref']}", headers=AGENT_HEADERS)
    assert resp.status == 200 and (await resp.json())["status"] == "withdrawn"
    assert (await asyncio.wait_for(waiting, 2))["status"] == "withdrawn"
    resp = await aye.client.delete(f"/v1/asks/{ask['ref']}", headers=OPERATOR_HEADERS)
    assert resp.status == 409 and (await resp.json())["error"] == "closed"
    status, _ = await aye.answer(ask["id"], "late")
    assert status == 409
    events = [e["event"] for e in (await aye.get(ask["id"], operator=True))["history"]]
    assert events[:3] == ["created", "withdrawn", "read"] and events[-1] == "refused"


async def test_list_pages_newest_first(aye: Aye) -> None:
    made = [await aye.ask(question=f"q{i}") for i in range(5)]
    await aye.answer(made[0]["id"], "done")
    seen: list[str] = []
    cursor = None
    while True:
        params = {"status": "open", "limit": "2"} | ({"cursor": cursor} if cursor else {})
        page = await (await aye.client.get("/v1/asks", params=params, headers=AGENT_HEADERS)).json()
        seen += [a["question"] for a in page["asks"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ["q4", "q3", "q2", "q1"]
    everything = await (await aye.client.get("/v1/asks", headers=OPERATOR_HEADERS)).json()
    assert len(everything["asks"]) == 5
    assert [e["event"] for e in everything["asks"][-1]["history"]] == ["created", "answered"]
    bad = await aye.client.get("/v1/asks?status=pending", headers=AGENT_HEADERS)
    assert bad.status == 422 and (await bad.json())["field"] == "status"


async def test_idempotency_key(aye: Aye) -> None:
    body = {"question": "Spend $40?", "options": ["yes", "no"], "key": "spend-1"}
    first = await aye.ask(**body)
    again = await aye.ask(expect=200, **body)
    assert again["id"] == first["id"]
    resp = await aye.client.post("/v1/asks", json=body | {"question": "Spend $400?"},
                                 headers=AGENT_HEADERS)
    assert resp.status == 409
    assert (await resp.json())["error"] == "key_reused"
    racing = await asyncio.gather(*(
        aye.client.post("/v1/asks", json={"question": "once", "key": "race"}, headers=AGENT_HEADERS)
        for _ in range(10)))
    ids = {(await r.json())["id"] for r in racing}
    assert len(ids) == 1
    assert sorted(r.status for r in racing) == [200] * 9 + [201]


async def test_default_deadline_from_config(start_aye: StartAye, database_url: str) -> None:
    clock = ManualClock(start=1_800_000_000.0)
    config = Config.model_validate({"defaults": {"question_timeout": "2h"}})
    aye = await start_aye(database_url, config, clock)
    ask = await aye.ask(question="q")
    assert ask["deadline"] == "2027-01-15T10:00:00.000Z"
    assert ask["created_at"] == "2027-01-15T08:00:00.000Z"


async def test_deadline_expires_and_wakes(start_aye: StartAye, database_url: str) -> None:
    clock = ManualClock()
    aye = await start_aye(database_url, clock=clock)
    ask = await aye.ask(question="q", timeout_s=60)
    other = await aye.ask(question="later", timeout_s=600)
    waiting = asyncio.create_task(aye.wait(ask["id"], timeout=30))
    await aye.parked()
    clock.advance(59)
    await aye.tick()
    assert not waiting.done()
    clock.advance(2)  # the clock loop, poked by the move, expires it without a tick from here
    woke = await asyncio.wait_for(waiting, 2)
    assert woke["status"] == "expired" and woke["answer"] is None
    assert (await aye.get(other["id"]))["status"] == "open"
    status, body = await aye.answer(ask["id"], "too late")
    assert (status, body["error"]) == (409, "closed")
    events = [e["event"] for e in (await aye.get(ask["id"], operator=True))["history"]]
    assert events.count("expired") == 1 and events[-1] == "refused"


async def test_expires_when_back_after_downtime(start_aye: StartAye, database_url: str) -> None:
    clock = ManualClock()
    first = await start_aye(database_url, clock=clock)
    ask = await first.ask(question="q", timeout_s=60)
    await first.client.close()
    clock.advance(3600)  # the server was down through the deadline
    second = await start_aye(database_url, clock=clock)
    woke = await second.wait(ask["id"], timeout=5)
    assert woke["status"] == "expired"


async def test_sensitive_answer_is_erased_after_first_read(
    aye: Aye, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "hunter2-correct-horse"
    ask = await aye.ask(question="Which password?", sensitive=True)
    assert (await aye.answer(ask["ref"], secret))[0] == 200
    operator = await aye.get(ask["id"], operator=True)
    assert operator["answer"]["value"] is None and operator["answer"]["hidden"]
    first = await aye.get(ask["id"])
    assert first["answer"]["value"] == secret
    second = await aye.get(ask["id"])
    assert second["answer"] == {"value": None, "option": None, "note": None, "erased": True}
    history = (await aye.get(ask["id"], operator=True))["history"]
    assert ["created", "answered", "read"] == [e["event"] for e in history]
    assert secret not in json.dumps(history)
    assert secret not in caplog.text
    # A refused answer does not echo the value either.
    status, body = await aye.answer(ask["ref"], secret + "-again")
    assert status == 409 and secret not in json.dumps(body)


async def test_healthz(aye: Aye) -> None:
    resp = await aye.client.get("/healthz")
    assert resp.status == 200
    body = await resp.json()
    assert body["ok"] is True and body["surfaces"]["slack"]["on"] is False


async def test_no_reachable_responder(start_aye: StartAye, database_url: str) -> None:
    config = Config.model_validate({"defaults": {"responders": ["slack:U0123ABCD"]}})
    aye = await start_aye(database_url, config)
    resp = await aye.client.post("/v1/asks", json={"question": "q"}, headers=AGENT_HEADERS)
    assert resp.status == 422
    assert (await resp.json())["error"] == "no_reachable_responder"
