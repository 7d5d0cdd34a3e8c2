"""Every message aye posts or updates in Slack fits Block Kit's limits, whatever the lengths of
the question, context, options, media, input, answer and note: checked with slack-sdk's own
Block Kit models (the fake's `block_problems`) and Slack's limits they do not check, for
every builder, by property; and end to end, a closed message holding a 2,900-character answer
and a 500-line note is updated on the fake Slack, which refuses what Slack refuses.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from core.domain import rules
from handlers.slack import blocks, modals
from store.models import AskRow
from tests import builders
from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, StartAye
from tests.e2e.test_slack_surface import (
    DEFAULT_CHANNEL,
    GATED,
    labels,
    ok,
    posted,
    shown,
    start,
)
from tests.fake_slack import BOT_TOKEN, FakeSlack, block_problems, view_problems

# Slack's limits (https://api.slack.com/reference/block-kit/blocks): a message's blocks, a
# section's text, a context's elements and each one's text, a message's top-level text.
MESSAGE_BLOCKS_MAX = 50
SECTION_MAX = 3000
CONTEXT_ELEMENTS_MAX = 10
ELEMENT_MAX = 3000
TEXT_MAX = 40_000
ASK_ID = "0123456789abcdef0123456789abcdef"
CALL_HASH = "c" * 64

# What makes text grow once shown: entities (`&` takes five), a quote mark per line, mrkdwn,
# mentions an agent might try, emoji (two UTF-16 units), accents.
PIECES = st.text(alphabet=st.sampled_from(list("ab &<>*_`~\n:|@!#é😀")), min_size=1, max_size=4)


def long_text(most: int, least: int = 0) -> st.SearchStrategy[str]:
    """Short texts, texts of a few characters repeated up to `most` characters, and many short
    lines (each quoted line of a note takes one more character), the longest often."""
    short = st.text(min_size=least, max_size=min(40, most))
    repeated = st.builds(lambda unit, n: (unit * n)[:most], PIECES, st.integers(1, most))
    lines = st.builds(lambda line, n: ((line + "\n") * n)[:most], st.text(max_size=3),
                      st.integers(1, most))
    longest = st.builds(lambda unit: (unit * most)[:most], PIECES)
    longest_lines = st.builds(lambda line: ((line + "\n") * most)[:most], st.text(max_size=3))
    return st.one_of(short, repeated, lines, longest, longest_lines).filter(
        lambda t: len(t) >= least)


OPTIONS = st.lists(long_text(75, 1), min_size=2, max_size=20, unique=True)
MEDIA = st.lists(st.fixed_dictionaries({
    "kind": st.sampled_from(["image", "link"]),
    "url": st.builds(lambda path: "https://example.com/" + path, long_text(1970)),
    "caption": long_text(200),
}), max_size=5)
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), long_text(500)),
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(long_text(20), inner, max_size=5)),
    max_leaves=20,
)
BIG_INPUT = st.builds(lambda text, n: {"steps": [text] * n}, long_text(200, 1), st.integers(0, 60))
ENDINGS = st.sampled_from([
    {"status": rules.OPEN},
    {"status": rules.ANSWERED},
    {"status": rules.ANSWERED},  # twice: the ending that shows the most
    {"status": rules.ANSWERED, "sensitive": True},
    {"status": rules.EXPIRED},
    {"status": rules.WITHDRAWN},
])
APPROVAL_ENDINGS = st.sampled_from([
    {"status": rules.OPEN},
    {"status": rules.ANSWERED, "outcome": rules.APPROVED, "answer_value": "approve"},
    {"status": rules.ANSWERED, "outcome": rules.APPROVAL_REFUSED, "answer_value": "refuse"},
    {"status": rules.EXPIRED, "outcome": rules.APPROVAL_TIMED_OUT},
    {"status": rules.WITHDRAWN},
])
PEOPLE = st.lists(st.sampled_from(["slack:U0123ABCD", "github:octocat", "slack:U0456EFGH",
                                   "operator:local", "github:" + "a" * 39]),
                  max_size=5, unique=True)


def problems(message: blocks.Message) -> list[str]:
    """Everything Slack would refuse in the message, or that is over one of its limits."""
    found: list[str] = []
    for shown_blocks in (message.blocks, message.links_only or []):
        found += block_problems(shown_blocks)
        if len(shown_blocks) > MESSAGE_BLOCKS_MAX:
            found.append(f"{len(shown_blocks)} blocks")
        for block in shown_blocks:
            model = Block.parse(block)
            assert model is not None
            model.validate_json()  # slack-sdk's own checks, raising on a breach
            text = (block.get("text") or {}).get("text", "")
            if len(text) > SECTION_MAX:
                found.append(f"a {block['type']} of {len(text)} characters")
            elements = block.get("elements") or []
            if block["type"] == "context":
                if not 1 <= len(elements) <= CONTEXT_ELEMENTS_MAX:
                    found.append(f"a context of {len(elements)} elements")
                found += [f"a context element of {len(e['text'])}" for e in elements
                          if len(e.get("text", "")) > ELEMENT_MAX]
    if not message.text or len(message.text) > TEXT_MAX:
        found.append(f"a top-level text of {len(message.text)} characters")
    return found


def every_message(ask: AskRow) -> list[blocks.Message]:
    """Each message aye may post or update for `ask`: asking, escalated, reminding, closed
    (first post and escalation)."""
    return [blocks.question_message(ask, "q7zzzzzz"), blocks.escalation_message(ask, "q7zzzzzz"),
            blocks.reminder_message(ask, "q7zzzzzz"), blocks.closed_message(ask, "q7zzzzzz"),
            blocks.closed_message(ask, "q7zzzzzz", escalation=True)]


def answered(value: Any) -> str:
    """As the store keeps an answer's value."""
    return value if isinstance(value, str) else json.dumps(value)


