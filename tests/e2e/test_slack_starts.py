"""Approving a start in Slack, end to end: the approval shows what would start in words (the
agent, the thread, the title, the links, the trigger), never `human.start` and its JSON; an
Approve press lets the agent's later starts through; a refusal's reason is shown and cancels
the work; escalation and the timed-out end say so too. The real aye (API, store, outbox, clock)
and the real slack-bolt/slack-sdk against the fake Slack on 127.0.0.1, which checks every block
as Slack does (slack_sdk's models)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ask_api.tokens import TokenBook
from bot.config import Config
from core.app.timing import ManualClock
from handlers.slack import blocks, modals, starts
from tests import builders
from tests.conftest import OPERATOR_TOKEN, Aye, StartAye
from tests.e2e.test_slack_surface import (
    ESCALATED_TO,
    RESPONDER,
    WORK_CHANNEL,
    labels,
    ok,
    poke_outbox,
    posted,
    press,
    shown,
    slack_env,
    told,
)
from tests.fake_slack import FakeSlack, SlackCall, block_problems, view_problems

TRIAGE = {"Authorization": "Bearer triage-token"}
RUNBOOK = "https://docs.example/runbook?a=1&b=2"
SLACK_CALLS = ("chat.postMessage", "chat.update", "chat.postEphemeral", "views.open")


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/aye.db"


def gated(**gate: Any) -> Config:
    return Config.model_validate({
        "agents": [{"name": "triage", "token_env": "AYE_TOKEN_TRIAGE"}],
        "gates": [{"kinds": ["slack.thread"], "agents": ["triage"], "timeout": "1h",
                   "responders": [f"slack:{RESPONDER}"], **gate}],
    })


async def started(
    start_aye: StartAye, database_url: str, fake: FakeSlack, monkeypatch: pytest.MonkeyPatch,
    clock: ManualClock | None = None, **gate: Any,
) -> Aye:
    monkeypatch.setenv("AYE_TOKEN_TRIAGE", "triage-token")
    config = gated(**gate)
    aye = await start_aye(database_url, config, clock, env=slack_env(fake),
                          tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    aye.headers = dict(TRIAGE)
    return aye


def thread(fake: FakeSlack) -> dict[str, Any]:
    ts = fake.add_message(WORK_CHANNEL, "the deploy job is flaky again", user="U0ASKER01")
    return {"slack": {"channel": WORK_CHANNEL, "thread_ts": ts}}


async def start(aye: Aye, work: dict[str, Any], **what: Any) -> tuple[int, dict[str, Any]]:
    resp = await aye.client.post("/v1/starts", json={"work": work, **what}, headers=TRIAGE)
    return resp.status, await resp.json()


async def start_and_post(
    aye: Aye, fake: FakeSlack, work: dict[str, Any], **what: Any
) -> tuple[dict[str, Any], SlackCall]:
    after = len(fake.calls)
    status, body = await start(aye, work, **what)
    assert status == 202, body
    poke_outbox(aye)
    return body["ask"], await posted(fake, after=after)


def all_accepted(fake: FakeSlack) -> None:
    refused = [(c.method, c.response) for c in fake.calls if c.method in SLACK_CALLS and not c.ok]
    assert refused == []


async def test_a_start_is_shown_in_words_and_approved_by_a_button(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aye = await started(start_aye, database_url, fake_slack, monkeypatch)
    work = thread(fake_slack)
    ask, call = await start_and_post(aye, fake_slack, work, title="Fix the flaky deploy",
                                     links=[RUNBOOK], trigger="mentioned in #ops")
    ref = ask["ref"]

    assert (call.args["channel"], call.args["thread_ts"]) == (WORK_CHANNEL, work["slack"]["thread_ts"])
    text = shown(call.args)
    assert "*May triage start on this thread?*" in text
    assert f"*Agent:* triage\n*Work:* this thread, in <#{WORK_CHANNEL}>" in text
    assert "*Title:* Fix the flaky deploy" in text and "*Trigger:* mentioned in #ops" in text
    escaped = RUNBOOK.replace("&", "&amp;")
    assert f":link: <{escaped}|{escaped}>" in text
    assert "human.start" not in text and '"agent"' not in text  # words, not the JSON
    assert call.args["text"] == f"[{ref}] May triage start on this thread?"
    assert labels(call.args) == ["Approve", "Refuse"]

    await press(fake_slack, RESPONDER, call, "Approve")
    reply = await told(fake_slack, RESPONDER)
    closed = await fake_slack.wait_for_call("chat.update", lambda c: c.ok and not labels(c.args))

    assert reply.args["text"] == f"You approved triage starting on this thread (`{ref}`)."
    assert f"Start approved by <@{RESPONDER}>: triage may start." in shown(closed.args)
    assert "*Title:* Fix the flaky deploy" in shown(closed.args)  # what was approved stays shown
    for _ in range(2):  # the agent's next starts of this thread are allowed, without asking
        status, body = await start(aye, work)
        assert (status, body["decision"]) == (200, "allow")
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    all_accepted(fake_slack)


async def test_a_refused_start_says_the_work_is_cancelled_and_stays_refused(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aye = await started(start_aye, database_url, fake_slack, monkeypatch)
    work = thread(fake_slack)
    ask, call = await start_and_post(aye, fake_slack, work, title="Rewrite the deploy job")

    after = len(fake_slack.calls)
    await press(fake_slack, RESPONDER, call, "Refuse")
    opened = await fake_slack.wait_for_call("views.open", ok, after=after)
    heading = opened.args["view"]["blocks"][0]["text"]["text"]
    assert heading == "*Refuse triage starting on this thread? That cancels the work for triage.*"
    assert (await aye.get(ask["id"]))["status"] == "open"  # the press alone decides nothing
    await fake_slack.submit_view(RESPONDER, {"reason": {"text": "we fix it by hand <!here>"}})

    reply = await told(fake_slack, RESPONDER)
    closed = await fake_slack.wait_for_call("chat.update", ok)
    assert reply.args["text"] == (f"You refused triage starting on this thread (`{ask['ref']}`): "
                                  "the work is cancelled for triage.")
    assert (f"Start refused by <@{RESPONDER}> — the work is cancelled for triage.\n"
            ">we fix it by hand &lt;!here&gt;") in shown(closed.args)
    assert labels(closed.args) == []
    assert closed.args["text"] == f"[{ask['ref']}] May triage start on this thread? (refused)"
    for _ in range(2):  # cancelled for good: every later start of this thread is refused
        status, body = await start(aye, work)
        assert (status, body["error"], body["by"]) == (403, "start_refused", f"slack:{RESPONDER}")
        assert body["note"] == "we fix it by hand <!here>"
    all_accepted(fake_slack)


async def test_an_escalated_start_that_nobody_approves_cancels_the_work(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aye = await started(start_aye, sqlite_url, fake_slack, monkeypatch, manual_clock,
                        timeout="1m", remind_after="30s",
                        escalate={"responders": [f"slack:{ESCALATED_TO}"], "timeout": "1h"})
    work = thread(fake_slack)
    ask, first = await start_and_post(aye, fake_slack, work, title="Retry the deploy")

    manual_clock.advance(31)
    await aye.tick()
    reminder = await fake_slack.wait_for_call("chat.postMessage", lambda c: c.ok and (
        c.args.get("metadata") or {}).get("event_type") == blocks.REMINDER_EVENT)
    assert (f":bell: *Reminder* for <@{RESPONDER}>: `{ask['ref']}` (May triage start on this "
            "thread?) is still open.") in shown(reminder.args)
    manual_clock.advance(30)
    await aye.tick()
    again = await fake_slack.wait_for_call("chat.postMessage", lambda c: c.ok and (
        c.args.get("metadata") or {}).get("event_type") == blocks.ESCALATION_EVENT)
    text = shown(again.args)
    assert again.args["thread_ts"] == first.args["thread_ts"]  # in the same thread
    assert "*May triage start on this thread? (escalated)*" in text
    assert f"It now goes to <@{ESCALATED_TO}> as well" in text
    assert "the start will be refused and the work is cancelled for triage." in text
    assert "*Title:* Retry the deploy" in text and labels(again.args) == ["Approve", "Refuse"]

    manual_clock.advance(3601)
    await aye.tick()
    updates = await fake_slack.wait_for_calls("chat.update", 2, ok)
    for update in updates:
        assert re.search(r"Start refused: nobody approved it by <!date\^\d+\^[^>]*> — the work "
                         r"is cancelled for triage\.", shown(update.args))
        assert labels(update.args) == []
    status, body = await start(aye, work)
    assert (status, body["error"]) == (403, "approval_timed_out")
    assert (await aye.get(ask["id"]))["outcome"] == "approval_timed_out"
    all_accepted(fake_slack)


# -- the words, pure ----------------------------------------------------------------------------

HOSTILE_LINKS = [
    "https://evil.example/a|<!channel>>x",  # would end the link, show a mention
    "https://evil.example/" + "&" * 1970,  # five-fold once escaped: too long for an element
    "http://plain.example/",  # an older row is not trusted to hold https only
]


def a_start(**fields: Any) -> Any:
    work = {"github": {"repo": "octo/app", "number": 7, "type": "pull"}}
    what = {"agent": "tri<@U0EVIL>age", "work": work, "title": "<!channel> <@U0EVIL> *hi*",
            "links": HOSTILE_LINKS, "trigger": "<https://evil.example|click> & run"}
    return builders.approval(**{"operation": "human.start", "question": "human.start",
                                "call_input": what, "work": work, "agent": "triage", **fields})


def test_agent_text_in_a_start_can_neither_mention_nor_link_nor_break_out() -> None:
    message = blocks.question_message(a_start(), "a7")
    text = "\n".join([message.text, *(str(b) for b in message.blocks)])

    assert block_problems(message.blocks) == []
    assert "<!channel>" not in text and "<@U0EVIL>" not in text and "|click>" not in text
    assert "*May tri&lt;@U0EVIL&gt;age start on octo/app#7?*" in str(message.blocks[0])
    assert "*Work:* GitHub pull request octo/app#7" in str(message.blocks[1])
    [links] = [b for b in message.blocks if b["type"] == "context" and "*Links:*" in str(b)]
    shown_links = [e["text"] for e in links["elements"][1:]]
    safe = "https://evil.example/a%7C%3C!channel%3E%3Ex"
    assert shown_links[0] == f":link: <{safe}|{safe}>"
    assert shown_links[1].startswith(":link: https://evil.example/&amp;")
    assert shown_links[1].endswith("(too long to show here: read it whole with `aye show a7`)")
    assert "<" not in shown_links[1]
    assert shown_links[2] == "http://plain.example/ (not an https:// address, so not linked)"
    # Each link is one <address|label>: nothing inside either part opens or closes another.
    for element in shown_links:
        assert element.count("<") == element.count(">") <= 1


def test_every_message_and_the_refusal_modal_of_a_start_pass_slack_sdk_s_checks() -> None:
    ask = a_start()
    closed = [a_start(status="answered", outcome=outcome, answered_by=f"slack:{RESPONDER}",
                      answer_note="no" * 500) for outcome in ("approved", "approval_refused")]
    timed_out = a_start(status="expired", outcome="approval_timed_out")
    escalated = a_start(escalated_at=1.0, escalate_responders=[f"slack:{ESCALATED_TO}"])
    messages = [blocks.question_message(ask, "a7"), blocks.escalation_message(escalated, "a7"),
                blocks.reminder_message(ask, "a7"),
                *(blocks.closed_message(a, "a7") for a in (*closed, timed_out))]
    for message in messages:
        assert block_problems(message.blocks) == [], message.blocks
        assert "human.start" not in message.text
    modal = modals.refusal_modal(ask, "a7")
    assert modal is not None and view_problems(modal) == []
    assert starts.is_start(ask) and not starts.is_start(builders.approval())
