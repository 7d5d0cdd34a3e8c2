"""A comment acts once, by its own id, and never before its ask; an answer that fails leaves
nothing behind; and no signed delivery gets a 5xx for what it carries. End to end: signed
webhooks over HTTP to the real app, the real gidgethub against the fake GitHub, on SQLite and
PostgreSQL."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy import select

from core.app.change import Changes
from core.app.service import Service
from core.app.timing import ManualClock
from store.db import Conn, Store
from store.posts import DELIVERIES
from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_github_e2e import (
    NUMBER,
    REACTIONS,
    REPO,
    SECRET,
    Hub,
    app_env,
    config,
    events,
    follow,
    reactions_on,
)
from tests.fake_github import FakeGitHub, issue_comment_event, pull_request_review_event, sign


@pytest.fixture
async def hub(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    aye = await start_aye(database_url, config=config(), env=app_env(fake_github))
    return Hub(aye, fake_github)


async def deliveries(hub: Hub) -> list[str]:
    """What the store remembers as acted on."""
    async with hub.aye.asks.parts.store.read() as conn:
        return [row.delivery_id for row in (await conn.execute(select(DELIVERIES))).all()]


# -- a comment acts once, by its own id ----------------------------------------------------


async def test_a_captured_delivery_replayed_under_new_ids_answers_nothing(hub: Hub) -> None:
    first = await hub.ask(question="Deploy?", options=["yes", "no"])
    captured = issue_comment_event(body="/answer yes", login="octocat", repo=REPO, number=NUMBER)
    comment_id = int(captured["comment"]["id"])
    assert (await hub.send("issue_comment", captured)).status == 200
    await hub.reaction(comment_id)

    replayed = await hub.send("issue_comment", captured)  # a fresh X-GitHub-Delivery
    later = await hub.ask(question="Roll back?", options=["yes", "no"])
    again = await hub.send("issue_comment", captured)

    assert (replayed.status, again.status) == (200, 200)
    assert events(await hub.history(first["ref"])) == ["created", "answered"]
    assert events(await hub.history(later["ref"])) == ["created"]
    assert (await hub.aye.get(later["id"]))["status"] == "open"
    assert reactions_on(hub.fake, comment_id) == ["+1"]
    assert len(hub.fake.calls_matching("POST", REACTIONS)) == 1
    assert f"comment:{comment_id}" in await deliveries(hub)


async def test_a_replayed_review_answers_nothing(hub: Hub) -> None:
    ask = await hub.ask(question="Merge?", options=["yes", "no"])
    review = pull_request_review_event(body="/answer no", login="mallory", repo=REPO,
                                       number=NUMBER)

    await hub.send("pull_request_review", review)
    await hub.send("pull_request_review", review)

    assert events(await hub.history(ask["ref"])) == ["created", "refused"]


async def test_a_comment_with_no_ask_is_reacted_to_once(hub: Hub) -> None:
    captured = issue_comment_event(body="/answer yes", login="octocat", repo=REPO, number=NUMBER)
    comment_id = int(captured["comment"]["id"])

    await hub.send("issue_comment", captured)
    await hub.reaction(comment_id)
    await hub.send("issue_comment", captured)
    await hub.send("issue_comment", captured)
    # A later comment's reaction lands after any the replays could have caused.
    _, later = await hub.say("/answer no")
    await hub.reaction(later)

    assert reactions_on(hub.fake, comment_id) == ["confused"]
    assert len(hub.fake.calls_matching("POST", REACTIONS)) == 2


async def test_a_comment_written_before_the_ask_does_not_answer_it(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    clock = ManualClock(1_800_000_000.75)
    follow(fake_github, clock)
    hub = Hub(await start_aye(database_url, config=config(), clock=clock,
                              env=app_env(fake_github)), fake_github)
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    second_before = datetime.fromtimestamp(1_799_999_999, UTC)
    same_second = datetime.fromtimestamp(1_800_000_000, UTC)

    _, stale = await hub.say("/answer yes", created_at=second_before)
    stale_review = pull_request_review_event(body="/answer yes", login="octocat", repo=REPO,
                                             number=NUMBER, submitted_at=second_before)
    await hub.send("pull_request_review", stale_review)
    assert (await hub.reaction(stale)).json_body == {"content": "confused"}
    assert events(await hub.history(ask["ref"])) == ["created"]

    _, fresh = await hub.say("/answer no", created_at=same_second)
    assert (await hub.reaction(fresh)).json_body == {"content": "+1"}
    assert (await hub.aye.get(ask["id"]))["answer"]["value"] == "no"


async def test_the_command_is_plain_ascii(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])

    _, long_s = await hub.say("/an\u017fwer yes")  # ſ casefolds to s
    _, shouted = await hub.say("/ANSWER yes")

    assert (await hub.reaction(shouted)).json_body == {"content": "+1"}
    assert [cid for _, cid, _ in hub.fake.reactions] == [shouted]
    assert reactions_on(hub.fake, long_s) == []
    assert events(await hub.history(ask["ref"])) == ["created", "answered"]
    assert (await hub.aye.get(ask["id"]))["answer"]["value"] == "yes"


# -- an answer that fails leaves nothing behind --------------------------------------------


class StoreThatFails:
    """The app's store, but a write armed to fail does, just before its commit (so all it
    wrote is rolled back), as a store that goes away in the middle of an answer."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.fail_next_write = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Conn]:
        async with self.store.write() as conn:
            yield conn
            if self.fail_next_write:
                self.fail_next_write = False
                raise ConnectionResetError("the store went away")


