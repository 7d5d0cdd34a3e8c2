"""What aye shows in Slack stays within Slack's limits, never cuts an approval's input silently,
and never lets agent text mention anyone, in the blocks or in the notification text.

Through the real surface: slack-bolt/slack-sdk against the fake Slack, which refuses blocks and
views as Slack does (`invalid_blocks`), so a message over a limit is a failed call here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.app.timing import ManualClock
from core.domain import rules
from tests.conftest import AGENT_HEADERS, Aye, StartAye
from tests.e2e.test_slack_surface import (
    DEFAULT_CHANNEL,
    ESCALATED_TO,
    GATED,
    RESPONDER,
    ok,
    poke_outbox,
    posted,
    press,
    shown,
    start,
    told,
)
from tests.fake_slack import FakeSlack, block_problems

# What an agent could write to reach people through a notification: a channel ping, a here
# ping, a person, a user group, and a link with a misleading label.
MENTIONS = "<!channel> <!here> <@U0BOSS1> <!subteam^S0TEAM1> <https://evil.example|the docs> &"
MENTIONS_SHOWN = (
    "&lt;!channel&gt; &lt;!here&gt; &lt;@U0BOSS1&gt; &lt;!subteam^S0TEAM1&gt; "
    "&lt;https://evil.example|the docs&gt; &amp;"
)
RAW = ("<!channel>", "<!here>", "<@U0BOSS1>", "<!subteam^S0TEAM1>", "<https://")
SLACK_CALLS = ("chat.postMessage", "chat.update", "chat.postEphemeral", "views.open")


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    """For tests of Slack's limits alone: they need a store, not both kinds of it."""
    return f"sqlite+aiosqlite:///{tmp_path}/aye.db"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sections(message: dict[str, Any]) -> list[str]:
    return [b["text"]["text"] for b in message["blocks"] if b["type"] == "section"]


def all_accepted(fake: FakeSlack) -> None:
    """Every block or view aye sent was one Slack takes (the fake refuses the rest)."""
    refused = [(c.method, c.response) for c in fake.calls if c.method in SLACK_CALLS and not c.ok]
    assert refused == []


async def gated_call(aye: Aye, call_input: Any) -> dict[str, Any]:
    resp = await aye.client.post(
        "/v1/calls", json={"operation": "deploy.prod", "input": call_input}, headers=AGENT_HEADERS
    )
    assert resp.status == 202, await resp.text()
    return (await resp.json())["ask"]  # type: ignore[no-any-return]


def sha256_of(whole: str) -> str:
    """The input_sha256 aye gives for the input whose canonical JSON is `whole`."""
    return rules.input_shown(json.loads(whole), 0).sha256


def cut_note(message: dict[str, Any], ref: str, whole: str) -> str:
    """The section saying the input is cut; asserts what it must say."""
    [note] = [s for s in sections(message) if "The input is cut" in s]
    assert f"`aye show {ref}`" in note
    assert f"input_sha256 (the SHA-256 of its canonical form): `{sha256_of(whole)}`" in note
    assert f"input_sha256 `{sha256_of(whole)}`" in shown(message)  # and named below it
    assert f"of {len(whole):,} characters" in note
    return note


# -- an approval's input ------------------------------------------------------------------------


