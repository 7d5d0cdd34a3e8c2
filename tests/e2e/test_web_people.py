"""People in the web inbox, on both stores: a person signed in sees only the asks they may
answer (their identity, a person they are, a bare kind of theirs), any other is no such ask to
them; they answer as themselves, checked like any answer (quorum counts people); and a gate's
step-up counts an approval only from a fresh inbox sign-in. The sessions are started in the
store as a sign-in would (the sign-in flows themselves: tests/e2e/test_sign_in*.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.config import Config
from core.app.timing import ManualClock
from core.domain import rules
from core.domain.answering import Attempt
from core.domain.responders import Responder
from core.domain.types import AgentInfo, NewAsk
from handlers.web.guard import WEB
from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, Aye, StartAye
from tests.e2e.test_web_pages import history
from tests.unit.test_web_harness import Operator, StartInbox, inboxes

ADA_GITHUB, ADA_SLACK = "github:ada-l", "slack:U0ADA0001"
PEOPLE = {
    "people": [{"name": "ada", "ids": [ADA_SLACK, ADA_GITHUB, "email:ada@example.com"]},
               {"name": "bob", "ids": ["github:bob-b"]}],
}
CONFIG = Config.model_validate({
    **PEOPLE,
    "agents": [],
    "gates": [
        {"operations": ["deploy."], "responders": ["person:ada", "person:bob", "operator:local"],
         "approvals": 2},
        {"operations": ["payroll."], "responders": ["person:ada", "operator:local"],
         "sign_in_within": "15m"},
    ],
})


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


class Person(Operator):
    """Someone signed in to the inbox as `identity` (a session in the store, as after a
    sign-in with Slack, GitHub or the organisation's provider)."""

    def __init__(self, aye: Aye, identity: str) -> None:
        super().__init__(aye)
        self.aye, self.identity = aye, identity

    async def sign_in(self, token: str = "") -> None:
        sessions = self.aye.app[WEB].sessions
        session = await sessions.start(self.identity, Responder.parse(self.identity).kind)
        self.client.session.cookie_jar.update_cookies({sessions.cookie: session.secret})


async def ask_for(aye: Aye, *responders: str) -> str:
    """A question for `responders` (and the operator, so that it can be asked with no surface
    running), asked through the core as an agent whose [[agents]] entry names them."""
    agent = AgentInfo("default", [Responder.parse(r) for r in (*responders, "operator:local")])
    ask, _ = await aye.asks.create_question(agent, NewAsk(question="Ship?", options=["yes", "no"]))
    return rules.ref(ask)


async def call(aye: Aye, operation: str) -> tuple[int, dict[str, Any]]:
    resp = await aye.client.post("/v1/calls", json={"operation": operation, "input": {"v": 1}},
                                 headers=AGENT_HEADERS)
    return resp.status, await resp.json()


async def refs_on(person: Operator, path: str = "/inbox") -> set[str]:
    html = await person.page(path)
    return {ref for ref in tuple(f"q{n}" for n in range(1, 10)) if f"/inbox/{ref}/answer" in html}


async def test_a_person_sees_only_the_asks_they_may_answer(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, CONFIG)
    mine = await ask_for(aye, ADA_GITHUB)                 # her identity
    via_person = await ask_for(aye, "person:ada")         # a person she is
    anyone_on_github = await ask_for(aye, "github")       # a bare kind of hers
    bobs = await ask_for(aye, "github:bob-b")
    operators = await ask_for(aye)
    # Her Slack identity alone: she answers as the identity she signed in with, as on Slack.
    slack_only = await ask_for(aye, ADA_SLACK)
    ada = Person(aye, ADA_GITHUB)
    await ada.sign_in()
    assert await refs_on(ada) == {mine, via_person, anyone_on_github}
    for other in (bobs, operators, slack_only):
        await ada.page(f"/inbox/{other}", status=404)
        resp = await ada.client.post(f"/inbox/{other}/answer", data={"option": "1"},
                                     allow_redirects=False)
        assert resp.status in (303, 403)
        assert (await aye.get(other, operator=True))["status"] == "open"
    operator = Operator(aye)  # the operator token still sees everything
    await operator.sign_in()
    assert {mine, via_person, anyone_on_github, bobs, operators} <= await refs_on(operator)


async def test_a_person_answers_as_themselves_and_sees_closed_asks_with_status_all(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, CONFIG)
    ref = await ask_for(aye, "person:ada")
    ada = Person(aye, ADA_GITHUB)
    await ada.sign_in()
    assert await ada.answer(ref, press="yes") == f"{ref} Answered: yes"
    entry = (await history(aye, ref))[-1]
    assert (entry["event"], entry["by"], entry["surface"]) == ("answered", ADA_GITHUB, "web")
    assert ref not in await refs_on(ada)
    html = await ada.page("/inbox?status=all")
    assert f"/inbox/{ref}" in html


async def test_a_quorum_counts_one_person_once_across_identities(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, CONFIG)
    status, body = await call(aye, "deploy.prod")
    assert status == 202
    ref = body["ask"]["ref"]
    ask = await aye.asks.find(ref)
    assert ask is not None
    # Ada approves from Slack (her slack: id), then tries again from the inbox as github:.
    first = await aye.asks.answer(ask, Attempt(Responder.parse(ADA_SLACK), "slack"), "approve")
    assert first.taken
    ada = Person(aye, ADA_GITHUB)
    await ada.sign_in()
    said = await ada.answer(ref, press="Approve")
    assert "another person's approval is needed" in said
    assert (await aye.get(ref, operator=True))["status"] == "open"
    bob = Person(aye, "github:bob-b")
    await bob.sign_in()
    assert "Answered" in await bob.answer(ref, press="Approve")
    assert (await aye.get(ref, operator=True))["status"] == "answered"


async def test_step_up_counts_an_approval_only_from_a_fresh_inbox_sign_in(
    start_inbox: StartInbox, database_url: str
) -> None:
    clock = ManualClock()
    aye = await start_inbox(database_url, CONFIG, clock)
    status, body = await call(aye, "payroll.run")
    assert status == 202
    ref = body["ask"]["ref"]
    # The API (the operator's CLI) is no inbox session: refused and recorded.
    resp = await aye.client.post(f"/v1/asks/{ref}/answer", json={"answer": "approve"},
                                 headers=OPERATOR_HEADERS)
    assert resp.status == 403 and (await resp.json())["error"] == "sign_in_required"
    ask = await aye.asks.find(ref)
    assert ask is not None
    slack = await aye.asks.answer(ask, Attempt(Responder.parse(ADA_SLACK), "slack"), "approve")
    assert slack.reason == "sign_in_required"
    refused = [e for e in await history(aye, ref) if e["event"] == "refused"]
    assert [e["why"] for e in refused] == ["sign_in_required", "sign_in_required"]
    # A sign-in older than 15 minutes is sent through sign-in again, back to the ask.
    ada = Person(aye, ADA_GITHUB)
    await ada.sign_in()
    clock.advance(16 * 60)
    form = ada.form(await ada.page(), ref)
    resp = await ada.client.post(form.action, data=form.data("Approve", {}, set()),
                                 allow_redirects=False)
    assert resp.status == 303
    assert resp.headers["Location"] == f"/login?next=%2Finbox%2F{ref}&again=1"
    assert (await aye.get(ref, operator=True))["status"] == "open"
    # Signed in again, just now: the approval counts.
    await ada.sign_in()
    assert "Answered" in await ada.answer(ref, press="Approve")
    view = await aye.get(ref, operator=True)
    assert (view["status"], view["answered_by"]) == ("answered", ADA_GITHUB)


async def test_a_refusal_counts_from_anywhere_under_step_up(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, CONFIG)
    _, body = await call(aye, "payroll.run")
    ask = await aye.asks.find(body["ask"]["ref"])
    assert ask is not None
    result = await aye.asks.answer(ask, Attempt(Responder.parse(ADA_SLACK), "slack"), "refuse")
    assert result.taken and result.ask is not None and result.ask.outcome == "approval_refused"



async def test_with_a_sign_in_set_up_its_people_can_be_asked_without_their_surface(
    start_aye: StartAye, database_url: str
) -> None:
    config = Config.model_validate({"defaults": {"responders": [ADA_GITHUB]}})
    off = await start_aye(database_url, config)
    resp = await off.client.post("/v1/asks", json={"question": "Ship?"}, headers=AGENT_HEADERS)
    assert (resp.status, (await resp.json())["error"]) == (422, "no_reachable_responder")
    env = {"GITHUB_CLIENT_ID": "aye-client", "GITHUB_CLIENT_SECRET": "aye-secret"}
    signing_in = await start_aye(database_url, config, env=env)
    resp = await signing_in.client.post("/v1/asks", json={"question": "Ship?"},
                                        headers=AGENT_HEADERS)
    assert resp.status == 201, await resp.text()