class AnswersThatFailOnce(Service):
    """The app's service (same store, clock, signals, surfaces, stream), whose first answer's
    own transaction fails."""

    def __init__(self, asks: Service) -> None:
        real = asks.parts
        self.failing = StoreThatFails(real.store)
        store = cast(Store, self.failing)
        changes = Changes(store, real.clock, real.signals, real.places, real.tally)
        super().__init__(dataclasses.replace(real, store=store, change=changes))
        self.failures = 1

    async def answer_on_work(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            self.failing.fail_next_write = True
        return await super().answer_on_work(*args, **kwargs)


async def test_an_answer_that_failed_is_answered_by_its_redelivery(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    desk = hub.aye.asks.parts.places["github"].desk  # type: ignore[attr-defined]
    desk.asks = AnswersThatFailOnce(hub.aye.asks)
    payload = issue_comment_event(body="/answer yes", login="octocat", repo=REPO, number=NUMBER)

    failed = await hub.send("issue_comment", payload, "delivery-1")

    assert failed.status == 500
    assert await deliveries(hub) == []  # nothing of it kept: neither the answer nor the comment
    assert events(await hub.history(ask["ref"])) == ["created"]
    redelivered = await hub.send("issue_comment", payload, "delivery-1")
    assert redelivered.status == 200
    assert (await hub.reaction(int(payload["comment"]["id"]))).json_body == {"content": "+1"}
    assert (await hub.aye.get(ask["id"]))["answer"]["value"] == "yes"


# -- work that names another endpoint ------------------------------------------------------


@pytest.mark.parametrize("repo", ["a/..", "a/.", "owner/.."])
async def test_a_repo_named_dot_or_dot_dot_is_refused(hub: Hub, repo: str) -> None:
    work = {"github": {"repo": repo, "number": 1}}
    resp = await hub.aye.client.post("/v1/asks", json={"question": "Deploy?", "work": work},
                                     headers=AGENT_HEADERS)
    body = await resp.json()
    assert (resp.status, body["error"], body["field"]) == (422, "invalid_field", "work.github.repo")
    call = {"operation": "deploy.prod", "work": work}
    resp = await hub.aye.client.post("/v1/calls", json=call, headers=AGENT_HEADERS)
    assert resp.status == 422 and (await resp.json())["field"] == "work.github.repo"


async def test_a_repo_with_dots_in_its_name_is_fine(hub: Hub) -> None:
    await hub.aye.ask(question="Deploy?", work={"github": {"repo": "a/..b", "number": 1}})
    await hub.aye.ask(question="Deploy?", work={"github": {"repo": "a/.github", "number": 1}})


# -- no 5xx for what a signed delivery carries -----------------------------------------------


async def post_signed(hub: Hub, body: bytes, delivery: str = "d-1",
                      content_type: str = "application/json") -> tuple[int, Any]:
    headers = {"Content-Type": content_type, "X-GitHub-Event": "issue_comment",
               "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sign(body, SECRET)}
    resp = await hub.aye.client.post("/github/webhook", data=body, headers=headers)
    return resp.status, await resp.json()


async def test_a_delivery_id_over_100_characters_is_400(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    payload = issue_comment_event(body="/answer yes", login="octocat", repo=REPO, number=NUMBER)

    status, reply = await post_signed(hub, json.dumps(payload).encode(), delivery="d" * 101)

    assert (status, reply["error"]) == (400, "malformed")
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    status, _ = await post_signed(hub, json.dumps(payload).encode(), delivery="d" * 100)
    assert status == 200
    # It acted, to the end: the answer is in and GitHub has its thumbs-up (nothing left in flight).
    await hub.reaction(int(payload["comment"]["id"]))
    assert (await hub.aye.get(ask["id"]))["status"] == "answered"


async def test_nul_and_lone_surrogates_in_a_comment_are_kept_out_of_the_store(hub: Hub) -> None:
    ask = await hub.ask(question="Why?")
    payload = issue_comment_event(body="/answer go\x00 now\nnote \x00 \ud800 here",
                                  login="octocat", repo=REPO, number=NUMBER)

    status, _ = await post_signed(hub, json.dumps(payload).encode())

    assert status == 200
    answer = (await hub.aye.wait(ask["id"]))["answer"]
    assert answer == {"value": "go\ufffd now", "option": None, "note": "note \ufffd \ufffd here"}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda p: p["comment"]["user"].update(login="octo\x00cat"), "NUL in a login"),
        (lambda p: p["comment"]["user"].update(login="octo\ud800"), "lone surrogate in a login"),
        (lambda p: p["repository"].update(full_name="owner/na\x00me"), "NUL in the repository"),
        (lambda p: p["comment"].update(id=10**120), "an id no store keeps"),
        (lambda p: p["comment"].update(created_at="yesterday"), "not a time"),
        (lambda p: p.update(action=["created"]), "an action that is not text"),
    ],
    ids=["nul-login", "surrogate-login", "nul-repo", "huge-id", "bad-time", "list-action"],
)
async def test_a_signed_payload_that_no_store_could_keep_is_400(
    hub: Hub, change: Any, why: str
) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    payload = issue_comment_event(body="/answer yes", login="octocat", repo=REPO, number=NUMBER)
    change(payload)

    status, reply = await post_signed(hub, json.dumps(payload).encode())

    assert (status, reply["error"]) == (400, "malformed"), why
    assert (await hub.aye.get(ask["id"]))["status"] == "open"


async def test_a_body_nested_too_deep_or_in_an_unknown_charset_is_400(hub: Hub) -> None:
    deep = b'{"a":' * 20_000 + b"1" + b"}" * 20_000

    assert (await post_signed(hub, deep))[0] == 400
    assert (await post_signed(hub, b"[" * 20_000 + b"]" * 20_000))[0] == 400
    body = json.dumps({"action": "created"}).encode()
    assert (await post_signed(hub, body, content_type="application/json; charset=nope"))[0] == 400
    # The webhook still works.
    _, comment = await hub.say("/answer yes")
    assert (await hub.reaction(comment)).json_body == {"content": "confused"}
