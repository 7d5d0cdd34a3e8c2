"""Approval policy in Slack end to end: a quorum's count shown on the message with its buttons
kept, no self-approval read from the thread's first message, and one reminder in the thread.
The real aye (API, store, outbox, clock) and the real slack-bolt/slack-sdk against the fake
Slack on 127.0.0.1, which checks every block as Slack does.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import Config
from core.app import deadlines
from core.app.ports import REMIND, AuthorUnknown
from core.app.timing import ManualClock
from core.domain import rules
from handlers.slack import blocks, quorum
from tests import builders
from tests.conftest import AGENT_HEADERS, Aye, StartAye
from tests.e2e.test_slack_surface import (
    DEFAULT_CHANNEL,
    ESCALATED_TO,
    OTHER_RESPONDER,
    RESPONDER,
    WORK_CHANNEL,
    labels,
    ok,
    poke_outbox,
    posted,
    press,
    shown,
    start,
    told,
)
from tests.fake_slack import FakeSlack, SlackCall, block_problems

ASKER = "U0ASKER01"  # who opened the work thread
SLACK_CALLS = ("chat.postMessage", "chat.update", "chat.postEphemeral")


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/aye.db"


def gated(**gate: Any) -> Config:
    return Config.model_validate({
        "defaults": {"responders": ["operator:local"]},
        "slack": {"default_channel": DEFAULT_CHANNEL},
        "gates": [{
            "operations": ["deploy."], "timeout": "1h",
            "responders": [f"slack:{RESPONDER}", f"slack:{OTHER_RESPONDER}"], **gate,
        }],
    })


def thread(fake: FakeSlack, author: str = ASKER) -> dict[str, Any]:
    ts = fake.add_message(WORK_CHANNEL, "the release is ready, shall we deploy?", user=author)
    return {"slack": {"channel": WORK_CHANNEL, "thread_ts": ts}}


async def call_and_post(
    aye: Aye, fake: FakeSlack, work: dict[str, Any]
) -> tuple[dict[str, Any], SlackCall]:
    after = len(fake.calls)
    body = {"operation": "deploy.prod", "input": {"v": 2}, "work": work}
    resp = await aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    assert resp.status == 202, await resp.text()
    ask = (await resp.json())["ask"]
    poke_outbox(aye)  # on a ManualClock only a poke wakes the outbox
    return ask, await posted(fake, after=after)


async def pressed(fake: FakeSlack, user: str, call: SlackCall, label: str = "Approve") -> str:
    """Press `label` as `user`; what they alone are told."""
    after = len(fake.calls)
    await press(fake, user, call, label)
    return str((await told(fake, user, after=after)).args["text"])


async def history(aye: Aye, ref: str, event: str) -> list[dict[str, Any]]:
    view = await aye.get(ref, operator=True)
    return [e for e in view["history"] if e["event"] == event]


def author_lookups(fake: FakeSlack) -> list[SlackCall]:
    return [c for c in fake.calls_to("conversations.replies") if str(c.args.get("limit")) == "1"]


def all_accepted(fake: FakeSlack) -> None:
    refused = [(c.method, c.response) for c in fake.calls if c.method in SLACK_CALLS and not c.ok]
    assert refused == []


# -- quorum ------------------------------------------------------------------------------------


async def test_a_quorum_of_two_counts_on_the_message_and_closes_on_the_second_person(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=gated(approvals=2))
    ask, call = await call_and_post(aye, fake_slack, thread(fake_slack))
    ref = ask["ref"]
    assert "This needs 2 approvals" in shown(call.args)
    assert labels(call.args) == ["Approve", "Refuse"]

    first = await pressed(fake_slack, RESPONDER, call)
    update = await fake_slack.wait_for_call("chat.update", ok)

    assert first.startswith(f"Your approval of `{ref}` was counted: 1 of 2.")
    assert update.args["ts"] == call.response["ts"]
    assert f"1 of 2 approvals: <@{RESPONDER}>" in shown(update.args)
    assert labels(update.args) == ["Approve", "Refuse"]  # still open: the buttons stay
    assert (await aye.get(ask["id"]))["status"] == "open"

    again = await pressed(fake_slack, RESPONDER, call)
    assert again == f"Your answer to `{ref}` was not taken: {rules.REASONS['already_approved']}."
    assert (await aye.get(ask["id"]))["status"] == "open"

    second = await pressed(fake_slack, OTHER_RESPONDER, call)
    closed = await fake_slack.wait_for_call(
        "chat.update", lambda c: c.ok and labels(c.args) == [])

    assert second == f"You approved `deploy.prod` (`{ref}`)."
    assert f"Approved by <@{RESPONDER}>, <@{OTHER_RESPONDER}>." in shown(closed.args)
    done = await aye.wait(ask["id"])
    assert done["status"] == "answered" and done["answer"]["value"] == "approve"
    assert [e["why"] for e in await history(aye, ref, "refused")] == ["already_approved"]
    assert [e["by"] for e in await history(aye, ref, "approved")] == [f"slack:{RESPONDER}"]
    all_accepted(fake_slack)


async def test_a_count_updates_the_escalation_message_too(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str, manual_clock: ManualClock
) -> None:
    config = gated(approvals=2, timeout="1m",
                   escalate={"responders": [f"slack:{ESCALATED_TO}"], "timeout": "1h"})
    aye = await start(start_aye, sqlite_url, fake_slack, config=config, clock=manual_clock)
    _, first = await call_and_post(aye, fake_slack, thread(fake_slack))
    manual_clock.advance(61)
    await aye.tick()
    second = await posted(fake_slack, after=fake_slack.calls.index(first) + 1)
    assert "This needs 2 approvals" in shown(second.args)

    await pressed(fake_slack, ESCALATED_TO, second)
    updates = await fake_slack.wait_for_calls("chat.update", 2, ok)

    assert {u.args["ts"] for u in updates} == {first.response["ts"], second.response["ts"]}
    for u in updates:
        assert f"1 of 2 approvals: <@{ESCALATED_TO}>" in shown(u.args)
        assert labels(u.args) == ["Approve", "Refuse"]
    again = next(u for u in updates if u.args["ts"] == second.response["ts"])
    assert "(escalated)" in shown(again.args)


# -- no self-approval ---------------------------------------------------------------------------


async def test_the_thread_s_author_cannot_approve_and_is_told_why(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack,
                      config=gated(prevent_self_approval=True))
    work = thread(fake_slack, author=RESPONDER)
    ask, call = await call_and_post(aye, fake_slack, work)

    said = await pressed(fake_slack, RESPONDER, call)

    assert said == f"Your answer to `{ask['ref']}` was not taken: {rules.REASONS['self_approval']}."
    assert [e["why"] for e in await history(aye, ask["ref"], "refused")] == ["self_approval"]
    assert (await aye.get(ask["id"]))["status"] == "open"
    [lookup] = author_lookups(fake_slack)
    assert (lookup.args["channel"], lookup.args["ts"]) == (WORK_CHANNEL, work["slack"]["thread_ts"])

    # Another person may; the author is read once (cached), not on every press.
    assert (await pressed(fake_slack, OTHER_RESPONDER, call)).startswith("You approved")
    assert (await aye.wait(ask["id"]))["answer"]["value"] == "approve"
    assert len(author_lookups(fake_slack)) == 1
    all_accepted(fake_slack)


async def test_the_author_s_refusal_still_counts(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack, config=gated(prevent_self_approval=True))
    ask, call = await call_and_post(aye, fake_slack, thread(fake_slack, author=RESPONDER))

    await press(fake_slack, RESPONDER, call, "Refuse")
    await fake_slack.wait_for_call("views.open", ok)
    ack = await fake_slack.submit_view(RESPONDER, {"reason": {"text": "not today"}})

    assert "payload" not in ack
    done = await aye.wait(ask["id"])
    assert done["answer"] == {"value": "refuse", "option": 2, "note": "not today"}


async def test_an_unreadable_author_refuses_the_approval_and_takes_nothing(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack,
                      config=gated(prevent_self_approval=True))
    ask, call = await call_and_post(aye, fake_slack, thread(fake_slack))
    fake_slack.fail_next("conversations.replies", error="missing_scope")

    said = await pressed(fake_slack, RESPONDER, call)

    assert said == (f"Your answer to `{ask['ref']}` was not taken: "
                    f"{rules.REASONS['author_unknown']}.")
    assert [e["why"] for e in await history(aye, ask["ref"], "refused")] == ["author_unknown"]
    assert (await aye.get(ask["id"]))["status"] == "open"
    assert fake_slack.calls_to("chat.update") == []
    # A failure is not remembered: once Slack answers, the same person's approval is taken.
    assert (await pressed(fake_slack, RESPONDER, call)).startswith("You approved")
    assert (await aye.wait(ask["id"]))["answer"]["value"] == "approve"


async def test_the_author_is_read_from_slack_and_an_app_s_thread_has_none(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)
    surface: Any = aye.asks.parts.places["slack"]
    person, app, broken = thread(fake_slack), thread(fake_slack), thread(fake_slack)
    fake_slack.set_author(WORK_CHANNEL, app["slack"]["thread_ts"], None)

    assert await surface.author(person) == f"slack:{ASKER}"
    assert await surface.author(app) is None
    fake_slack.fail_next("conversations.replies", status=500, times=3)
    with pytest.raises(AuthorUnknown, match="internal_error"):
        await surface.author(broken)
    with pytest.raises(AuthorUnknown, match="thread_not_found"):
        await surface.author({"slack": {"channel": WORK_CHANNEL, "thread_ts": "1.000001"}})
    assert await surface.author(broken) == f"slack:{ASKER}"


# -- reminders ----------------------------------------------------------------------------------


def reminders(fake: FakeSlack) -> list[SlackCall]:
    return [c for c in fake.calls_to("chat.postMessage")
            if c.ok and (c.args.get("metadata") or {}).get("event_type") == blocks.REMINDER_EVENT]


async def test_a_reminder_is_posted_once_in_the_thread_mentioning_the_responders(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=gated(remind_after="30m"),
                      clock=manual_clock)
    work = thread(fake_slack)
    ask, call = await call_and_post(aye, fake_slack, work)

    manual_clock.advance(30 * 60 + 1)
    await aye.tick()
    reminder = await fake_slack.wait_for_call(
        "chat.postMessage", lambda c: c.ok and c.args.get("metadata", {}).get(
            "event_type") == blocks.REMINDER_EVENT)

    assert reminder.args["channel"] == WORK_CHANNEL
    assert reminder.args["thread_ts"] == work["slack"]["thread_ts"]
    text = shown(reminder.args)
    assert f"<@{RESPONDER}>" in text and f"<@{OTHER_RESPONDER}>" in text
    assert f"`{ask['ref']}`" in text and "<!date^" in text
    assert f"<@{RESPONDER}>" in reminder.args["text"]  # notifications mention them too
    assert labels(reminder.args) == []  # the buttons stay on the ask's own message

    assert await deadlines.fire_due(aye.asks.parts) == 0  # a second tick: nothing more
    manual_clock.advance(60)
    await aye.tick()
    # Close it: its update comes after any other row of the ask in the outbox.
    await press(fake_slack, RESPONDER, call, "Approve")
    await fake_slack.wait_for_call("chat.update", ok)
    assert len(reminders(fake_slack)) == 1
    assert len(await history(aye, ask["ref"], "reminded")) == 1
    all_accepted(fake_slack)


async def test_a_reminder_of_an_ask_never_posted_in_slack_posts_nothing(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    # For the operator alone: not for Slack, so never posted there.
    aye = await start(start_aye, sqlite_url, fake_slack, config=Config.model_validate({
        "defaults": {"responders": ["operator:local"]},
        "slack": {"default_channel": DEFAULT_CHANNEL}}))
    ask = await aye.ask(question="Ship it?", options=["yes", "no"])
    row = await aye.asks.find(ask["id"])
    assert row is not None

    await aye.asks.parts.places["slack"].deliver(row, REMIND, None)

    assert fake_slack.calls_to("chat.postMessage") == []
    assert reminders(fake_slack) == []


# -- the words, pure ----------------------------------------------------------------------------


def test_a_reminder_names_those_yet_to_approve_and_anyone_for_a_bare_slack() -> None:
    half = builders.approval(
        approvals_needed=2, approvers=[f"slack:{RESPONDER}"],
        responders=[f"slack:{RESPONDER}", f"slack:{OTHER_RESPONDER}", "operator:local"])
    anyone = builders.approval(responders=["slack"])
    wide = builders.approval(responders=[f"slack:U{n:08d}" for n in range(60)])

    assert quorum.named(half) == f"<@{OTHER_RESPONDER}>, the operator"
    assert quorum.named(anyone) == "anyone here"
    widened = builders.approval(responders=[f"slack:{RESPONDER}"], escalated_at=1.0,
                                escalate_responders=["slack", f"slack:{OTHER_RESPONDER}"])
    assert quorum.named(widened) == f"<@{RESPONDER}>, anyone here, <@{OTHER_RESPONDER}>"
    not_yet = widened.model_copy(update={"escalated_at": None})
    assert quorum.named(not_yet) == f"<@{RESPONDER}>"
    assert quorum.named(wide).endswith("and 30 more")
    for ask in (half, anyone, wide):
        message = blocks.reminder_message(ask, "a7")
        assert block_problems(message.blocks) == []
    assert "1 of 2 approvals" in shown({"blocks": blocks.reminder_message(half, "a7").blocks})


def test_the_quorum_shows_on_every_message_and_in_the_closed_one() -> None:
    open_ = builders.approval(approvals_needed=3, approvers=["slack:U1", "github:bob"],
                              escalate_responders=["slack:U9"])
    for build in (blocks.question_message, blocks.escalation_message):
        message = build(open_, "a7")
        assert "2 of 3 approvals: <@U1>, bob on GitHub" in shown({"blocks": message.blocks})
        assert block_problems(message.blocks) == []
    refused = open_.model_copy(update={"status": "answered", "outcome": "approval_refused",
                                       "answer_value": "refuse", "answered_by": "slack:U2"})
    timed_out = open_.model_copy(update={"status": "expired", "outcome": "approval_timed_out"})
    assert "Refused by <@U2>. It had 2 of 3 approvals" in blocks.outcome_line(refused)
    assert "only 2 of 3 approvals" in blocks.outcome_line(timed_out)
    one = builders.approval()
    assert "approvals" not in shown({"blocks": blocks.question_message(one, "a7").blocks})
