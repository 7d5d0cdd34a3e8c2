"""The GitHub surface end to end: signed webhooks over HTTP to the real app, the real gidgethub
against the fake GitHub, the real outbox loop, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.config import Config
from core.app.ports import POST
from core.app.timing import Clock, ManualClock
from handlers.github.messages import marker
from store import outbox
from tests.conftest import OPERATOR_HEADERS, Aye, StartAye, eventually
from tests.fake_github import (
    Delivery,
    FakeGitHub,
    GitHubCall,
    deliver,
    issue_comment_event,
    load_event,
    pull_request_review_event,
    sign,
)

SECRET = "s3cret"
REPO = "owner/name"
NUMBER = 42
WORK = {"github": {"repo": REPO, "number": NUMBER}}
REACTIONS = r"/repos/owner/name/issues/comments/\d+/reactions"
ISSUE_COMMENTS = r"/repos/owner/name/issues/42/comments"
COMMENT = r"/repos/owner/name/issues/comments/\d+"


def config(post_questions: bool = False) -> Config:
    return Config.model_validate(
        {
            "defaults": {"responders": ["github:octocat", "operator:local"]},
            "github": {"post_questions": post_questions},
        }
    )


def app_env(fake: FakeGitHub) -> dict[str, str]:
    return {
        "GITHUB_WEBHOOK_SECRET": SECRET,
        "GITHUB_APP_ID": fake.app_id,
        "GITHUB_PRIVATE_KEY": fake.private_key_pem,
        "GITHUB_API_URL": fake.api_url,
    }


def follow(fake: FakeGitHub, clock: Clock) -> None:
    """The fake's token expiry follows the app's clock, so moving it expires tokens."""
    fake.clock = lambda: datetime.fromtimestamp(clock.now(), UTC)


@dataclass
class Hub:
    """A running aye with the GitHub surface on, and the fake GitHub it talks to."""

    aye: Aye
    fake: FakeGitHub

    async def send(
        self, event: str, payload: dict[str, Any] | bytes, delivery_id: str | None = None,
        secret: str | None = SECRET, **kwargs: Any,
    ) -> Delivery:
        url = str(self.aye.client.make_url("/github/webhook"))
        return await deliver(
            self.aye.client.session, url, event, payload, secret, delivery_id, **kwargs
        )

    async def say(
        self, body: str, login: str = "octocat", delivery_id: str | None = None, **kwargs: Any
    ) -> tuple[Delivery, int]:
        """`login` comments `body` on the issue; returns the reply and the comment id."""
        payload = issue_comment_event(body=body, login=login, repo=REPO, number=NUMBER, **kwargs)
        reply = await self.send("issue_comment", payload, delivery_id)
        assert reply.status == 200, reply.text
        return reply, int(payload["comment"]["id"])

    async def reaction(self, comment_id: int) -> GitHubCall:
        """The reaction added to a comment (waits for it)."""
        return await self.fake.wait_for_call(
            "POST", rf"/repos/owner/name/issues/comments/{comment_id}/reactions",
            lambda call: call.status == 201,
        )

    async def history(self, ref: str) -> list[dict[str, Any]]:
        return list((await self.aye.get(ref, operator=True))["history"])

    async def ask(self, **body: Any) -> dict[str, Any]:
        return await self.aye.ask(**{"work": WORK, **body})


def reactions_on(fake: FakeGitHub, comment_id: int) -> list[str]:
    return [content for _, cid, content in fake.reactions if cid == comment_id]


def events(history: list[dict[str, Any]]) -> list[str]:
    return [entry["event"] for entry in history]


@pytest.fixture
async def hub(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    aye = await start_aye(database_url, config=config(), env=app_env(fake_github))
    return Hub(aye, fake_github)


# -- answers -----------------------------------------------------------------------------


async def test_a_responders_answer_wakes_the_agent_and_gets_a_thumbs_up(hub: Hub) -> None:
    ask = await hub.ask(question="Which plan?", options=["a", "b", "c"])
    parked = asyncio.create_task(hub.aye.wait(ask["id"], timeout=10))

    _, comment_id = await hub.say("/answer 2\nb is cheaper.\n\nShip it Monday.")

    woken = await asyncio.wait_for(parked, 10)
    assert woken["status"] == "answered"
    assert woken["answer"] == {
        "value": "b", "option": 2, "note": "b is cheaper.\n\nShip it Monday."
    }
    call = await hub.reaction(comment_id)
    assert call.json_body == {"content": "+1"}
    assert call.authorization is not None and call.authorization.startswith("token ghs_")
    # GITHUB_API_URL has a path, as on GitHub Enterprise Server: every call kept it.
    assert hub.fake.api_url.endswith("/api/v3")
    assert all(c.full_path.startswith("/api/v3/") for c in hub.fake.calls)
    view = await hub.aye.get(ask["ref"], operator=True)
    assert (view["answered_by"], view["surface"]) == ("github:octocat", "github")
    assert reactions_on(hub.fake, comment_id) == ["+1"]


async def test_an_option_by_its_text_and_on_a_pull_request(hub: Hub) -> None:
    ask = await hub.ask(question="Merge?", options=["Yes", "No"])

    _, comment_id = await hub.say("/answer   yes  ", is_pull_request=True)

    assert (await hub.reaction(comment_id)).json_body == {"content": "+1"}
    answer = (await hub.aye.get(ask["id"]))["answer"]
    assert answer == {"value": "Yes", "option": 1, "note": None}


async def test_someone_not_a_responder_gets_confused_and_the_ask_stays_open(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])

    _, comment_id = await hub.say("/answer yes", login="mallory")

    assert (await hub.reaction(comment_id)).json_body == {"content": "confused"}
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    refused = (await hub.history(ask["ref"]))[-1]
    assert refused["event"] == "refused"
    assert (refused["by"], refused["why"], refused["surface"]) == (
        "github:mallory", "not_a_responder", "github"
    )


async def test_an_answer_that_is_not_an_option_is_refused(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])

    _, comment_id = await hub.say("/answer maybe")

    assert (await hub.reaction(comment_id)).json_body == {"content": "confused"}
    assert (await hub.history(ask["ref"]))[-1]["why"] == "invalid_answer"
    assert (await hub.aye.get(ask["id"]))["status"] == "open"


async def test_an_answer_after_the_ask_closed_is_confused_and_recorded(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    status, _ = await hub.aye.answer(ask["ref"], "no")
    assert status == 200

    _, plain = await hub.say("/answer yes")
    _, with_ref = await hub.say(f"/answer {ask['ref']} yes")

    assert (await hub.reaction(plain)).json_body == {"content": "confused"}
    assert (await hub.reaction(with_ref)).json_body == {"content": "confused"}
    history = await hub.history(ask["ref"])
    late = [(e["event"], e["by"], e["why"]) for e in history if e["event"] == "late"]
    # Both recorded: the ref-less one on the issue's newest ask, the other on the ask it names.
    assert late == [("late", "github:octocat", "answered")] * 2
    assert (await hub.aye.get(ask["id"]))["answer"]["value"] == "no"


async def test_answer_with_no_ask_here_is_confused(hub: Hub) -> None:
    _, comment_id = await hub.say("/answer yes")

    assert (await hub.reaction(comment_id)).json_body == {"content": "confused"}


async def test_several_open_asks_need_the_ref(hub: Hub) -> None:
    first = await hub.ask(question="Deploy?", options=["yes", "no"])
    second = await hub.ask(question="Notify?", options=["yes", "no"])

    _, ambiguous = await hub.say("/answer yes")
    assert (await hub.reaction(ambiguous)).json_body == {"content": "confused"}
    for ask in (first, second):
        entry = (await hub.history(ask["ref"]))[-1]
        assert (entry["event"], entry["why"]) == ("refused", "ambiguous")

    _, by_ref = await hub.say(f"/answer {second['ref'].upper()} no")
    assert (await hub.reaction(by_ref)).json_body == {"content": "+1"}
    assert (await hub.aye.get(second["id"]))["answer"]["value"] == "no"
    assert (await hub.aye.get(first["id"]))["status"] == "open"

    # One open ask left: its ref still works.
    _, last = await hub.say(f"/answer {first['ref']} yes")
    assert (await hub.reaction(last)).json_body == {"content": "+1"}
    assert (await hub.aye.get(first["id"]))["answer"]["value"] == "yes"


async def test_a_submitted_review_answers_without_a_reaction(hub: Hub) -> None:
    ask = await hub.ask(question="Good to merge?", options=["approve it", "hold"])
    payload = pull_request_review_event(
        body="/answer approve it\nNice work.", login="octocat", repo=REPO, number=NUMBER
    )

    reply = await hub.send("pull_request_review", payload)

    assert reply.status == 200
    got = await hub.aye.wait(ask["id"])
    assert got["answer"] == {"value": "approve it", "option": 1, "note": "Nice work."}
    assert hub.fake.calls_matching("POST", REACTIONS) == []


async def test_a_sensitive_ask_is_refused_on_github(hub: Hub) -> None:
    ask = await hub.ask(question="The passphrase?", sensitive=True)

    _, comment_id = await hub.say("/answer hunter2")

    assert (await hub.reaction(comment_id)).json_body == {"content": "confused"}
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    assert (await hub.history(ask["ref"]))[-1]["why"] == "sensitive"


# -- what is ignored -----------------------------------------------------------------------


async def test_edited_deleted_bot_and_plain_comments_answer_nothing(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])

    _, edited = await hub.say("/answer yes", action="edited")
    _, deleted = await hub.say("/answer yes", action="deleted")
    _, by_bot = await hub.say("/answer yes", login="dependabot", sender_type="Bot")
    _, chatter = await hub.say("Looks good to me.\n/answer yes")
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    assert events(await hub.history(ask["ref"])) == ["created"]

    # A later answer's reaction lands, and none came before it.
    _, answer = await hub.say("/answer no")
    await hub.reaction(answer)
    assert [cid for _, cid, _ in hub.fake.reactions] == [answer]
    assert (await hub.aye.get(ask["id"]))["answer"]["value"] == "no"
    assert {edited, deleted, by_bot, chatter}.isdisjoint({cid for _, cid, _ in hub.fake.reactions})


# -- deliveries ----------------------------------------------------------------------------


async def test_a_redelivery_is_acted_on_once_even_across_a_restart(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    first_app = await start_aye(database_url, config=config(), env=app_env(fake_github))
    hub = Hub(first_app, fake_github)
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    reply, comment_id = await hub.say("/answer yes")
    await hub.reaction(comment_id)

    again, _ = await hub.say("/answer yes", delivery_id=reply.delivery_id, comment_id=comment_id)
    await first_app.client.close()
    restarted = Hub(
        await start_aye(database_url, config=config(), env=app_env(fake_github)), fake_github
    )
    after, _ = await restarted.say(
        "/answer yes", delivery_id=reply.delivery_id, comment_id=comment_id
    )

    assert (again.status, after.status) == (200, 200)
    assert events(await restarted.history(ask["ref"])) == ["created", "answered"]
    # A fresh delivery of the same words is a new act: it is refused as late.
    _, fresh = await restarted.say("/answer yes")
    assert (await restarted.reaction(fresh)).json_body == {"content": "confused"}
    assert reactions_on(fake_github, comment_id) == ["+1"]
    assert len(fake_github.calls_matching("POST", REACTIONS)) == 2


async def test_a_bad_signature_is_401_and_changes_nothing(hub: Hub) -> None:
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    payload = issue_comment_event(body="/answer yes", login="octocat", repo=REPO, number=NUMBER)
    body = json.dumps(payload).encode()

    wrong = await hub.send("issue_comment", payload, "d-1", secret="not the secret")
    missing = await hub.send("issue_comment", payload, "d-1", secret=None)
    forged = await hub.send("issue_comment", payload, "d-1", signature="sha256=00")
    # The SHA-1 header alone is not enough, even when right.
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    legacy_only = await _post_raw(hub, body, {"X-Hub-Signature": sha1}, "issue_comment", "d-1")

    for refused in (wrong, missing, forged):
        assert refused.status == 401
        assert json.loads(refused.text)["error"] == "bad_signature"
    assert legacy_only[0] == 401
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    assert events(await hub.history(ask["ref"])) == ["created"]
    # The refused id was not taken: the genuine delivery with it is acted on.
    good = await hub.send("issue_comment", payload, "d-1")
    assert good.status == 200
    assert (await hub.aye.get(ask["id"]))["status"] == "answered"


async def _post_raw(
    hub: Hub, body: bytes, headers: dict[str, str], event: str | None, delivery: str | None
) -> tuple[int, dict[str, Any]]:
    sent = {"Content-Type": "application/json", **headers}
    if event is not None:
        sent["X-GitHub-Event"] = event
    if delivery is not None:
        sent["X-GitHub-Delivery"] = delivery
    resp = await hub.aye.client.post("/github/webhook", data=body, headers=sent)
    return resp.status, await resp.json()


async def test_malformed_deliveries_are_400_and_ping_is_200(hub: Hub) -> None:
    def signed(body: bytes) -> dict[str, str]:
        return {"X-Hub-Signature-256": sign(body, SECRET)}

    not_json = b"{not json"
    listed = b"[1, 2]"
    hollow = json.dumps({"action": "created", "comment": {"body": "/answer yes"}}).encode()
    ok = json.dumps(load_event("ping.with-app_id")).encode()

    assert (await _post_raw(hub, not_json, signed(not_json), "issue_comment", "m-1"))[0] == 400
    assert (await _post_raw(hub, listed, signed(listed), "issue_comment", "m-2"))[0] == 400
    assert (await _post_raw(hub, hollow, signed(hollow), "issue_comment", "m-3"))[0] == 400
    assert (await _post_raw(hub, ok, signed(ok), None, "m-4"))[0] == 400
    assert (await _post_raw(hub, ok, signed(ok), "ping", None))[0] == 400
    status, reply = await _post_raw(hub, ok, signed(ok), "ping", "m-5")
    assert (status, reply) == (200, {"ok": True, "event": "ping"})
    other = await hub.send("push", {"ref": "refs/heads/main"})
    assert other.status == 200


# -- auth ------------------------------------------------------------------------------


async def test_the_app_token_is_cached_across_deliveries_and_renewed_near_expiry(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub, manual_clock: ManualClock
) -> None:
    follow(fake_github, manual_clock)
    aye = await start_aye(
        database_url, config=config(), clock=manual_clock, env=app_env(fake_github)
    )
    hub = Hub(aye, fake_github)
    await hub.ask(question="Deploy?", options=["yes", "no"])

    _, one = await hub.say("/answer yes", login="mallory")
    _, two = await hub.say("/answer yes", login="eve")
    first, second = await hub.reaction(one), await hub.reaction(two)
    assert len(fake_github.tokens_minted) == 1
    assert first.authorization == second.authorization

    manual_clock.advance(56 * 60)  # the hour-long token has 4 minutes left: renew it
    _, three = await hub.say("/answer yes", login="trudy")
    third = await hub.reaction(three)

    assert len(fake_github.tokens_minted) == 2
    assert third.authorization == f"token {fake_github.tokens_minted[1].token}"
    health = await (await aye.client.get("/healthz")).json()
    assert health["surfaces"]["github"]["on"] is True
    assert health["surfaces"]["github"]["auth"] == "app"
    assert health["surfaces"]["github"]["deliveries"] == 3
    assert health["surfaces"]["github"]["tokens_minted"] == 2


async def test_a_plain_token_works_instead_of_an_app(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    env = {"GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_TOKEN": fake_github.plain_token,
           "GITHUB_API_URL": fake_github.api_url}
    hub = Hub(await start_aye(database_url, config=config(), env=env), fake_github)
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])

    _, comment_id = await hub.say("/answer yes")

    assert (await hub.reaction(comment_id)).authorization == f"token {fake_github.plain_token}"
    assert (await hub.aye.get(ask["id"]))["status"] == "answered"
    assert fake_github.tokens_minted == []
    health = await (await hub.aye.client.get("/healthz")).json()
    assert health["surfaces"]["github"]["auth"] == "token"
    # A GitHub responder is reached on GitHub work only.
    elsewhere = {"slack": {"channel": "C0123ABCD", "thread_ts": "1700000000.000100"}}
    github_only = Config.model_validate({"defaults": {"responders": ["github:octocat"]}})
    lone = Hub(await start_aye(database_url, config=github_only, env=env), fake_github)
    await lone.aye.ask(question="Here?", work=WORK)
    await lone.aye.ask(expect=422, question="There?", work=elsewhere)


# -- faults ----------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["502", "secondary", "429", "401"])
async def test_a_failed_reaction_is_retried_until_it_lands_and_the_answer_stands(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub,
    manual_clock: ManualClock, fault: str,
) -> None:
    follow(fake_github, manual_clock)
    aye = await start_aye(
        database_url, config=config(), clock=manual_clock, env=app_env(fake_github)
    )
    hub = Hub(aye, fake_github)
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    if fault == "502":
        fake_github.fail_next("POST", REACTIONS, status=502, times=2)
    elif fault == "401":
        _, warm_up = await hub.say("/answer yes", login="mallory")
        await hub.reaction(warm_up)
        fake_github.expire_tokens()  # revoked early: GitHub says 401 to the cached token
    else:
        status = 429 if fault == "429" else 403
        fake_github.fail_next("POST", REACTIONS, status=status, secondary_rate_limit=True,
                              retry_after=30)

    _, comment_id = await hub.say("/answer yes")

    failed = await fake_github.wait_for_call("POST", REACTIONS, lambda c: c.status >= 400)
    assert (await aye.get(ask["id"]))["answer"]["value"] == "yes"
    waits = []
    while not reactions_on(fake_github, comment_id):
        due = await _rescheduled(aye, manual_clock, comment_id, fake_github)
        if due is None:
            break
        waits.append(round(due - manual_clock.now()))
        manual_clock.advance(due - manual_clock.now() + 0.5)
        # ManualClock.sleep wakes on a move only if the sleeper was already asleep: a loop
        # between its due-time read and its sleep would miss this move. The poke cannot be missed.
        aye.asks.parts.signals.outbox_poke.set()
    await hub.reaction(comment_id)
    assert failed.status in (502, 403, 429, 401)
    assert reactions_on(fake_github, comment_id) == ["+1"]
    # A growing backoff after each 5xx; GitHub's Retry-After after a rate limit.
    if fault == "502":
        assert len(waits) == 2 and 0 < waits[0] < waits[1]
    elif fault == "401":
        assert len(waits) == 1 and len(fake_github.tokens_minted) == 2
    else:
        assert waits == [30]


async def _rescheduled(
    aye: Aye, clock: ManualClock, comment_id: int, fake: FakeGitHub
) -> float | None:
    """When the failed reaction is due again; None once it has landed."""
    async def settled() -> bool:
        due = await outbox.next_due(aye.asks.parts.store)
        return bool(reactions_on(fake, comment_id)) or (due is not None and due > clock.now())

    await eventually(settled)
    return None if reactions_on(fake, comment_id) else await outbox.next_due(aye.asks.parts.store)


# -- posting questions -----------------------------------------------------------------


@pytest.fixture
async def posting(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    aye = await start_aye(database_url, config=config(post_questions=True),
                          env=app_env(fake_github))
    return Hub(aye, fake_github)


async def test_post_questions_posts_once_and_edits_on_close(posting: Hub) -> None:
    hub = posting
    ask = await hub.ask(question="Which region?", options=["eu-west", "us-east"],
                        context="The EU one is cheaper.")

    posted = await hub.fake.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    text = posted.json_body["body"]
    assert "/answer 1" in text and "/answer eu-west" in text and ask["ref"] in text
    assert "1. eu-west\n2. us-east" in text and "@octocat" in text and "Deadline:" in text
    assert marker(ask["id"]) in text and not text.startswith("/answer")
    [comment] = hub.fake.comments_on(REPO, NUMBER)

    async def recorded() -> bool:
        return "posted" in events(await hub.history(ask["ref"]))

    await eventually(recorded)
    entry = (await hub.history(ask["ref"]))[1]
    assert (entry["event"], entry["surface"], entry["where"]) == ("posted", "github", "owner/name#42")

    _, answer = await hub.say("/answer 2")
    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    await hub.reaction(answer)

    assert edited.path.endswith(f"/{comment['id']}")
    assert "answered by @octocat: **us-east**" in edited.json_body["body"]
    assert len(hub.fake.calls_matching("POST", ISSUE_COMMENTS)) == 1
    assert len(hub.fake.calls_matching("GET", r"/repos/owner/name/installation")) == 1


async def test_a_posted_sensitive_question_cannot_be_answered_there(posting: Hub) -> None:
    hub = posting
    ask = await hub.ask(question="The passphrase?", sensitive=True)
    posted = await hub.fake.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    assert "cannot be given in a public comment" in posted.json_body["body"]
    assert "/answer <your answer>" not in posted.json_body["body"]

    status, _ = await hub.aye.answer(ask["ref"], "hunter2")
    assert status == 200

    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    assert "answered by the operator." in edited.json_body["body"]
    assert "hunter2" not in edited.json_body["body"]


async def test_a_withdrawn_question_says_so(posting: Hub) -> None:
    hub = posting
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    await hub.fake.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)

    resp = await hub.aye.client.delete(f"/v1/asks/{ask['id']}", headers=OPERATOR_HEADERS)
    assert resp.status == 200

    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    assert "withdrawn." in edited.json_body["body"]


async def test_a_post_whose_recording_was_lost_is_adopted_not_repeated(hub: Hub) -> None:
    # post_questions is off here, so the outbox never posts: the test plays the delivery.
    ask = await hub.ask(question="Deploy?", options=["yes", "no"])
    row = await hub.aye.asks.find(ask["id"])
    assert row is not None
    # As if an earlier attempt posted, then crashed before recording where.
    earlier = hub.fake.add_comment(REPO, NUMBER, f"Deploy?\n\n{marker(ask['id'])}",
                                   login="aye[bot]", user_type="Bot")

    await hub.aye.asks.parts.places["github"].deliver(row, POST, None)

    location = await hub.aye.asks.post_location(row, "github")
    assert location is not None and location["comment_id"] == earlier["id"]
    assert hub.fake.calls_matching("POST", ISSUE_COMMENTS) == []
    assert len(hub.fake.comments_on(REPO, NUMBER)) == 1


async def test_github_answer_approves_a_gated_call(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    """A maintainer's `/answer approve` on the issue lets the agent's exact call through once."""
    gates = Config.model_validate({"gates": [{
        "operations": ["deploy."], "responders": ["github:octocat"], "timeout": "1h"}]})
    hub = Hub(await start_aye(database_url, gates, env=app_env(fake_github)), fake_github)
    body = {"operation": "deploy.prod", "input": {"version": "1.4.2"}, "work": WORK}
    headers = {"Authorization": "Bearer agent-test-token"}
    resp = await hub.aye.client.post("/v1/calls", json=body, headers=headers)
    assert resp.status == 202
    ask = (await resp.json())["ask"]
    waiting = asyncio.create_task(hub.aye.wait(ask["id"], timeout=30))

    _, stranger = await hub.say("/answer approve", login="mallory")
    assert (await hub.reaction(stranger)).json_body == {"content": "confused"}
    _, comment = await hub.say("/answer approve\nShip it.")
    assert (await hub.reaction(comment)).json_body == {"content": "+1"}
    woke = await asyncio.wait_for(waiting, 5)
    assert woke["outcome"] == "approved"
    resp = await hub.aye.client.post("/v1/calls", json=body, headers=headers)
    allowed = await resp.json()
    assert allowed.pop("receipt").count(".") == 2  # signed (tests/e2e/test_receipts.py)
    assert allowed == {"decision": "allow", "approval": ask["id"]}
    view = await hub.aye.get(ask["id"], operator=True)
    assert view["answered_by"] == "github:octocat" and view["answer"]["note"] == "Ship it."
