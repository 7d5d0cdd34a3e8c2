"""The Slack surface end to end: real slack-bolt/slack-sdk against the fake Slack on 127.0.0.1.

Each test waits on what Slack would see (recorded Web API calls, acks); none sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest
from sqlalchemy import delete, update

from bot.config import Config
from bot.logs import KeyValueFormatter
from core.app.timing import ManualClock
from store.models import OutboxRow, PostRow
from tests.conftest import AGENT_HEADERS, Aye, StartAye, eventually
from tests.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack, SlackCall

RESPONDER = "U0123ABCD"
OTHER_RESPONDER = "U0456EFGH"
STRANGER = "U0NOTYOU1"
ESCALATED_TO = "U0789IJKL"
DEFAULT_CHANNEL = "C0DEFAULT"
WORK_CHANNEL = "C0WORK"
CONFIG = Config.model_validate(
    {
        "defaults": {"responders": [f"slack:{RESPONDER}", "operator:local"]},
        "slack": {"default_channel": DEFAULT_CHANNEL},
    }
)
TWO_RESPONDERS = Config.model_validate(
    {
        "defaults": {
            "responders": [f"slack:{RESPONDER}", f"slack:{OTHER_RESPONDER}", "operator:local"]
        },
        "slack": {"default_channel": DEFAULT_CHANNEL},
    }
)
GATED = Config.model_validate(
    {
        "defaults": {"responders": [f"slack:{RESPONDER}", "operator:local"]},
        "slack": {"default_channel": DEFAULT_CHANNEL},
        "gates": [
            {
                "operations": ["deploy."],
                "timeout": "1m",
                "escalate": {"responders": [f"slack:{ESCALATED_TO}"], "timeout": "1h"},
            }
        ],
    }
)


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    """For tests of Slack's protocol alone: they need a store, not both kinds of it."""
    return f"sqlite+aiosqlite:///{tmp_path}/aye.db"


def slack_env(fake: FakeSlack) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": fake.api_url,
    }


async def start(
    start_aye: StartAye,
    database_url: str,
    fake: FakeSlack,
    config: Config = CONFIG,
    clock: ManualClock | None = None,
) -> Aye:
    return await start_aye(database_url, config=config, clock=clock, env=slack_env(fake))


def ok(call: SlackCall) -> bool:
    return call.ok


def poke_outbox(aye: Aye) -> None:
    """Wake the delivery loop on a ManualClock, where only a poke or a move ends its sleep.

    A sleep computed just before the clock moved waits for the next move, and a poke that
    came while the loop was busy with an earlier pass is spent by then. With the real clock,
    the loop looks again within a second (IDLE_LOOK); a ManualClock never ends that sleep.
    """
    aye.asks.parts.signals.outbox_poke.set()


async def posted(fake: FakeSlack, after: int = 0) -> SlackCall:
    """The next successful chat.postMessage (index >= `after` in fake.calls)."""
    return await fake.wait_for_call("chat.postMessage", ok, after=after)


def button(message: dict[str, Any], label: str) -> tuple[str, str]:
    """(action_id, value) of the button labelled `label` in a message."""
    for block in message.get("blocks") or []:
        for element in block.get("elements") or []:
            if element.get("type") == "button" and element["text"]["text"] == label:
                return element["action_id"], element["value"]
    raise AssertionError(f"no button {label!r} in {message.get('blocks')}")


