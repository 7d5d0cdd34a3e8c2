"""Approval policy on GitHub, end to end (signed webhooks over HTTP, the real gidgethub against
the fake GitHub, SQLite and PostgreSQL): the issue's author, read from GitHub, cannot approve
(😕, `self_approval`); an author GitHub cannot give refuses the approval (😕,
`author_unknown`), never taken on a guess; a quorum counts distinct people (👍 for each
approval counted, 😕 for the same person again). And the author lookup itself: cached, through
the installation a webhook named or one looked up, failing closed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.config import Config
from core.app.ports import AuthorUnknown
from core.app.timing import ManualClock
from handlers.github import authors
from handlers.github.authors import CACHE_TTL_S, author_of
from handlers.github.surface import GitHubSurface
from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_github_e2e import COMMENT, ISSUE_COMMENTS, NUMBER, REPO, WORK, Hub, app_env
from tests.fake_github import FakeGitHub

ISSUE = r"/repos/owner/name/issues/42"
INSTALLATION = r"/repos/owner/name/installation"
CALL = {"operation": "deploy.prod", "input": {"version": "1.4.2"}, "work": WORK}


def gate(post_questions: bool = False, **policy: Any) -> Config:
    return Config.model_validate({"github": {"post_questions": post_questions}, "gates": [{
        "operations": ["deploy."], "responders": ["github", "operator:local"], "timeout": "1h",
        **policy}]})


async def started(
    start_aye: StartAye, database_url: str, fake: FakeGitHub, clock: ManualClock | None = None,
    **policy: Any,
) -> Hub:
    aye = await start_aye(database_url, gate(**policy), clock, env=app_env(fake))
    return Hub(aye, fake)


async def pending(hub: Hub) -> dict[str, Any]:
    resp = await hub.aye.client.post("/v1/calls", json=CALL, headers=AGENT_HEADERS)
    body = await resp.json()
    assert resp.status == 202, body
    return dict(body["ask"])


async def reacts(hub: Hub, login: str, body: str = "/answer approve") -> str:
    _, comment = await hub.say(body, login=login)
    return str((await hub.reaction(comment)).json_body["content"])


async def refusals(hub: Hub, ref: str) -> list[tuple[str, str]]:
    return [(e["by"], e["why"]) for e in await hub.history(ref) if e["event"] == "refused"]


def surface_of(hub: Hub) -> GitHubSurface:
    found = hub.aye.asks.parts.places["github"]
    assert isinstance(found, GitHubSurface)
    return found


# -- no self-approval ------------------------------------------------------------------------


async def test_the_issues_author_cannot_approve_and_another_person_can(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="alice")
    hub = await started(start_aye, database_url, fake_github, prevent_self_approval=True)
    ask = await pending(hub)
    waiting = asyncio.create_task(hub.aye.wait(ask["id"], timeout=30))

    assert await reacts(hub, "alice") == "confused"
    assert await refusals(hub, ask["ref"]) == [("github:alice", "self_approval")]
    assert (await hub.aye.get(ask["id"]))["status"] == "open"

    assert await reacts(hub, "Bob") == "+1"
    assert (await asyncio.wait_for(waiting, 5))["outcome"] == "approved"
    assert (await hub.aye.get(ask["id"], operator=True))["answered_by"] == "github:Bob"
    # Read from GitHub once (then cached), with the installation token the webhook's
    # installation gives: no installation look-up.
    [read] = fake_github.calls_matching("GET", ISSUE)
    assert read.status == 200 and (read.authorization or "").startswith("token ghs_")
    assert fake_github.calls_matching("GET", INSTALLATION) == []


async def test_the_author_may_still_refuse(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="alice")
    hub = await started(start_aye, database_url, fake_github, prevent_self_approval=True)
    ask = await pending(hub)

    assert await reacts(hub, "ALICE", "/answer refuse\nNot yet.") == "+1"
    view = await hub.aye.get(ask["id"])
    assert (view["outcome"], view["by"]) == ("approval_refused", "github:ALICE")


async def test_an_author_github_cannot_give_refuses_the_approval(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="alice")
    hub = await started(start_aye, database_url, fake_github, prevent_self_approval=True)
    ask = await pending(hub)
    fake_github.fail_next("GET", ISSUE, status=502)

    assert await reacts(hub, "bob") == "confused"
    assert await refusals(hub, ask["ref"]) == [("github:bob", "author_unknown")]
    view = await hub.aye.get(ask["id"], operator=True)
    assert view["status"] == "open" and view["answer"] is None

    # The failure is not remembered: once GitHub answers, the approval is taken.
    assert await reacts(hub, "bob") == "+1"
    assert (await hub.aye.get(ask["id"]))["outcome"] == "approved"


async def test_an_answer_from_the_api_finds_the_installation_itself_on_a_pull_request(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="alice", pull=True)
    fake_github.repo_installations[REPO] = 77
    hub = await started(start_aye, database_url, fake_github, prevent_self_approval=True)
    ask = await pending(hub)

    status, reply = await hub.aye.answer(ask["ref"], "approve")

    assert status == 200, reply
    assert (await hub.aye.get(ask["id"]))["outcome"] == "approved"
    assert [c.status for c in fake_github.calls_matching("GET", INSTALLATION)] == [200]
    assert [t.installation_id for t in fake_github.tokens_minted] == [77]


@pytest.mark.parametrize("broken", ["no_issue", "not_installed"])
async def test_an_author_that_cannot_be_read_is_503_over_the_api(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub, broken: str
) -> None:
    if broken == "not_installed":
        fake_github.open_issue(REPO, NUMBER, login="alice")
        fake_github.repo_installations[REPO] = None
    hub = await started(start_aye, database_url, fake_github, prevent_self_approval=True)
    ask = await pending(hub)

    status, reply = await hub.aye.answer(ask["ref"], "approve")

    assert (status, reply["error"]) == (503, "author_unknown"), reply
    assert await refusals(hub, ask["ref"]) == [("operator:local", "author_unknown")]
    assert (await hub.aye.get(ask["id"]))["status"] == "open"


# -- a quorum --------------------------------------------------------------------------------


async def test_a_quorum_of_two_counts_distinct_people(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    hub = await started(start_aye, database_url, fake_github, approvals=2)
    ask = await pending(hub)
    waiting = asyncio.create_task(hub.aye.wait(ask["id"], timeout=30))

    assert await reacts(hub, "bob") == "+1"
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    assert await reacts(hub, "bob") == "confused"
    assert await refusals(hub, ask["ref"]) == [("github:bob", "already_approved")]
    assert not waiting.done()

    assert await reacts(hub, "carol") == "+1"
    woke = await asyncio.wait_for(waiting, 5)
    assert woke["outcome"] == "approved"
    history = await hub.history(ask["ref"])
    [counted] = [e for e in history if e["event"] == "approved"]
    assert (counted["by"], counted["count"], counted["needed"]) == ("github:bob", 1, 2)
    [answered] = [e for e in history if e["event"] == "answered"]
    assert answered["approvers"] == ["github:bob", "github:carol"]
    assert fake_github.calls_matching("GET", ISSUE) == []  # no author needed


async def test_a_posted_quorum_shows_its_count_then_who_approved(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    hub = await started(start_aye, database_url, fake_github, post_questions=True, approvals=2)
    ask = await pending(hub)
    posted = await fake_github.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    assert "This needs 2 approvals from different people." in posted.json_body["body"]

    assert await reacts(hub, "bob") == "+1"
    counted = await fake_github.wait_for_call("PATCH", COMMENT, lambda c: c.status == 200)
    body = counted.json_body["body"]
    assert "So far 1 of 2 approvals: `bob`." in body and "@bob" not in body
    assert "/answer" in body  # still open: still says how to answer

    assert await reacts(hub, "carol") == "+1"
    closed = await fake_github.wait_for_call(
        "PATCH", COMMENT, lambda c: "approved by" in c.json_body["body"])
    assert "approved by @bob, @carol." in closed.json_body["body"]
    assert (await hub.aye.get(ask["id"]))["outcome"] == "approved"


# -- the look-up itself ----------------------------------------------------------------------


async def test_the_author_is_cached_for_a_while_and_a_refused_token_is_renewed(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub, manual_clock: ManualClock
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="alice")
    hub = await started(start_aye, database_url, fake_github, manual_clock)
    surface = surface_of(hub)

    assert await surface.author(WORK) == "github:alice"
    assert await surface.author({"github": {"repo": "OWNER/name", "number": NUMBER}}) == (
        "github:alice"
    )
    assert len(fake_github.calls_matching("GET", ISSUE)) == 1

    manual_clock.advance(CACHE_TTL_S + 1)
    fake_github.expire_tokens()
    assert await surface.author(WORK) == "github:alice"
    assert [c.status for c in fake_github.calls_matching("GET", ISSUE)] == [200, 401, 200]


async def test_the_lookup_fails_closed(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = await started(start_aye, database_url, fake_github)
    surface = surface_of(hub)

    with pytest.raises(AuthorUnknown, match="404"):
        await surface.author(WORK)
    with pytest.raises(AuthorUnknown, match="not a GitHub issue"):
        await surface.author({"github": {"repo": REPO}})
    fake_github.open_issue(REPO, NUMBER, login="alice")
    fake_github.fail_next("GET", ISSUE, status=403)
    with pytest.raises(AuthorUnknown, match="403"):
        await surface.author(WORK)
    fake_github.issue_delay = 0.5
    monkeypatch.setattr(authors, "LOOKUP_TIMEOUT_S", 0.1)  # GitHub's own webhook limit is 10 s
    with pytest.raises(AuthorUnknown, match="unreachable: TimeoutError"):
        await surface.author(WORK)
    await fake_github.close()
    with pytest.raises(AuthorUnknown, match="unreachable"):
        await surface.author(WORK)


def test_an_apps_issue_has_no_author_and_a_reply_without_one_is_unknown() -> None:
    assert author_of({"user": {"login": "dependabot[bot]", "type": "Bot"}}) is None
    assert author_of({"user": {"login": "Alice", "type": "User"}}) == "github:Alice"
    for bad in ({}, {"user": None}, {"user": {"login": "not a login", "type": "User"}}):
        with pytest.raises(AuthorUnknown):
            author_of(bad)

