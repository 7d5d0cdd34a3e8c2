"""Approval policy: quorum, no self-approval, remembered refusals and reminders, through the
real API and core on both stores, with the clock moved by hand."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from bot.config import Config
from core.app.ports import AnswerResult, AuthorUnknown
from core.app.timing import ManualClock
from core.domain.answering import Attempt
from core.domain.responders import Responder
from store.models import AskRow
from tests.conftest import AGENT_HEADERS, Aye, StartAye
from tests.e2e.test_gates import RecordingSurface

ISSUE = {"github": {"repo": "octo/app", "number": 7}}
PEOPLE = [f"github:person{i}" for i in range(8)]


class GitHubLike(RecordingSurface):
    """A surface named `github` that says who opened an issue, or that it cannot."""

    name = "github"

    def __init__(self, author: str | None = "github:Alice") -> None:
        super().__init__()
        self.author_is = author
        self.lookups = 0

    async def author(self, work: dict[str, Any]) -> str | None:
        self.lookups += 1
        if self.author_is is None:
            raise AuthorUnknown("GitHub answered 502")
        return self.author_is


def policy(**gate: Any) -> Config:
    return Config.model_validate({"gates": [{
        "operations": ["deploy."], "responders": ["github", "operator:local"], "timeout": "1h",
        **gate}]})


async def started(start_aye: StartAye, url: str, clock: ManualClock, surface: Any = None,
                  **gate: Any) -> tuple[Aye, Any]:
    aye = await start_aye(url, policy(**gate), clock)
    surface = surface or GitHubLike()
    aye.asks.add_surface(surface)
    return aye, surface


async def call(aye: Aye, input_: Any = None, work: Any = ISSUE) -> tuple[int, Any]:
    body = {"operation": "deploy.prod", "input": input_ or {"v": 1}, "work": work}
    resp = await aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    return resp.status, await resp.json()


async def row(aye: Aye, ask_id: str) -> AskRow:
    found = await aye.asks.find(ask_id)
    assert found is not None
    return found


async def say(aye: Aye, ask_id: str, who: str, answer: str = "approve") -> AnswerResult:
    return await aye.asks.answer(await row(aye, ask_id), Attempt(Responder.parse(who), "github"),
                                 answer)


def events(view: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [e for e in view["history"] if e["event"] == name]


async def test_a_quorum_of_two_distinct_people(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, surface = await started(start_aye, database_url, manual_clock, approvals=2)
    _, pending = await call(aye)
    ask_id = pending["ask"]["id"]
    first = await say(aye, ask_id, "github:bob")
    assert first.taken and first.ask is not None and first.ask.approvers == ["github:bob"]
    assert (await aye.get(ask_id))["status"] == "open"
    await asyncio.wait_for(_delivered(surface, ask_id, "update"), 3)  # "1 of 2" shown
    again = await say(aye, ask_id, "github:BOB")  # the same person, in other case
    assert (again.taken, again.reason) == (False, "already_approved")
    assert (await call(aye))[0] == 202  # still pending: one approval is not enough

    second = await say(aye, ask_id, "github:carol")
    assert second.taken
    view = await aye.get(ask_id, operator=True)
    assert view["outcome"] == "approved"
    assert [e["by"] for e in events(view, "approved")] == ["github:bob"]
    assert events(view, "approved")[0]["count"] == 1 and events(view, "approved")[0]["needed"] == 2
    assert events(view, "answered")[0]["approvers"] == ["github:bob", "github:carol"]
    assert [e["why"] for e in events(view, "refused")] == ["already_approved"]
    status, allowed = await call(aye)
    assert (status, allowed["decision"], allowed["approval"]) == (200, "allow", ask_id)


async def test_one_refusal_refuses_a_quorum(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, _ = await started(start_aye, database_url, manual_clock, approvals=3)
    _, pending = await call(aye)
    ask_id = pending["ask"]["id"]
    assert (await say(aye, ask_id, "github:bob")).taken
    assert (await say(aye, ask_id, "github:carol", "refuse")).taken
    done = await aye.get(ask_id)
    assert done["outcome"] == "approval_refused" and done["by"] == "github:carol"
    assert not (await say(aye, ask_id, "github:dave")).taken


async def test_approvals_racing_from_two_processes_count_once_each(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    if "postgresql" not in database_url:
        pytest.skip("one process per SQLite file (a second aye serve refuses to start)")
    one, _ = await started(start_aye, database_url, manual_clock, approvals=2)
    two, _ = await started(start_aye, database_url, manual_clock, approvals=2)
    _, pending = await call(one)
    ask_id = pending["ask"]["id"]
    rows = [await row(one, ask_id), await row(two, ask_id)]
    results = await asyncio.gather(*(
        (one if i % 2 else two).asks.answer(rows[i % 2], Attempt(Responder.parse(who), "github"),
                                            "approve")
        for i, who in enumerate(PEOPLE)
    ))
    view = await one.get(ask_id, operator=True)
    assert view["outcome"] == "approved"
    [answered] = events(view, "answered")
    assert len(answered["approvers"]) == 2 and len(set(answered["approvers"])) == 2
    assert len(events(view, "approved")) == 1
    assert sum(r.taken for r in results) == 2
    refused = events(view, "refused") + events(view, "late")
    assert len(refused) == len(PEOPLE) - 2


async def test_the_works_author_cannot_approve_but_can_refuse(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, surface = await started(start_aye, database_url, manual_clock, prevent_self_approval=True)
    _, pending = await call(aye)
    ask_id = pending["ask"]["id"]
    refused = await say(aye, ask_id, "github:alice")  # the author, in other case
    assert (refused.taken, refused.reason) == (False, "self_approval")
    assert surface.lookups == 1
    assert (await aye.get(ask_id))["status"] == "open"
    assert (await say(aye, ask_id, "github:bob")).taken
    assert (await aye.get(ask_id))["outcome"] == "approved"

    _, pending = await call(aye, {"v": 2})
    assert (await say(aye, pending["ask"]["id"], "github:alice", "refuse")).taken
    assert (await aye.get(pending["ask"]["id"]))["outcome"] == "approval_refused"


async def test_an_author_that_cannot_be_read_refuses_the_approval(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, _ = await started(start_aye, database_url, manual_clock, GitHubLike(author=None),
                           prevent_self_approval=True)
    _, pending = await call(aye)
    result = await say(aye, pending["ask"]["id"], "github:bob")
    assert (result.taken, result.reason) == (False, "author_unknown")
    view = await aye.get(pending["ask"]["id"], operator=True)
    assert view["status"] == "open" and events(view, "refused")[0]["why"] == "author_unknown"


async def test_a_refusal_is_remembered_then_forgotten(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, surface = await started(start_aye, database_url, manual_clock, remember_refusal="2h")
    _, pending = await call(aye)
    ask_id = pending["ask"]["id"]
    await asyncio.wait_for(_delivered(surface, ask_id, "post"), 3)
    status, _ = await aye.answer(ask_id, "refuse", "not on a Friday")
    assert status == 200
    await asyncio.wait_for(_delivered(surface, ask_id, "close"), 3)
    posts = len(surface.delivered)
    status, again = await call(aye)
    assert status == 403
    assert again == {**again, "decision": "refuse", "error": "approval_refused",
                     "by": "operator:local", "note": "not on a Friday", "repeat": True}
    assert len(surface.delivered) == posts  # nothing asked, nothing posted
    assert (await call(aye, {"v": 2}))[0] == 202  # another input is another call
    manual_clock.advance(2 * 3600 + 1)
    status, fresh = await call(aye)
    assert status == 202 and fresh["ask"]["id"] != ask_id


async def test_remember_refusal_0s_asks_again(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, _ = await started(start_aye, database_url, manual_clock, remember_refusal="0s")
    _, pending = await call(aye)
    await aye.answer(pending["ask"]["id"], "refuse")
    assert (await call(aye))[0] == 202


async def test_an_approval_is_reminded_once(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, surface = await started(start_aye, database_url, manual_clock, remind_after="30m")
    _, pending = await call(aye)
    ask_id = pending["ask"]["id"]
    manual_clock.advance(29 * 60)
    await aye.tick()
    assert not events(await aye.get(ask_id, operator=True), "reminded")
    manual_clock.advance(60)
    await aye.tick()
    await aye.tick()
    view = await aye.get(ask_id, operator=True)
    assert len(events(view, "reminded")) == 1 and view["status"] == "open"
    await asyncio.wait_for(_delivered(surface, ask_id, "remind"), 3)
    manual_clock.advance(3600)
    await aye.tick()
    assert (await aye.get(ask_id))["outcome"] == "approval_timed_out"


async def test_a_question_is_reminded_by_the_defaults(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    config = Config.model_validate({"defaults": {"question_remind_after": "2h"}})
    aye = await start_aye(database_url, config, manual_clock)
    ask = await aye.ask(question="Ship it?", options=["yes", "no"])
    manual_clock.advance(2 * 3600)
    await aye.tick()
    await aye.tick()
    view = await aye.get(ask["id"], operator=True)
    assert len(events(view, "reminded")) == 1 and view["status"] == "open"


async def _delivered(surface: RecordingSurface, ask_id: str, action: str) -> None:
    while (ask_id, action) not in surface.delivered:
        surface.event.clear()
        await surface.event.wait()


@pytest.mark.parametrize(
    ("gate", "words"),
    [
        ({"approvals": 0}, "greater than or equal to 1"),
        ({"approvals": 6}, "less than or equal to 5"),
        ({"approvals": "2"}, "integer"),
        ({"remind_after": "1h"}, "remind_after must be shorter than timeout"),
        ({"remember_refusal": "8761h"}, "from 0s to 8760h"),
        ({"prevent_self_approval": "yes"}, "boolean"),
    ],
)
def test_policy_keys_are_checked_at_start(gate: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        policy(**gate)
    assert words in str(caught.value)


async def test_the_operator_sees_the_count_and_the_memory(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye, _ = await started(start_aye, database_url, manual_clock, approvals=2,
                           remember_refusal="3h")
    _, pending = await call(aye)
    ref = pending["ask"]["ref"]
    status, body = await aye.answer(ref, "approve")
    assert (status, body["outcome"], body["approvals"], body["needed"]) == (200, "taken", 1, 2)
    status, body = await aye.answer(ref, "approve")
    assert (status, body["error"]) == (409, "already_approved")
    view = await aye.get(ref, operator=True)
    assert view["approvals"] == {"needed": 2, "approvers": ["operator:local"]}
    assert "approvers" not in str(await aye.get(ref))  # the agent never learns who
    assert (await say(aye, pending["ask"]["id"], "github:bob", "refuse")).taken
    view = await aye.get(ref, operator=True)
    assert view["remembered_until"] > view["closed_at"]