async def test_a_long_approval_input_says_it_is_cut_gives_its_sha256_and_where_to_read_it(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    # Canonical JSON sorts keys: what would run last is what a cut hides.
    call_input = {"a_steps": ["echo 'step <ok> & fine'"] * 300, "z": "DROP DATABASE prod;"}
    whole = canonical(call_input)
    aye = await start(start_aye, database_url, fake_slack, config=GATED, clock=manual_clock)
    ask = await gated_call(aye, call_input)
    poke_outbox(aye)

    first = await posted(fake_slack)
    message = fake_slack.message(DEFAULT_CHANNEL, first.response["ts"])
    assert message is not None
    ref = ask["ref"]
    [code] = [s for s in sections(message) if s.startswith("*Input:*\n```")]
    assert len(code) <= 3000 and code.endswith("```")
    # As much as fits, escaped: the shown part is the start of the whole canonical JSON.
    shown_part = code.removeprefix("*Input:*\n```").removesuffix("```")
    unescaped = shown_part.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert whole.startswith(unescaped) and len(unescaped) > 2000
    assert "DROP DATABASE" not in shown(message)
    note = cut_note(message, ref, whole)
    assert f"first {len(unescaped):,} of" in note

    # Escalated, and closed: both messages keep saying so.
    manual_clock.advance(61)
    await aye.tick()
    second = await posted(fake_slack, after=fake_slack.calls.index(first) + 1)
    cut_note(second.args, ref, whole)
    await press(fake_slack, ESCALATED_TO, second, "Approve", channel=DEFAULT_CHANNEL)
    await told(fake_slack, ESCALATED_TO)
    for update in await fake_slack.wait_for_calls("chat.update", 2, ok):
        cut_note(update.args, ref, whole)
    all_accepted(fake_slack)


async def test_an_input_that_fits_is_shown_whole_without_a_cut_note(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    call_input = {"version": "1.4.2", "note": "<b> & </b>"}
    aye = await start(start_aye, database_url, fake_slack, config=GATED)

    await gated_call(aye, call_input)
    call = await posted(fake_slack)

    text = shown(call.args)
    assert "*Input:*\n```" + canonical(call_input).replace("&", "&amp;").replace(
        "<", "&lt;"
    ).replace(">", "&gt;") + "```" in text
    assert "cut" not in text


async def test_an_input_of_escaped_characters_is_cut_to_fit_once_escaped(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    # Each `&` shows as `&amp;`: 2,990 characters of it are far more than a section holds.
    call_input = {"x": "&" * 2990}
    aye = await start(start_aye, sqlite_url, fake_slack, config=GATED)

    ask = await gated_call(aye, call_input)
    call = await posted(fake_slack)

    assert block_problems(call.args["blocks"]) == []
    assert all(len(s) <= 3000 for s in sections(call.args))
    cut_note(call.args, ask["ref"], canonical(call_input))


# -- agent text in the notification text --------------------------------------------------------


async def test_the_notification_text_of_the_post_and_its_update_cannot_mention_anyone(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)

    ask = await aye.ask(question=f"Ship it? {MENTIONS}", options=["yes", "no"], context=MENTIONS)
    call = await posted(fake_slack)
    await press(fake_slack, RESPONDER, call, "yes")
    update = await fake_slack.wait_for_call("chat.update", ok)

    for sent in (call, update):
        text = sent.args["text"]
        assert text.startswith(f"[{ask['ref']}] Ship it? {MENTIONS_SHOWN}")
        assert not any(raw in text for raw in RAW), text
        assert not any(raw in shown(sent.args) for raw in RAW)


# -- everything aye sends passes Slack's checks -------------------------------------------------


async def test_long_questions_contexts_options_notes_and_the_modal_pass_slacks_checks(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)
    longest = "<&>" * 1000  # 3,000 characters, 15,000 once escaped
    options = [f"{n:02d}" + "&" * 73 for n in range(20)]

    many = await aye.ask(question=longest, context=longest, options=options)
    first = await posted(fake_slack)
    free = await aye.ask(question=longest, context=longest)
    second = await posted(fake_slack, after=fake_slack.calls.index(first) + 1)
    await press(fake_slack, RESPONDER, second, "Answer")
    opened = await fake_slack.wait_for_call("views.open")
    status, _ = await aye.answer(many["ref"], options[19], note=longest)
    assert status == 200
    await fake_slack.submit_view(RESPONDER, {"answer": {"text": longest}})
    await aye.wait(free["id"])
    await fake_slack.wait_for_calls("chat.update", 2, ok)
    await told(fake_slack, RESPONDER)

    assert opened.ok
    all_accepted(fake_slack)
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    first_message = fake_slack.message(DEFAULT_CHANNEL, first.response["ts"])
    assert first_message is not None and "Answered by the operator" in shown(first_message)
