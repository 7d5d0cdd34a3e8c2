"""A delivery the far side refuses for good, or that fails past the retry budget, becomes a
dead letter: never tried again, counted in /healthz, its reason in the ask's history; the
ask itself goes on (it can still be answered)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot import loops
from core.domain.responders import Responder
from store.models import AskRow
from tests.conftest import OPERATOR_HEADERS, Aye, StartAye, eventually
from tests.e2e.test_gates import RecordingSurface
from tests.e2e.test_github_e2e import ISSUE_COMMENTS, WORK, app_env
from tests.e2e.test_github_e2e import config as gh_config
from tests.e2e.test_slack_surface import CONFIG, WORK_CHANNEL, ok, start
from tests.fake_github import FakeGitHub
from tests.fake_slack import FakeSlack


async def health(aye: Aye) -> dict[str, Any]:
    resp = await aye.client.get("/healthz")
    return await resp.json()  # type: ignore[no-any-return]


async def history(aye: Aye, ident: str) -> list[dict[str, Any]]:
    return (await aye.get(ident, operator=True))["history"]  # type: ignore[no-any-return]


async def test_a_permanent_slack_error_is_a_dead_letter_not_retried(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    thread_ts = fake_slack.add_message(WORK_CHANNEL, "a thread")
    aye = await start(start_aye, database_url, fake_slack, config=CONFIG)
    fake_slack.fail_next("chat.postMessage", error="channel_not_found", times=5)
    ask = await aye.ask(question="Ship it?", options=["yes", "no"],
                        work={"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}})

    async def buried() -> bool:
        return (await health(aye))["dead_letters"] == 1

    await eventually(buried)
    tries = [c for c in fake_slack.calls if c.method == "chat.postMessage"]
    assert len(tries) == 1 and not any(ok(c) for c in tries)
    undelivered = [e for e in await history(aye, ask["id"]) if e["event"] == "undelivered"]
    assert undelivered == [{**undelivered[0], "surface": "slack", "action": "post",
                            "why": "slack refused post: channel_not_found"}]
    # The ask goes on: the operator can still answer it.
    assert (await aye.answer(ask["ref"], "yes"))[0] == 200


class Broken(RecordingSurface):
    """A surface whose every delivery fails with an unexpected error."""

    name = "broken"

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return False

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        raise RuntimeError("down")


async def test_a_delivery_past_its_retry_budget_is_given_up(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loops, "MAX_ATTEMPTS", 2)
    monkeypatch.setattr(loops, "MAX_BACKOFF", 0.01)
    aye = await start_aye(database_url)
    aye.asks.add_surface(Broken())
    ask = await aye.ask(question="Anyone?")

    async def buried() -> bool:
        aye.asks.parts.signals.outbox_poke.set()
        return (await health(aye))["dead_letters"] == 1

    await eventually(buried, timeout=15)
    undelivered = [e for e in await history(aye, ask["id"]) if e["event"] == "undelivered"]
    assert [(e["surface"], e["why"]) for e in undelivered] == [
        ("broken", "gave up after 2 attempts: RuntimeError")
    ]
    resp = await aye.client.get(f"/v1/asks/{ask['id']}", headers=OPERATOR_HEADERS)
    assert (await resp.json())["status"] == "open"


async def test_a_github_404_is_a_dead_letter_and_the_answer_still_counts(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await start_aye(database_url, config=gh_config(post_questions=True),
                          env=app_env(fake_github))
    fake_github.fail_next("POST", ISSUE_COMMENTS, status=404, times=5)
    ask = await aye.ask(question="Which region?", options=["eu", "us"], work=WORK)

    async def buried() -> bool:
        return (await health(aye))["dead_letters"] == 1

    await eventually(buried)
    posts = [c for c in fake_github.calls if c.method == "POST" and re.fullmatch(ISSUE_COMMENTS, c.path)]
    assert len(posts) == 1
    undelivered = [e for e in await history(aye, ask["id"]) if e["event"] == "undelivered"]
    assert [(e["surface"], e["action"], e["why"]) for e in undelivered] == [
        ("github", "post", "github refused post: HTTP 404")
    ]
    assert (await aye.answer(ask["ref"], "eu"))[0] == 200