SLOW = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SLOW
@given(question=long_text(3000, 1), context=long_text(3000), options=st.none() | OPTIONS,
       answer=long_text(5000, 1), note=st.none() | long_text(5000), media=MEDIA,
       ending=ENDINGS, responders=PEOPLE, escalated=PEOPLE)
def test_every_question_message_fits_whatever_the_lengths(
    question: str, context: str, options: list[str] | None, answer: str, note: str | None,
    media: list[dict[str, Any]], ending: dict[str, Any], responders: list[str],
    escalated: list[str],
) -> None:
    value = (options or [answer])[len(answer) % len(options)] if options else answer
    ask = builders.question(
        id=ASK_ID, question=question, context=context or None, options=options, media=media,
        answer_value=value, answer_note=note, answered_by="slack:U0123ABCD",
        responders=responders or ["operator:local"], escalate_responders=escalated,
        escalated_at=builders.CREATED_AT, **ending,
    )
    for message in every_message(ask):
        assert problems(message) == []
    if ask.status == rules.OPEN and options is None:
        view = modals.answer_modal(ask, "q7zzzzzz")
        assert view is not None and view_problems(view) == []


@SLOW
@given(answer=long_text(5000, 1), note=long_text(5000, 1),
       by=st.sampled_from(["slack:U0123ABCD", "github:" + "a" * 39, "operator:local"]),
       fmt=st.sampled_from(["text", "form"]))
def test_a_closed_answer_and_its_note_fit_together(answer: str, note: str, by: str,
                                                    fmt: str) -> None:
    schema = {"type": "object", "properties": {"why": {"type": "string", "title": "Why"}}}
    value = answer if fmt == "text" else json.dumps({"why": answer})
    ask = builders.question(id=ASK_ID, options=None, status=rules.ANSWERED, answer_value=value,
                            answer_note=note, answered_by=by, format=fmt,
                            form_schema=schema if fmt == "form" else None)

    for message in every_message(ask)[3:]:
        assert problems(message) == []
        assert "Answered by" in shown({"blocks": message.blocks})


@SLOW
@given(call_input=JSON_VALUE | BIG_INPUT, operation=long_text(200, 1), note=st.none()
       | long_text(5000), approvers=PEOPLE, needed=st.integers(1, 5), media=MEDIA,
       ending=APPROVAL_ENDINGS)
def test_every_approval_message_fits_and_names_its_hashes(
    call_input: Any, operation: str, note: str | None, approvers: list[str], needed: int,
    media: list[dict[str, Any]], ending: dict[str, Any],
) -> None:
    ask = builders.approval(
        id=ASK_ID, operation=operation, question=operation, call_input=call_input,
        call_hash=CALL_HASH, answer_note=note, answered_by="slack:U0123ABCD", media=media,
        approvers=approvers, approvals_needed=needed, escalated_at=builders.CREATED_AT,
        escalate_responders=["slack:U0456EFGH"], **ending,
    )
    input_sha256 = rules.input_shown(call_input, 0).sha256
    for message in every_message(ask)[:2] + every_message(ask)[3:]:
        assert problems(message) == []
        assert f"input_sha256 `{input_sha256}`" in shown({"blocks": message.blocks})
        assert f"call_sha256 `{CALL_HASH}`" in shown({"blocks": message.blocks})
    assert problems(blocks.reminder_message(ask, "a7")) == []


