"""The Slack surface's pure parts: Block Kit builders, button values, replies, routing rules."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from bot.config import Config
from core.app.ports import CLOSE, ESCALATE, POST, AnswerResult
from core.app.service import Service
from core.domain import rules
from core.domain.responders import Responder
from handlers.slack import blocks, buttons, modals, replies, submitted, text
from handlers.slack.settings import SlackSection, SlackSettings
from handlers.slack.surface import SlackSurface, retry_after
from store.models import AskRow
from tests import builders
from tests.fake_slack import block_problems, view_problems

ASK_ID = "0123456789abcdef0123456789abcdef"
DATE = "<!date^1893456000^{date_short_pretty} at {time}|2030-01-01 00:00 UTC>"


def make_ask(**fields: Any) -> AskRow:
    return builders.question(**{"id": ASK_ID, **fields})


def approval(**fields: Any) -> AskRow:
    # The operation's input also in the context, to show it is rendered once, as code.
    return builders.approval(**{
        "id": ASK_ID, "question": "Approve deploy.prod?", "context": 'Input: {"region":"eu"}',
        **fields,
    })


def text_of(message: blocks.Message | dict[str, Any]) -> str:
    found = message.blocks if isinstance(message, blocks.Message) else message["blocks"]
    parts = []
    for block in found:
        if "text" in block:
            parts.append(block["text"]["text"])
        parts += [e["text"] for e in block.get("elements") or [] if e.get("type") == "mrkdwn"]
    return "\n".join(parts)


def buttons_of(message: blocks.Message) -> list[dict[str, Any]]:
    return [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


# -- the question ------------------------------------------------------------------------------


def test_question_message_has_one_button_per_option_carrying_ask_and_number() -> None:
    message = blocks.question_message(make_ask(options=["yes", "no", "later"]), "q7")

    assert [(b["text"]["text"], b["action_id"], b["value"]) for b in buttons_of(message)] == [
        ("yes", "aye_option_1", f"{ASK_ID}:1"),
        ("no", "aye_option_2", f"{ASK_ID}:2"),
        ("later", "aye_option_3", f"{ASK_ID}:3"),
    ]
    assert all("style" not in b for b in buttons_of(message))
    assert message.metadata == {"event_type": "aye_ask", "event_payload": {"ask_id": ASK_ID}}


def test_question_message_says_who_it_is_for_the_deadline_and_the_ref() -> None:
    responders = ["slack:U0123ABCD", "slack", "github:octocat", "github", "operator:local"]
    ask = make_ask(context="The tests pass.", responders=responders)

    shown = text_of(blocks.question_message(ask, "q7"))

    assert "*Deploy now?*" in shown
    assert "The tests pass." in shown
    assert (
        "*For:* <@U0123ABCD>, anyone in Slack, octocat on GitHub, anyone on GitHub, the operator"
        in shown
    )
    assert f"*Answer by:* {DATE}" in shown
    assert "*Ref:* `q7`" in shown


def test_approval_shows_operation_and_input_with_approve_and_refuse_styled() -> None:
    message = blocks.question_message(approval(), "a1")

    # Approve answers at once; Refuse opens a modal asking why.
    assert [(b["text"]["text"], b.get("style"), b["action_id"], b["value"])
            for b in buttons_of(message)] == [
        ("Approve", "primary", "aye_option_1", f"{ASK_ID}:1"),
        ("Refuse", "danger", "aye_refuse", ASK_ID),
    ]
    shown = text_of(message)
    assert "*Operation:* `deploy.prod`" in shown
    assert '*Input:*\n```{"region":"eu"}```' in shown
    assert "Input: {" not in shown  # shown once, as code


def test_free_text_gets_an_answer_button() -> None:
    message = blocks.question_message(make_ask(options=None), "q7")

    assert [(b["text"]["text"], b["action_id"], b["value"]) for b in buttons_of(message)] == [
        ("Answer", "aye_answer", ASK_ID)
    ]


def test_fallback_text_never_holds_more_than_the_question() -> None:
    ask = make_ask(sensitive=True, context="the vault path is /secret/x")

    message = blocks.question_message(ask, "q7")

    assert message.text == "[q7] Deploy now?"


def test_agent_text_cannot_ping_or_break_out_of_mrkdwn() -> None:
    ask = make_ask(question="Ping <!channel> & <@U999>?", context="<https://evil|click>")

    shown = text_of(blocks.question_message(ask, "q7"))

    assert "<!channel>" not in shown and "<@U999>" not in shown and "<https://" not in shown
    assert "Ping &lt;!channel&gt; &amp; &lt;@U999&gt;?" in shown


def test_long_text_is_cut_within_slacks_limits_and_never_inside_an_entity() -> None:
    ask = make_ask(question="&" * 3000, context="x" * 3000)

    message = blocks.question_message(ask, "q7")

    assert block_problems(message.blocks) == []
    for block in message.blocks:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
    assert text.fit("ab&cd", 4) == "ab…"
    assert text.fit("a&bcdefgh", 8) == "a&amp;b…"
    assert text.fit("short", 10) == "short"


MENTIONS = "<!channel> <!here> <@U0BOSS1> <!subteam^S0TEAM1> <https://evil.example|docs> &"
ESCAPED = (
    "&lt;!channel&gt; &lt;!here&gt; &lt;@U0BOSS1&gt; &lt;!subteam^S0TEAM1&gt; "
    "&lt;https://evil.example|docs&gt; &amp;"
)


@pytest.mark.parametrize(
    "build",
    [
        lambda ask: blocks.question_message(ask, "q7"),
        lambda ask: blocks.closed_message(ask.model_copy(update={"status": "withdrawn"}), "q7"),
        lambda ask: blocks.closed_message(ask.model_copy(update={"status": "expired"}), "q7", True),
        lambda ask: blocks.escalation_message(ask, "q7"),
    ],
    ids=["post", "close", "close-escalation", "escalation"],
)
def test_notification_text_is_escaped_like_the_blocks(build: Any) -> None:
    message = build(make_ask(question=f"Ship? {MENTIONS}", escalate_responders=["slack:U0456EFGH"]))

    assert message.text.startswith(f"[q7] Ship? {ESCAPED}")
    assert "<" not in message.text and ">" not in message.text


def test_an_approval_s_notification_text_is_escaped_too() -> None:
    ask = approval(operation="deploy.<!here>&", question="deploy.<!here>&")

    for message in (blocks.question_message(ask, "a1"), blocks.escalation_message(ask, "a1"),
                    blocks.closed_message(ask.model_copy(update={"status": "expired"}), "a1")):
        assert "deploy.&lt;!here&gt;&amp;" in message.text
        assert "<!here>" not in message.text and "<!here>" not in text_of(message)


def test_a_long_notification_text_is_cut_outside_an_entity() -> None:
    message = blocks.question_message(make_ask(question="&" * 3000), "q7")

    assert len(message.text) <= blocks.FALLBACK_MAX
    assert message.text.endswith("&amp;…")


def test_replies_quoting_people_s_or_agents_text_escape_it() -> None:
    answered = make_ask(status="answered", answer_value="<!channel> done & dusted")
    words = replies.reply(make_ask(), "q7", AnswerResult(True, None, answered))

    assert words == "Thanks: your answer to `q7` was taken: *&lt;!channel&gt; done &amp; dusted*"


# -- an approval's input ------------------------------------------------------------------------


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_an_input_that_fits_is_shown_whole_with_no_note() -> None:
    ask = approval(call_input={"version": "1.2", "html": "<b>&</b>"})

    found = blocks.input_blocks(ask, "a1")

    assert [b["text"]["text"] for b in found] == [
        '*Input:*\n```{"html":"&lt;b&gt;&amp;&lt;/b&gt;","version":"1.2"}```'
    ]


@pytest.mark.parametrize(
    "call_input",
    [
        {"steps": ["echo ok"] * 1000, "z": "DROP DATABASE prod;"},
        {"z": "&" * 5000},  # five characters shown for each
        {"a": "x" * 2969, "b": "ok"},  # one character over the 2,985 a section holds
    ],
    ids=["long", "escaped", "just-over"],
)
def test_a_cut_input_says_so_with_its_sha256_and_where_to_read_it(call_input: Any) -> None:
    whole = canonical(call_input)

    code, note = blocks.input_blocks(approval(call_input=call_input), "a1")

    assert block_problems([code, note]) == []
    shown = code["text"]["text"].removeprefix("*Input:*\n```").removesuffix("```")
    plain = shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert whole.startswith(plain) and len(plain) < len(whole)
    assert len(code["text"]["text"]) <= 3000
    assert "DROP DATABASE" not in shown  # what a cut hides: the note below says it is there
    assert note["text"]["text"] == (
        f":warning: *The input is cut:* shown above are its first {len(plain):,} of "
        f"{len(whole):,} characters, and the rest runs too. Read it whole with `aye show a1` "
        "before approving. The whole input's input_sha256 (the SHA-256 of its canonical "
        f"form): `{rules.input_shown(call_input, 0).sha256}`"
    )


def test_an_input_exactly_filling_the_section_is_whole() -> None:
    budget = 3000 - len("*Input:*\n```") - len("```")
    call_input = {"a": "x" * (budget - len('{"a":""}'))}

    [code] = blocks.input_blocks(approval(call_input=call_input), "a1")

    assert len(code["text"]["text"]) == 3000


def test_every_message_and_the_modal_pass_slack_sdk_s_checks() -> None:
    longest = "<&>" * 1000
    ask = make_ask(question=longest, context=longest, options=[f"{n:02d}" + "&" * 73 for n in range(20)],
                   answer_value=longest, answer_note=longest, answered_by="github:" + "x" * 39,
                   escalate_responders=[f"slack:U{n:08d}" for n in range(50)])
    big = approval(call_input={"x": longest * 10}, escalate_responders=["slack:U0456EFGH"])
    messages = [
        build(a, ref)
        for a, ref in ((ask, "q7zzzzzz"), (big, "a7zzzzzz"))
        for build in (blocks.question_message, blocks.escalation_message, blocks.closed_message)
    ]
    messages += [blocks.closed_message(ask.model_copy(update={"status": "answered"}), "q7")]

    for message in messages:
        assert block_problems(message.blocks) == []
    free = make_ask(question=longest, options=None, sensitive=True)
    assert view_problems(modals.answer_modal(free, "q7zzzzzz")) == []


def test_button_text_is_cut_to_75() -> None:
    ask = make_ask(options=["x" * 75, "y"])

    assert len(buttons_of(blocks.question_message(ask, "q7"))[0]["text"]["text"]) == 75


# -- closed, escalated, modal ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"status": "answered", "answer_value": "no", "answered_by": "slack:U0123ABCD"},
         ":white_check_mark: Answered by <@U0123ABCD>: *no*"),
        ({"status": "answered", "answer_value": "no", "answer_note": "after lunch",
          "answered_by": "github:octocat"},
         ":white_check_mark: Answered by octocat on GitHub: *no*\n>after lunch"),
        ({"status": "answered", "answer_value": "s3cret", "answer_note": "s3cret note",
          "sensitive": True, "answered_by": "operator:local"},
         ":white_check_mark: Answered by the operator. The answer is private."),
        ({"status": "expired"}, f":hourglass: Expired: nobody answered by {DATE}."),
        ({"status": "withdrawn"},
         ":leftwards_arrow_with_hook: Withdrawn: the answer is no longer needed."),
    ],
    ids=["answered", "note", "sensitive", "expired", "withdrawn"],
)
def test_closed_message_says_how_it_ended_without_buttons(
    fields: dict[str, Any], line: str
) -> None:
    message = blocks.closed_message(make_ask(**fields), "q7")

    assert line in text_of(message)
    assert buttons_of(message) == []
    assert "s3cret" not in str(message)


@pytest.mark.parametrize(
    ("fields", "line", "words"),
    [
        ({"status": "answered", "outcome": "approved", "answered_by": "slack:U1AB"},
         ":white_check_mark: Approved by <@U1AB>.", "approved"),
        ({"status": "answered", "outcome": "approval_refused", "answered_by": "slack:U1AB"},
         ":no_entry: Refused by <@U1AB>.", "refused"),
        ({"status": "expired", "outcome": "approval_timed_out"},
         f":hourglass: Refused: nobody approved it by {DATE}.", "refused (timed out)"),
    ],
    ids=["approved", "refused", "timed-out"],
)
def test_closed_approval(fields: dict[str, Any], line: str, words: str) -> None:
    message = blocks.closed_message(approval(**fields), "a1")

    assert line in text_of(message)
    assert message.text == f"[a1] Approve deploy.prod? ({words})"


def test_escalation_message_names_who_it_now_goes_to_and_when_it_is_refused() -> None:
    ask = approval(escalate_responders=["slack:U0456EFGH", "operator:local"], escalated_at=1.0)

    message = blocks.escalation_message(ask, "a1")

    shown = text_of(message)
    assert "*Approve or refuse `deploy.prod`? (escalated)*" in shown
    assert "Nobody answered in time. It now goes to <@U0456EFGH>, the operator as well" in shown
    assert f"unless someone answers by {DATE}, it will be refused." in shown
    assert [b["text"]["text"] for b in buttons_of(message)] == ["Approve", "Refuse"]
    assert message.metadata["event_type"] == "aye_escalation"
    assert message.text == "[a1] Approve or refuse deploy.prod? (escalated)"


def test_answer_modal() -> None:
    modal = modals.answer_modal(make_ask(options=None, sensitive=True), "q12345678")

    assert modal is not None
    assert modal["callback_id"] == "aye_answer"
    assert modal["private_metadata"] == ASK_ID
    assert len(modal["title"]["text"]) <= 24
    field = modal["blocks"][-1]
    assert (field["block_id"], field["element"]["action_id"]) == ("answer", "text")
    assert field["element"]["max_length"] == 3000
    assert field["optional"] is False
    assert "private" in field["hint"]["text"]
    state = {"answer": {"text": {"type": "plain_text_input", "value": "ok"}}}
    assert submitted.answer_text(state) == "ok"
    assert submitted.answer_text({}) == ""


# -- values, replies, rules --------------------------------------------------------------------


def test_option_values_parse_back() -> None:
    assert buttons.parse_option_value(f"{ASK_ID}:2") == (ASK_ID, 2)
    for bad in ("", ASK_ID, f"{ASK_ID}:", f"{ASK_ID}:x", "q7:1", f"{ASK_ID.upper()}:1"):
        assert buttons.parse_option_value(bad) is None


def test_marked_ask_id() -> None:
    marked = {"metadata": {"event_type": "aye_ask", "event_payload": {"ask_id": ASK_ID}}}

    assert blocks.marked_ask_id(marked) == ASK_ID
    assert blocks.marked_ask_id(marked, blocks.ESCALATION_EVENT) is None
    assert blocks.marked_ask_id({"text": "hi"}) is None


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (AnswerResult(False, "not_a_responder", None),
         "Your answer to `q7` was not taken: you are not one of the people this is for."),
        (AnswerResult(False, "answered", None),
         "Your answer to `q7` was not taken: it was already answered."),
        (AnswerResult(False, "expired", None),
         "Your answer to `q7` was not taken: it has expired."),
        (AnswerResult(False, "withdrawn", None),
         "Your answer to `q7` was not taken: it was withdrawn."),
        (AnswerResult(True, None, make_ask(status="answered", answer_value="yes")),
         "Thanks: your answer to `q7` was taken: *yes*"),
        (AnswerResult(True, None, make_ask(status="answered", answer_value="pw", sensitive=True)),
         "Thanks: your answer to `q7` was taken."),
    ],
    ids=["not-a-responder", "answered", "expired", "withdrawn", "taken", "sensitive"],
)
def test_reply_in_words(result: AnswerResult, words: str) -> None:
    assert replies.reply(make_ask(), "q7", result) == words


def test_reply_to_an_approval() -> None:
    approved = approval(status="answered", outcome="approved", answer_value="approve")

    assert replies.reply(approval(), "a1", AnswerResult(True, None, approved)) == (
        "You approved `deploy.prod` (`a1`)."
    )


def test_retry_after_reads_either_header_shape() -> None:
    assert retry_after({"Retry-After": ["7"]}) == 7.0
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({}) == 30.0
    assert retry_after({"Retry-After": "soon"}) == 30.0


def surface(default_channel: str | None) -> SlackSurface:
    settings = SlackSettings("xoxb-1", "xapp-1")
    config = Config.model_validate({"slack": {"default_channel": default_channel}})
    section = config.section("slack")
    assert isinstance(section, SlackSection)
    # reaches/wants read no store: no core is needed.
    return SlackSurface(settings, section, cast(Service, None))


def test_reaches_slack_people_in_a_thread_or_with_a_default_channel() -> None:
    thread = {"slack": {"channel": "C1", "thread_ts": "1.2"}}
    issue = {"github": {"repo": "o/r", "number": 1}}

    assert surface(None).reaches(Responder("slack", "U1AB"), thread)
    assert surface(None).reaches(Responder("slack"), thread)
    assert not surface(None).reaches(Responder("slack", "U1AB"), issue)
    assert not surface(None).reaches(Responder("github", "octocat"), thread)
    assert surface("C0DEF").reaches(Responder("slack", "U1AB"), issue)
    assert surface("C0DEF").reaches(Responder("slack", "U1AB"), None)


def test_wants_posts_in_a_thread_or_for_slack_responders_in_the_default_channel() -> None:
    thread = {"slack": {"channel": "C1", "thread_ts": "1.2"}}
    operator_only = make_ask(responders=["operator:local"])
    escalates_to_slack = make_ask(
        responders=["operator:local"], escalate_responders=["slack:U0456EFGH"]
    )

    assert surface(None).wants(make_ask(work=thread, responders=["operator:local"]), POST)
    assert not surface(None).wants(make_ask(), POST)
    assert surface("C0DEF").wants(make_ask(), POST)
    assert not surface("C0DEF").wants(operator_only, POST)
    assert not surface("C0DEF").wants(escalates_to_slack, POST)
    assert surface("C0DEF").wants(escalates_to_slack, ESCALATE)
    assert surface("C0DEF").wants(escalates_to_slack, CLOSE)