def labels(message: dict[str, Any]) -> list[str]:
    return [
        element["text"]["text"]
        for block in message.get("blocks") or []
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def shown(message: dict[str, Any]) -> str:
    """All the text of a message's blocks, as one string."""
    parts: list[str] = []
    for block in message.get("blocks") or []:
        if "text" in block:
            parts.append(block["text"]["text"])
        for element in block.get("elements") or []:
            if element.get("type") == "mrkdwn":
                parts.append(element["text"])
    return "\n".join(parts)


async def press(
    fake: FakeSlack, user: str, call: SlackCall, label: str, channel: str | None = None
) -> dict[str, Any]:
    channel = channel or call.args["channel"]
    message = fake.message(channel, call.response["ts"])
    assert message is not None
    action_id, value = button(message, label)
    return await fake.press_button(user, action_id, value, channel, call.response["ts"])


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured record as aye writes it: the line with its key=value fields."""
    formatter = KeyValueFormatter()
    return "\n".join(formatter.format(record) for record in caplog.records)


async def told(fake: FakeSlack, user: str, after: int = 0) -> SlackCall:
    return await fake.wait_for_call(
        "chat.postEphemeral", lambda c: c.ok and c.args["user"] == user, after=after
    )


# -- posting -----------------------------------------------------------------------------------


async def test_question_in_a_work_thread_is_posted_there_once_with_its_buttons(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    thread_ts = fake_slack.add_message(WORK_CHANNEL, "can someone look at the release?")
    aye = await start(start_aye, database_url, fake_slack)

    ask = await aye.ask(
        question="Ship <!channel> 1.2 today?",
        options=["yes", "no", "next week"],
        context="The changelog is ready.",
        work={"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}},
        key="ship-1.2",
    )
    call = await posted(fake_slack)
    again = await aye.ask(expect=200, question="Ship <!channel> 1.2 today?",
                          options=["yes", "no", "next week"], context="The changelog is ready.",
                          work={"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}},
                          key="ship-1.2")

    assert again["id"] == ask["id"]
    assert call.args["channel"] == WORK_CHANNEL
    assert call.args["thread_ts"] == thread_ts
    assert call.args["metadata"] == {
        "event_type": "aye_ask",
        "event_payload": {"ask_id": ask["id"]},
    }
    message = fake_slack.message(WORK_CHANNEL, call.response["ts"])
    assert message is not None and message["thread_ts"] == thread_ts
    assert labels(message) == ["yes", "no", "next week"]
    text = shown(message)
    assert "Ship &lt;!channel&gt; 1.2 today?" in text  # an agent cannot ping the channel
    assert "The changelog is ready." in text
    assert f"<@{RESPONDER}>" in text and "the operator" in text
    assert f"`{ask['ref']}`" in text
    assert "<!date^" in text
    # The history says where it went.
    await eventually(lambda: _has_posted(aye, ask["ref"], f"{WORK_CHANNEL}/{thread_ts}"))
    # Answered on another surface: the message is updated, and still posted only once.
    status, _ = await aye.answer(ask["ref"], "next week")
    assert status == 200
    updated = await fake_slack.wait_for_call("chat.update", ok)
    assert updated.args["ts"] == call.response["ts"]
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


async def _has_posted(aye: Aye, ref: str, where: str) -> bool:
    history = (await aye.get(ref, operator=True))["history"]
    return any(e["event"] == "posted" and e.get("where") == where for e in history)


async def test_question_without_a_thread_starts_one_in_the_default_channel(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)

    ask = await aye.ask(question="Which region?", options=["eu", "us"])
    call = await posted(fake_slack)

    assert call.args["channel"] == DEFAULT_CHANNEL
    assert "thread_ts" not in call.args or call.args["thread_ts"] is None
    await eventually(
        lambda: _has_posted(aye, ask["ref"], f"{DEFAULT_CHANNEL}/{call.response['ts']}")
    )


async def test_question_for_no_slack_responder_outside_a_thread_is_not_posted(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    config = Config.model_validate(
        {"defaults": {"responders": ["operator:local"]}, "slack": {"default_channel": "C0DEF"}}
    )
    aye = await start(start_aye, database_url, fake_slack, config=config)

    ask = await aye.ask(question="Only for the operator?", options=["a", "b"])
    status, _ = await aye.answer(ask["ref"], "a")
    assert status == 200
    # The thread case is posted whoever the responders: a later ask is, and nothing before it.
    thread_ts = fake_slack.add_message(WORK_CHANNEL, "thread")
    await aye.ask(
        question="In a thread", work={"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}}
    )
    call = await posted(fake_slack)

    assert call.args["channel"] == WORK_CHANNEL
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    assert fake_slack.calls_to("chat.update") == []


# -- answering ---------------------------------------------------------------------------------


async def test_a_responders_press_wakes_the_parked_agent_and_closes_the_message(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="Deploy now?", options=["yes", "no"])
    call = await posted(fake_slack)
    parked = asyncio.create_task(aye.wait(ask["id"], timeout=10))

    ack = await press(fake_slack, RESPONDER, call, "no")

    assert "payload" not in ack  # a plain ack, at once
    got = await parked
    assert got["status"] == "answered"
    assert got["answer"] == {"value": "no", "option": 2, "note": None}
    reply = await told(fake_slack, RESPONDER)
    assert "was taken" in reply.args["text"] and "no" in reply.args["text"]
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert update.args["ts"] == call.response["ts"]
    message = fake_slack.message(DEFAULT_CHANNEL, call.response["ts"])
    assert message is not None
    assert labels(message) == []
    assert f"Answered by <@{RESPONDER}>: *no*" in shown(message)
    operator = await aye.get(ask["ref"], operator=True)
    assert operator["answered_by"] == f"slack:{RESPONDER}"
    assert operator["surface"] == "slack"


async def test_a_press_answers_with_its_options_text_not_its_number(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)
    ask = await aye.ask(question="How many replicas?", options=["1", "3", "5"])
    call = await posted(fake_slack)

    await press(fake_slack, RESPONDER, call, "5")

    assert (await aye.wait(ask["id"]))["answer"] == {"value": "5", "option": 3, "note": None}


async def test_a_non_responders_press_is_refused_to_them_alone(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="Deploy now?", options=["yes", "no"])
    call = await posted(fake_slack)
    before = fake_slack.message(DEFAULT_CHANNEL, call.response["ts"])

    await press(fake_slack, STRANGER, call, "yes")
    reply = await told(fake_slack, STRANGER)

    assert reply.args["text"] == (
        f"Your answer to `{ask['ref']}` was not taken: you are not one of the people this is for."
    )
    assert reply.args["channel"] == DEFAULT_CHANNEL
    assert (await aye.get(ask["id"]))["status"] == "open"
    assert fake_slack.message(DEFAULT_CHANNEL, call.response["ts"]) == before
    history = (await aye.get(ask["ref"], operator=True))["history"]
    assert [e["event"] for e in history if e["event"] == "refused"] == ["refused"]
    # The ask is still answerable by its responder.
    await press(fake_slack, RESPONDER, call, "yes")
    assert (await aye.wait(ask["id"]))["answer"]["value"] == "yes"
    assert (await fake_slack.wait_for_call("chat.update", ok)).args["ts"] == call.response["ts"]


async def test_two_presses_race_and_one_wins(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=TWO_RESPONDERS)
    ask = await aye.ask(question="Roll back?", options=["roll back", "hold"])
    call = await posted(fake_slack)

    await asyncio.gather(
        press(fake_slack, RESPONDER, call, "roll back"),
        press(fake_slack, OTHER_RESPONDER, call, "hold"),
    )
    replies = [await told(fake_slack, RESPONDER), await told(fake_slack, OTHER_RESPONDER)]

    got = await aye.wait(ask["id"])
    winner = RESPONDER if got["answer"]["value"] == "roll back" else OTHER_RESPONDER
    texts = {r.args["user"]: r.args["text"] for r in replies}
    assert "was taken" in texts[winner]
    loser = OTHER_RESPONDER if winner == RESPONDER else RESPONDER
    assert texts[loser].endswith("was not taken: it was already answered.")
    history = (await aye.get(ask["ref"], operator=True))["history"]
    events = [e["event"] for e in history]
    assert events.count("answered") == 1 and events.count("late") == 1
    await fake_slack.wait_for_call("chat.update", ok)
    assert len(fake_slack.calls_to("chat.update")) == 1


async def test_free_text_is_answered_through_the_modal_and_a_sensitive_value_stays_hidden(
    fake_slack: FakeSlack,
    start_aye: StartAye,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    secret = "hunter2-the-db-password"
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="What is the staging DB password?", sensitive=True)
    call = await posted(fake_slack)
    parked = asyncio.create_task(aye.wait(ask["id"], timeout=10))

    await press(fake_slack, RESPONDER, call, "Answer")
    opened = await fake_slack.wait_for_call("views.open", ok)
    empty = await fake_slack.submit_view(RESPONDER, {"answer": {"text": "   "}})
    await fake_slack.submit_view(RESPONDER, {"answer": {"text": f"  {secret} "}})

    view = opened.args["view"]
    assert view["private_metadata"] == ask["id"]
    field = view["blocks"][-1]
    assert field["element"]["type"] == "plain_text_input"
    assert field["element"]["max_length"] == 3000
    assert field["optional"] is False
    assert empty["payload"] == {
        "response_action": "errors",
        "errors": {"answer": "Write an answer first."},
    }
    got = await parked
    assert got["answer"]["value"] == secret
    reply = await told(fake_slack, RESPONDER)
    assert reply.args["text"] == f"Thanks: your answer to `{ask['ref']}` was taken."
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert "The answer is private" in shown(update.args)
    for recorded in fake_slack.calls:
        assert secret not in str(recorded.args)
    lines = logged(caplog)
    assert f"slack.answer id={ask['id']}" in lines  # the check below looks at real lines
    assert secret not in lines
    assert BOT_TOKEN not in lines and APP_TOKEN not in lines


async def test_a_stranger_cannot_open_the_answer_form(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="Release notes title?")
    call = await posted(fake_slack)

    await press(fake_slack, STRANGER, call, "Answer")
    reply = await told(fake_slack, STRANGER)

    assert reply.args["text"] == (
        f"You cannot answer `{ask['ref']}`: you are not one of the people this is for."
    )
    assert fake_slack.calls_to("views.open") == []


# -- closing -----------------------------------------------------------------------------------


async def test_expiry_updates_the_message(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start(start_aye, database_url, fake_slack, clock=manual_clock)
    ask = await aye.ask(question="Merge the hotfix?", options=["yes", "no"], timeout_s=60)
    poke_outbox(aye)
    call = await posted(fake_slack)

    manual_clock.advance(61)
    await aye.tick()
    update = await fake_slack.wait_for_call("chat.update", ok)

    assert update.args["ts"] == call.response["ts"]
    assert "Expired: nobody answered by <!date^" in shown(update.args)
    assert not any(b["type"] == "actions" for b in update.args["blocks"])
    # A press on the closed message (an old client) is refused in words.
    await fake_slack.press_button(RESPONDER, "aye_option_1", f"{ask['id']}:1", DEFAULT_CHANNEL,
                                  call.response["ts"])
    reply = await told(fake_slack, RESPONDER)
    assert reply.args["text"].endswith("was not taken: it has expired.")


async def test_withdrawal_updates_the_message_through_a_server_error(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="Rotate the keys?", options=["yes", "no"])
    call = await posted(fake_slack)
    fake_slack.fail_next("chat.update", status=503)

    resp = await aye.client.delete(f"/v1/asks/{ask['id']}", headers=AGENT_HEADERS)
    assert resp.status == 200
    update = await fake_slack.wait_for_call("chat.update", ok)

    assert [c.status for c in fake_slack.calls_to("chat.update")] == [503, 200]
    assert update.args["ts"] == call.response["ts"]
    assert "Withdrawn" in shown(update.args)
    assert labels(update.args) == []


async def test_an_approval_escalates_in_its_thread_and_closes_both_messages(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=GATED, clock=manual_clock)
    resp = await aye.client.post(
        "/v1/calls",
        json={"operation": "deploy.prod", "input": {"version": "1.2", "region": "eu"}},
        headers=AGENT_HEADERS,
    )
    assert resp.status == 202
    ask = (await resp.json())["ask"]
    poke_outbox(aye)
    first = await posted(fake_slack)
    message = fake_slack.message(DEFAULT_CHANNEL, first.response["ts"])
    assert message is not None
    actions = next(b for b in message["blocks"] if b["type"] == "actions")
    assert [(e["text"]["text"], e.get("style")) for e in actions["elements"]] == [
        ("Approve", "primary"),
        ("Refuse", "danger"),
    ]
    assert "`deploy.prod`" in shown(message)
    assert '{"region":"eu","version":"1.2"}' in shown(message)

    manual_clock.advance(61)
    await aye.tick()
    second = await posted(fake_slack, after=fake_slack.calls.index(first) + 1)

    assert second.args["thread_ts"] == first.response["ts"]
    text = shown(second.args)
    assert "Approve or refuse `deploy.prod`? (escalated)" in text
    assert f"<@{ESCALATED_TO}>" in text and "it will be refused" in text
    assert labels(second.args) == ["Approve", "Refuse"]
    # The person it was escalated to approves on the escalation message.
    await press(fake_slack, ESCALATED_TO, second, "Approve", channel=DEFAULT_CHANNEL)
    reply = await told(fake_slack, ESCALATED_TO)
    assert reply.args["text"] == f"You approved `deploy.prod` (`{ask['ref']}`)."
    assert reply.args["thread_ts"] == first.response["ts"]
    updates = await fake_slack.wait_for_calls("chat.update", 2, ok)
    assert {u.args["ts"] for u in updates} == {first.response["ts"], second.response["ts"]}
    for u in updates:
        assert f"Approved by <@{ESCALATED_TO}>" in shown(u.args)
        assert labels(u.args) == []


# -- faults and restarts -----------------------------------------------------------------------


async def test_rate_limits_are_waited_out_and_then_left_to_the_outbox(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    # Three 429s: slack-sdk retries twice in place after Retry-After, then the outbox waits
    # Retry-After before it tries again.
    fake_slack.fail_next("chat.postMessage", retry_after=1, times=3)
    aye = await start(start_aye, sqlite_url, fake_slack)

    ask = await aye.ask(question="Tag the release?", options=["yes", "no"])
    await fake_slack.wait_for_call("chat.postMessage", ok, timeout=15)

    calls = fake_slack.calls_to("chat.postMessage")
    assert [c.status for c in calls] == [429, 429, 429, 200]
    for earlier, later in itertools.pairwise(calls):
        assert later.at - earlier.at >= 0.95
    where = f"{DEFAULT_CHANNEL}/{calls[-1].response['ts']}"
    await eventually(lambda: _has_posted(aye, ask["ref"], where))
    async with aye.asks.parts.store.read() as conn:
        row = (await conn.execute(OutboxRow.__table__.select())).one()  # type: ignore[attr-defined]
    assert row.attempts == 2  # the outbox took over once, after the in-place retries


async def test_a_long_retry_after_goes_back_to_the_outbox_at_once(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str, manual_clock: ManualClock
) -> None:
    fake_slack.fail_next("chat.postMessage", retry_after=120)
    aye = await start(start_aye, sqlite_url, fake_slack, clock=manual_clock)

    ask = await aye.ask(question="Publish the docs?", options=["yes", "no"])
    poke_outbox(aye)
    await eventually(lambda: _post_attempted(aye))
    assert [c.status for c in fake_slack.calls_to("chat.postMessage")] == [429]
    async with aye.asks.parts.store.read() as conn:
        row = (await conn.execute(OutboxRow.__table__.select())).one()  # type: ignore[attr-defined]
    assert row.due_at >= manual_clock.now() + 119  # Retry-After, honoured by the outbox

    manual_clock.advance(121)
    # The loop may have computed its sleep before the clock moved (see poke_outbox).
    poke_outbox(aye)
    call = await posted(fake_slack)
    assert call.args["metadata"]["event_payload"]["ask_id"] == ask["id"]
    assert len(fake_slack.calls_to("chat.postMessage")) == 2


async def test_a_failing_listener_tells_the_presser_in_plain_words(
    fake_slack: FakeSlack,
    start_aye: StartAye,
    sqlite_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    aye = await start(start_aye, sqlite_url, fake_slack)
    ask = await aye.ask(question="Flip the flag?", options=["on", "off"])
    call = await posted(fake_slack)
    fake_slack.fail_next("chat.postEphemeral", error="channel_not_found")

    await press(fake_slack, RESPONDER, call, "on")
    reply = await told(fake_slack, RESPONDER)

    assert reply.args["text"].startswith("Something went wrong while aye handled that")
    failed = [r for r in caplog.records if r.getMessage() == "slack.listener_failed"]
    assert len(failed) == 1
    lines = logged(caplog)
    assert "slack_error=channel_not_found" in lines  # Slack's code, for the operator
    assert "The server responded with" not in lines  # never the exception's text
    assert (await aye.wait(ask["id"]))["status"] == "answered"


async def test_a_press_on_an_unknown_aye_button_is_acked(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    await start(start_aye, sqlite_url, fake_slack)
    ts = fake_slack.add_message(DEFAULT_CHANNEL, "an old aye message")

    ack = await fake_slack.press_button(RESPONDER, "aye_retired_button", "x", DEFAULT_CHANNEL, ts)

    assert ack["envelope_id"] == fake_slack.envelopes[-1]["envelope_id"]
    # A forged or stale option value is answered in words, and answers nothing.
    await fake_slack.press_button(RESPONDER, "aye_option_1", "not-an-ask:1", DEFAULT_CHANNEL, ts)
    reply = await told(fake_slack, RESPONDER)
    assert reply.args["text"] == (
        "aye does not know this question any more, so nothing was recorded."
    )


async def test_a_restart_does_not_post_again(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    first = await start(start_aye, database_url, fake_slack)
    ask = await first.ask(question="Bump the version?", options=["yes", "no"])
    call = await posted(fake_slack)
    # Stopped once the post is recorded and its outbox row done (a row still claimed by a
    # stopped process waits out its claim before another process takes it).
    await eventually(lambda: _outbox_done(first))
    await first.client.close()

    second = await start(start_aye, database_url, fake_slack)
    await press(fake_slack, RESPONDER, call, "yes")
    assert (await second.wait(ask["id"]))["status"] == "answered"
    await fake_slack.wait_for_call("chat.update", ok)

    assert len(fake_slack.calls_to("chat.postMessage")) == 1


@pytest.mark.parametrize("in_thread", [False, True], ids=["default-channel", "work-thread"])
async def test_a_crash_between_posting_and_recording_adopts_the_post(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, in_thread: bool
) -> None:
    first = await start(start_aye, database_url, fake_slack)
    work = None
    if in_thread:
        thread_ts = fake_slack.add_message(WORK_CHANNEL, "working on it")
        work = {"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}}
    ask = await first.ask(question="Cut the branch?", options=["yes", "no"], work=work)
    call = await posted(fake_slack)
    channel = call.args["channel"]
    await eventually(lambda: _post_recorded(first))
    await first.client.close()

    second = await start(start_aye, database_url, fake_slack)
    # As if the first process died after Slack's reply but before the store write: no post
    # recorded, and the outbox row due again.
    async with second.asks.parts.store.write() as conn:
        await conn.execute(delete(PostRow))
        await conn.execute(
            update(OutboxRow)
            .where(OutboxRow.action == "post")  # type: ignore[arg-type]
            .values(due_at=0, done_at=None, claimed_until=None)
        )
    second.asks.parts.signals.outbox_poke.set()
    await eventually(lambda: _post_recorded(second))
    status, _ = await second.answer(ask["ref"], "no")
    assert status == 200
    update_call = await fake_slack.wait_for_call("chat.update", ok)

    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    assert update_call.args["channel"] == channel
    assert update_call.args["ts"] == call.response["ts"]
    lookup = "conversations.replies" if in_thread else "conversations.history"
    assert fake_slack.calls_to(lookup)[-1].args["include_all_metadata"] in (True, "1", "true")


async def _outbox_done(aye: Aye) -> bool:
    async with aye.asks.parts.store.read() as conn:
        found = await conn.execute(OutboxRow.__table__.select())  # type: ignore[attr-defined]
        rows = found.all()
    return bool(rows) and all(row.done_at is not None for row in rows)


async def _post_recorded(aye: Aye) -> bool:
    async with aye.asks.parts.store.read() as conn:
        found = await conn.execute(PostRow.__table__.select())  # type: ignore[attr-defined]
        return found.first() is not None


async def test_a_dropped_connection_reconnects_and_presses_still_answer(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)
    ask = await aye.ask(question="Restart the workers?", options=["yes", "no"])
    call = await posted(fake_slack)
    await fake_slack.wait_connected()
    assert await _health(aye) == {"on": True, "connected": True, "auth": "ok", "app_token": "ok"}

    await fake_slack.drop_connections()
    await fake_slack.wait_connected(opened=2)
    await press(fake_slack, RESPONDER, call, "yes")

    assert (await aye.wait(ask["id"]))["answer"]["value"] == "yes"
    await eventually(lambda: _connected(aye))


async def _health(aye: Aye) -> dict[str, Any]:
    resp = await aye.client.get("/healthz")
    assert resp.status == 200
    return (await resp.json())["surfaces"]["slack"]  # type: ignore[no-any-return]


async def _connected(aye: Aye) -> bool:
    return bool((await _health(aye))["connected"])


async def test_a_refused_bot_token_keeps_the_api_serving_and_posts_waiting(
    fake_slack: FakeSlack,
    start_aye: StartAye,
    sqlite_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    fake_slack.bot_token = "xoxb-another-token"
    aye = await start(start_aye, sqlite_url, fake_slack)

    health = await _health(aye)
    ask = await aye.ask(question="Still there?", options=["yes", "no"])
    await eventually(lambda: _post_attempted(aye))

    assert health == {
        "on": True,
        "connected": False,
        "auth": "invalid_auth",
        "app_token": "unchecked",
    }
    refusals = [r for r in caplog.records if r.getMessage() == "slack.token_refused"]
    assert len(refusals) == 1
    assert fake_slack.calls_to("chat.postMessage") == []
    assert fake_slack.calls_to("apps.connections.open") == []
    status, _ = await aye.answer(ask["ref"], "yes")
    assert status == 200
    lines = logged(caplog)
    assert "slack.token_refused token=SLACK_BOT_TOKEN slack_error=invalid_auth" in lines
    assert BOT_TOKEN not in lines and "xoxb-another-token" not in lines


async def _post_attempted(aye: Aye) -> bool:
    async with aye.asks.parts.store.read() as conn:
        found = await conn.execute(OutboxRow.__table__.select())  # type: ignore[attr-defined]
        row = found.first()
    return row is not None and row.last_error is not None and row.done_at is None


async def test_slack_unreachable_at_start_is_retried_in_the_background(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    # A 502 (which slack-sdk does not retry in place) leaves it to the background retry.
    fake_slack.fail_next("auth.test", status=502)
    aye = await start(start_aye, sqlite_url, fake_slack)

    assert (await _health(aye))["auth"] == "unreachable"
    ask = await aye.ask(question="Ready?", options=["yes", "no"])
    await fake_slack.wait_connected(timeout=10)
    await eventually(lambda: _connected(aye))
    call = await posted(fake_slack)
    await press(fake_slack, RESPONDER, call, "yes")

    assert (await aye.wait(ask["id"]))["status"] == "answered"
    assert [c.status for c in fake_slack.calls_to("auth.test")][:2] == [502, 200]


async def test_a_refused_app_token_is_reported(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    fake_slack.app_token = "xapp-another-token"
    aye = await start(start_aye, sqlite_url, fake_slack)

    health = await _health(aye)
    await aye.ask(question="Posted all the same?", options=["yes", "no"])
    await posted(fake_slack)

    assert health == {"on": True, "connected": False, "auth": "ok", "app_token": "invalid_auth"}
    assert fake_slack.connections_opened == 0