@SLOW
@given(title=long_text(200), trigger=long_text(200), links=st.lists(long_text(2000), max_size=5),
       agent=long_text(100, 1), note=st.none() | long_text(5000), ending=APPROVAL_ENDINGS)
def test_every_start_message_fits(
    title: str, trigger: str, links: list[str], agent: str, note: str | None,
    ending: dict[str, Any],
) -> None:
    work = {"github": {"repo": "octo/app", "number": 7}}
    what = {"agent": agent, "work": work, "title": title, "trigger": trigger,
            "links": ["https://example.com/" + link for link in links]}
    ask = builders.approval(id=ASK_ID, operation="human.start", question="human.start",
                            call_input=what, work=work, answer_note=note,
                            answered_by="slack:U0123ABCD", **ending)
    for message in every_message(ask):
        assert problems(message) == []


# -- the closed message of issue 22: a 2,900-character answer and a 500-line note -------------

LONG_ANSWER = "A" * 2900
MANY_LINES = "ok\n" * 500


def test_a_long_answer_and_a_note_of_many_lines_share_one_section() -> None:
    ask = builders.question(id=ASK_ID, options=None, status=rules.ANSWERED,
                            answer_value=LONG_ANSWER, answer_note=MANY_LINES,
                            answered_by="slack:U0123ABCD")

    message = blocks.closed_message(ask, "q7")

    assert problems(message) == []
    [line] = [b["text"]["text"] for b in message.blocks if "Answered by" in str(b)]
    assert len(line) <= SECTION_MAX
    # The answer comes first, as much of it as the section holds beside a piece of the note,
    # each cut said with an ellipsis.
    assert line.startswith(":white_check_mark: Answered by <@U0123ABCD>: *AAAA")
    assert "…*\n>ok\n>ok" in line and line.endswith("…")


@pytest.mark.parametrize("ended", ["answer", "refusal"])
async def test_a_closed_message_with_a_long_answer_and_note_is_updated(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, ended: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=GATED)
    if ended == "answer":
        ask = await aye.ask(question="What shall the release notes say?")
        answer = {"answer": LONG_ANSWER, "note": MANY_LINES}
    else:
        resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS, json={
            "operation": "deploy.prod", "input": {"notes": LONG_ANSWER}})
        assert resp.status == 202, await resp.text()
        ask = (await resp.json())["ask"]
        answer = {"answer": "refuse", "note": MANY_LINES + "x" * 1500}
    first = await posted(fake_slack)
    assert labels(fake_slack.message(DEFAULT_CHANNEL, first.response["ts"]) or {})

    resp = await aye.client.post(f"/v1/asks/{ask['ref']}/answer", json=answer,
                                 headers=OPERATOR_HEADERS)
    assert resp.status == 200, await resp.text()

    update = await fake_slack.wait_for_call("chat.update", ok)
    assert not [c.response for c in fake_slack.calls_to("chat.update") if not c.ok]
    closed = fake_slack.message(DEFAULT_CHANNEL, first.response["ts"])
    assert closed is not None and labels(closed) == []  # the buttons are gone
    text = shown(update.args)
    assert "Answered by the operator: *AAAA" in text or "Refused by the operator." in text
    assert "\n>ok\n>ok" in text
    if ended == "refusal":  # the hashes are named, as the operator's view gives them
        view = await aye.get(ask["id"], operator=True)
        assert f"input_sha256 `{view['input_sha256']}`" in text
        assert f"call_sha256 `{view['call_sha256']}`" in text


async def test_the_fake_refuses_a_top_level_text_over_40000_characters(
    fake_slack: FakeSlack,
) -> None:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.api_url)
    assert (await client.chat_postMessage(channel=DEFAULT_CHANNEL, text="x" * TEXT_MAX))["ok"]
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=DEFAULT_CHANNEL, text="x" * (TEXT_MAX + 1))
    assert refused.value.response["error"] == "msg_too_long"
