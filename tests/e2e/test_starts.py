"""Approving a start (POST /v1/starts): asked once per work and agent, allowed after, cancelled
for good when refused or timed out; gates by work kind and by agent."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ask_api.tokens import TokenBook
from bot.config import Config
from core.app.timing import ManualClock
from tests.conftest import AGENT_HEADERS, OPERATOR_TOKEN, Aye, StartAye

ISSUE = {"github": {"repo": "octo/app", "number": 7}}
PULL = {"github": {"repo": "octo/app", "number": 8, "type": "pull"}}
GATES = {"gates": [{"kinds": ["github.issue"], "responders": ["operator:local"], "timeout": "1h"}]}


async def start(aye: Aye, work: Any, headers: Any = None, **extra: Any) -> tuple[int, Any]:
    resp = await aye.client.post("/v1/starts", json={"work": work, **extra},
                                 headers=headers or AGENT_HEADERS)
    return resp.status, await resp.json()


@pytest.fixture
async def gated(start_aye: StartAye, database_url: str, manual_clock: ManualClock) -> Aye:
    return await start_aye(database_url, Config.model_validate(GATES), manual_clock)


async def test_the_first_start_is_asked_and_later_ones_allowed(gated: Aye) -> None:
    status, pending = await start(gated, ISSUE, title="Fix the login bug",
                                  links=["https://github.com/octo/app/issues/7"], trigger="label")
    assert status == 202
    ask = pending["ask"]
    assert ask["kind"] == "approval" and ask["operation"] == "human.start"
    assert ask["question"] == "May default start on github:octo/app#7? (Fix the login bug)"
    assert ask["input"]["title"] == "Fix the login bug" and ask["input"]["trigger"] == "label"
    assert (await start(gated, ISSUE))[1]["ask"]["id"] == ask["id"]  # the same, while pending
    assert (await gated.answer(ask["ref"], "approve"))[0] == 200
    for _ in range(2):  # allowed, and not used up: only the first start is asked
        status, body = await start(gated, ISSUE)
        assert (status, body["decision"]) == (200, "allow")


async def test_a_refused_start_cancels_the_work(gated: Aye) -> None:
    _, pending = await start(gated, ISSUE)
    await gated.answer(pending["ask"]["ref"], "refuse", "not this one")
    for _ in range(2):
        status, body = await start(gated, ISSUE)
        assert (status, body["error"], body["by"]) == (403, "start_refused", "operator:local")
        assert body["note"] == "not this one"


async def test_a_timed_out_start_cancels_the_work(gated: Aye, manual_clock: ManualClock) -> None:
    await start(gated, ISSUE)
    manual_clock.advance(3601)
    await gated.tick()
    status, body = await start(gated, ISSUE)
    assert (status, body["error"]) == (403, "approval_timed_out")


async def test_only_the_gated_kinds(gated: Aye) -> None:
    status, body = await start(gated, {"slack": {"channel": "C0123ABCD", "thread_ts": "1.2"}})
    assert (status, body) == (200, {"decision": "allow"})  # a Slack thread: not gated here


async def test_a_claimed_kind_github_cannot_confirm_is_gated_as_either_kind(gated: Aye) -> None:
    # GitHub is off here, so nothing can say whether #8 is the pull request the agent says:
    # the `github.issue` gate takes it all the same (tests/e2e/test_same_call.py reads GitHub).
    status, body = await start(gated, PULL)
    assert (status, body["decision"]) == (202, "pending")


async def test_a_gate_of_agents_alone_gates_their_starts(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AYE_TOKEN_A", "token-a")
    monkeypatch.setenv("AYE_TOKEN_B", "token-b")
    config = Config.model_validate({
        "agents": [{"name": "a", "token_env": "AYE_TOKEN_A"}, {"name": "b", "token_env": "AYE_TOKEN_B"}],
        "gates": [{"agents": ["a"], "responders": ["operator:local"]},
                  {"operations": ["deploy."], "agents": ["a"]}],
    })
    aye = await start_aye(database_url, config, tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    a, b = {"Authorization": "Bearer token-a"}, {"Authorization": "Bearer token-b"}
    assert (await start(aye, PULL, a))[0] == 202
    assert (await start(aye, PULL, b))[0] == 200
    for headers, expected in ((a, 202), (b, 200)):  # the operations gate is a's alone
        resp = await aye.client.post("/v1/calls", json={"operation": "deploy.prod"}, headers=headers)
        assert resp.status == expected


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "work"),
        ({"work": {"github": {"repo": "o/r", "number": 1, "type": "commit"}}}, "work.github.type"),
        ({"work": ISSUE, "title": "x" * 201}, "title"),
        ({"work": ISSUE, "links": ["http://x.example/"]}, "links[0]"),
        ({"work": ISSUE, "links": ["https://x.example/"] * 6}, "links"),
    ],
)
async def test_bad_starts_name_the_field(gated: Aye, body: dict[str, Any], field: str) -> None:
    resp = await gated.client.post("/v1/starts", json=body, headers=AGENT_HEADERS)
    data = await resp.json()
    assert (resp.status, data["field"]) == (422, field), data


def test_a_gate_needs_operations_kinds_or_agents() -> None:
    with pytest.raises(ValidationError, match="a gate needs operations, kinds or agents"):
        Config.model_validate({"gates": [{"responders": ["operator:local"]}]})
    with pytest.raises(ValidationError, match="is not a work kind"):
        Config.model_validate({"gates": [{"kinds": ["GitHub Issue"]}]})
