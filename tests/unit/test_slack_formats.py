"""Answer formats in Slack, the pure parts: the buttons and modals built from an ask, a modal's
submission read back as the answer, pictures and links, and the closed message. Every block
and view is checked the way the fake Slack checks them (slack-sdk's Block Kit models, plus
Slack's limits those models let through), at the limits the API allows.

The same formats end to end, through the real slack-bolt against the fake Slack, are
tests/e2e/test_slack_answers.py's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.domain import formats
from core.domain.forms import Misfit
from handlers.slack import blocks, buttons, media, modals, submitted
from store.models import AskRow
from tests import builders
from tests.fake_slack import block_problems, view_problems

ASK_ID = "0123456789abcdef0123456789abcdef"
LONGEST = "<&>" * 1000  # 3,000 characters, 15,000 once escaped
FORM = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "enum": ["eu", "us"], "title": "Region",
                   "description": "Where it runs"},
        "nodes": {"type": "integer", "minimum": 1.5, "maximum": 9, "title": "Nodes"},
        "ratio": {"type": "number", "minimum": 1e-7, "maximum": 1e3},
        "ha": {"type": "boolean", "title": "High availability"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
                 "minItems": 1, "maxItems": 2},
        "when": {"type": "string", "format": "date"},
        "mail": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "name": {"type": "string", "minLength": 2, "maxLength": 40},
        "notes": {"type": "string"},
    },
    "required": ["region", "nodes", "ha"],
}


def ask_of(fmt: str, **fields: Any) -> AskRow:
    options = fields.pop("options", ["web", "cache", "db", "queue"] if fmt == "multi" else None)
    return builders.question(id=ASK_ID, format=fmt, options=options, **fields)


def form_ask(schema: dict[str, Any] = FORM, **fields: Any) -> AskRow:
    return ask_of("form", form_schema=schema, **fields)


def buttons_of(message: blocks.Message) -> list[tuple[str, str, str]]:
    return [
        (e["text"]["text"], e["action_id"], e["value"])
        for b in message.blocks if b["type"] == "actions" for e in b["elements"]
    ]


def modal_of(ask: AskRow, ref: str = "q7") -> dict[str, Any]:
    view = modals.answer_modal(ask, ref)
    assert view is not None
    assert view_problems(view) == []
    return view


def inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


# -- buttons -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ask", "expected"),
    [
        (ask_of("confirm"), [("Yes", "aye_word_yes", f"{ASK_ID}:yes"),
                             ("No", "aye_word_no", f"{ASK_ID}:no")]),
        (ask_of("ack"), [("Continue", "aye_word_ok", f"{ASK_ID}:ok")]),
        (ask_of("text"), [("Answer", "aye_answer", ASK_ID)]),
        (ask_of("multi"), [("Answer", "aye_answer", ASK_ID)]),
        (form_ask(), [("Answer", "aye_answer", ASK_ID)]),
        (ask_of("choice", options=["a", "b"]), [("a", "aye_option_1", f"{ASK_ID}:1"),
                                                 ("b", "aye_option_2", f"{ASK_ID}:2")]),
        (builders.approval(id=ASK_ID), [("Approve", "aye_option_1", f"{ASK_ID}:1"),
                                        ("Refuse", "aye_refuse", ASK_ID)]),
        # Made before formats existed: a choice with options, text without.
        (builders.question(id=ASK_ID, options=["yes", "no"]), [
            ("yes", "aye_option_1", f"{ASK_ID}:1"), ("no", "aye_option_2", f"{ASK_ID}:2")]),
        (builders.question(id=ASK_ID, options=None), [("Answer", "aye_answer", ASK_ID)]),
    ],
    ids=["confirm", "ack", "text", "multi", "form", "choice", "approval", "old-choice", "old-text"],
)
def test_each_format_gets_its_buttons(ask: AskRow, expected: list[tuple[str, str, str]]) -> None:
    message = blocks.question_message(ask, "q7")

    assert buttons_of(message) == expected
    assert block_problems(message.blocks) == []


def test_button_values_parse_back() -> None:
    assert buttons.parse_word_value(f"{ASK_ID}:yes") == (ASK_ID, "yes")
    assert buttons.parse_word_value(f"{ASK_ID}:ok") == (ASK_ID, "ok")
    for bad in (f"{ASK_ID}:maybe", f"{ASK_ID}", "q7:yes", f"{ASK_ID}:YES"):
        assert buttons.parse_word_value(bad) is None
    assert buttons.parse_option_value(f"{ASK_ID}:²") is None  # a digit int() cannot read


def test_formats_answered_by_a_button_open_no_modal() -> None:
    for ask in (ask_of("confirm"), ask_of("ack"), ask_of("choice", options=["a", "b"])):
        assert modals.answer_modal(ask, "q7") is None
    assert modals.refusal_modal(ask_of("text"), "q7") is None


# -- the multi modal ---------------------------------------------------------------------------


def test_a_multi_of_up_to_10_options_is_checkboxes_saying_how_many_to_pick() -> None:
    ask = ask_of("multi", options=[f"opt {n}" for n in range(1, 11)], pick_min=1, pick_max=3)

    field = inputs(modal_of(ask))["answer"]

    assert field["label"]["text"] == "Pick 1 to 3"
    element = field["element"]
    assert (element["type"], element["action_id"]) == ("checkboxes", "picks")
    assert [(o["text"]["text"], o["value"]) for o in element["options"]] == [
        (f"opt {n}", str(n)) for n in range(1, 11)
    ]
    assert modals.pick_words(2, 2) == "Pick 2"


def test_past_10_options_a_multi_is_a_multi_select_of_at_most_max() -> None:
    options = [f"{n:02d}" + "&" * 73 for n in range(20)]  # 20 options of 75 characters
    ask = ask_of("multi", options=options, pick_min=2, pick_max=5, question=LONGEST, sensitive=True)

    view = modal_of(ask, "q7zzzzzz")

    field = inputs(view)["answer"]
    assert field["element"]["type"] == "multi_static_select"
    assert field["element"]["max_selected_items"] == 5
    assert [o["text"]["text"] for o in field["element"]["options"]] == options
    assert field["label"]["text"] == "Pick 2 to 5"
    assert "private" in field["hint"]["text"]
    assert "<&>" not in view["blocks"][0]["text"]["text"]


def test_eleven_checkboxes_are_refused_as_slack_refuses_them() -> None:
    view = modal_of(ask_of("multi", options=[str(n) for n in range(11)]))
    element = inputs(view)["answer"]["element"]
    element["type"] = "checkboxes"
    # Checkboxes have no max_selected_items: Slack refuses it, slack-sdk's model drops it.
    assert any("unknown attribute" in p for p in view_problems(view))
    del element["max_selected_items"], element["placeholder"]

    assert any("no more than 10" in p for p in view_problems(view))


# -- the form modal ----------------------------------------------------------------------------


def test_a_form_has_one_input_per_field_of_the_matching_kind() -> None:
    view = modal_of(form_ask())

    found = inputs(view)
    assert list(found) == list(FORM["properties"])
    kinds = {name: block["element"]["type"] for name, block in found.items()}
    assert kinds == {
        "region": "static_select", "nodes": "number_input", "ratio": "number_input",
        "ha": "checkboxes", "tags": "multi_static_select", "when": "datepicker",
        "mail": "email_text_input", "site": "url_text_input", "name": "plain_text_input",
        "notes": "plain_text_input",
    }
    assert {n: b["optional"] for n, b in found.items()} == {
        n: n not in ("region", "nodes") for n in FORM["properties"]  # a boolean is always optional
    }
    assert found["region"]["label"]["text"] == "Region"
    assert found["region"]["hint"]["text"] == "Where it runs"
    assert found["ratio"]["label"]["text"] == "ratio"  # no title: the field's name
    nodes, ratio = found["nodes"]["element"], found["ratio"]["element"]
    # An integer's bounds rounded inwards; a number's written out, never as 1e-07.
    assert (nodes["is_decimal_allowed"], nodes["min_value"], nodes["max_value"]) == (False, "2", "9")
    assert (ratio["is_decimal_allowed"], ratio["min_value"], ratio["max_value"]) == (
        True, "0.0000001", "1000")
    assert [o["value"] for o in found["region"]["element"]["options"]] == ["eu", "us"]
    assert found["tags"]["element"]["max_selected_items"] == 2
    assert found["tags"]["hint"]["text"] == "Pick 1 to 2."
    name = found["name"]["element"]
    assert (name["min_length"], name["max_length"], name["multiline"]) == (2, 40, False)
    assert (found["notes"]["element"]["max_length"], found["notes"]["element"]["multiline"]) == (
        3000, True)


def test_a_form_at_the_limits_passes_slack_s_checks() -> None:
    title = "T" * 75
    schema = {
        "type": "object",
        "properties": {
            f"{n}-{'f' * 60}": {
                "type": "string" if n % 2 else "array",
                "title": title, "description": "<d> " * 75,
                **({"enum": [f"{v:02d}" + "é" * 73 for v in range(20)]} if n % 2 else {
                    "items": {"type": "string", "enum": [f"{v:02d}" + "x" * 73 for v in range(20)]}
                }),
            }
            for n in range(10)
        },
        "required": [f"{n}-{'f' * 60}" for n in range(10)],
    }

    view = modal_of(form_ask(schema, question=LONGEST), "q7zzzzzz")

    assert len(inputs(view)) == 10
    assert len(view["title"]["text"]) <= 24


def test_a_refusal_modal_asks_an_optional_reason() -> None:
    ask = builders.approval(id=ASK_ID, operation="deploy.<!here>")

    view = modals.refusal_modal(ask, "a7zzzzzz")

    assert view is not None and view_problems(view) == []
    assert (view["callback_id"], view["private_metadata"], view["submit"]["text"]) == (
        "aye_refuse", ASK_ID, "Refuse")
    reason = inputs(view)["reason"]
    assert reason["optional"] is True and reason["label"]["text"] == "Reason"
    assert "<!here>" not in json.dumps(view)


# -- a submission read back ---------------------------------------------------------------------


def entry(kind: str, **more: Any) -> dict[str, Any]:
    return {"field": {"type": kind, **more}}


def selected(*values: str) -> list[dict[str, Any]]:
    return [{"text": {"type": "plain_text", "text": v}, "value": v} for v in values]


def test_a_form_s_inputs_become_its_schema_s_json_types() -> None:
    values = {
        "region": entry("static_select", selected_option=selected("eu")[0]),
        "nodes": entry("number_input", value="3"),
        "ratio": entry("number_input", value="2.50"),
        "ha": entry("checkboxes", selected_options=[]),
        "tags": entry("multi_static_select", selected_options=selected("c", "a")),
        "when": entry("datepicker", selected_date="2026-12-01"),
        "mail": entry("email_text_input", value=""),  # an optional field left empty: left out
        "name": entry("plain_text_input", value="  blue  "),
        "notes": entry("plain_text_input", value=None),
    }

    answer = submitted.given(form_ask(), values)

    assert answer == {
        "region": "eu", "nodes": 3, "ratio": 2.5, "ha": False, "tags": ["a", "c"],
        "when": "2026-12-01", "name": "blue",
    }
    assert type(answer["nodes"]) is int and type(answer["ha"]) is bool
    assert formats.fit(form_ask(), answer).value == answer
    checked = {"ha": entry("checkboxes", selected_options=selected("true"))}
    assert submitted.given(form_ask(), checked) == {"ha": True}


@pytest.mark.parametrize(
    ("typed", "value"),
    [("3", 3), ("3.0", 3), ("1e3", 1000), ("-0.25", -0.25), (" 7 ", 7), ("abc", "abc"),
     ("NaN", "NaN"), ("inf", "inf"), ("1e400", "1e400"), ("3.5", 3.5)],
)
def test_a_number_input_s_text_as_a_json_number(typed: str, value: Any) -> None:
    got = submitted.number(typed)

    assert got == value and type(got) is type(value)


def test_a_number_that_does_not_fit_is_refused_under_its_field() -> None:
    ask = form_ask()
    view = modal_of(ask)
    values = {"region": entry("static_select", selected_option=selected("eu")[0]),
              "nodes": entry("number_input", value="12")}

    with pytest.raises(Misfit) as refused:
        formats.fit(ask, submitted.given(ask, values))

    assert submitted.error_block(view, refused.value) == "nodes"
    assert refused.value.words == "must be at most 9"


def test_an_error_goes_under_the_field_it_names_even_with_dots_in_names() -> None:
    view = {"blocks": [{"type": "section"}, *({"type": "input", "block_id": n} for n in
                                              ("a", "a.b", "c"))]}

    assert submitted.error_block(view, Misfit("x", "answer.a.b")) == "a.b"
    assert submitted.error_block(view, Misfit("x", "answer.a[2]")) == "a"
    assert submitted.error_block(view, Misfit("x", "answer.c")) == "c"
    assert submitted.error_block(view, Misfit("x", "answer")) == "a"
    assert submitted.error_block(view, Misfit("x", "answer.zz")) == "a"
    assert submitted.first_input({"blocks": []}) == "answer"


def test_a_multi_s_checked_options_are_their_numbers() -> None:
    ask = ask_of("multi")
    values = {"answer": {"picks": {"type": "checkboxes", "selected_options": selected("4", "1")}}}

    picks = submitted.given(ask, values)

    assert picks == [4, 1]
    assert formats.fit(ask, picks).value == ["web", "queue"]  # in the options' order


def test_a_blank_text_answer_is_refused_and_a_reason_is_stripped() -> None:
    with pytest.raises(Misfit, match="Write an answer first"):
        submitted.given(ask_of("text"), {"answer": {"text": {"value": " \n "}}})
    assert submitted.reason({"reason": {"text": {"value": "  late\n\n"}}}) == "late"
    assert submitted.reason({"reason": {"text": {"value": "   "}}}) is None
    assert submitted.reason({}) is None


# -- pictures and links -------------------------------------------------------------------------


PICTURE = {"kind": "image", "url": "https://example.com/graph.png", "caption": "p99 <latency>"}
LINK = {"kind": "link", "url": "https://example.com/a|b>c<d&e", "caption": "<!channel> runbook"}


def test_pictures_are_image_blocks_and_links_cannot_break_out_of_slack_s_link_syntax() -> None:
    ask = ask_of("confirm", media=[PICTURE, LINK, {"kind": "image", "url": "https://x.io/y.png"}])

    message = blocks.question_message(ask, "q7")

    images = [b for b in message.blocks if b["type"] == "image"]
    assert [(i["image_url"], i["alt_text"], i.get("title", {}).get("text")) for i in images] == [
        (PICTURE["url"], "p99 <latency>", "p99 <latency>"),  # plain text: shown, never parsed
        ("https://x.io/y.png", "image", None),
    ]
    [link] = [e["text"] for b in message.blocks if b["type"] == "context"
              for e in b["elements"] if ":link:" in e["text"]]
    assert link == ":link: <https://example.com/a%7Cb%3Ec%3Cd&amp;e|&lt;!channel&gt; runbook>"
    assert block_problems(message.blocks) == []
    assert message.links_only is not None
    assert not [b for b in message.links_only if b["type"] == "image"]
    assert f"<{PICTURE['url']}|p99 &lt;latency&gt;>" in json.dumps(message.links_only)
    assert block_problems(message.links_only) == []


def test_a_url_that_is_not_https_is_shown_as_text_and_no_pictures_no_fallback() -> None:
    assert media.link_text({"kind": "link", "url": "javascript:alert(1)"}) == "javascript:alert(1)"
    assert media.safe_url("https://") is None
    assert blocks.question_message(ask_of("ack", media=[LINK]), "q7").links_only is None


def test_media_at_the_limits_pass_slack_s_checks() -> None:
    # Five items of 2,000-character addresses that grow five- and three-fold once escaped.
    items = [
        {"kind": "link", "url": "https://e.io/?" + "&" * 1986, "caption": "<&>" * 66},
        {"kind": "link", "url": "https://e.io/?" + "|" * 1986},
        {"kind": "image", "url": "https://e.io/" + "x" * 1987, "caption": "&" * 200},
        {"kind": "link", "url": "https://e.io/?" + "a" * 1986, "caption": "c" * 200},
        {"kind": "image", "url": "https://e.io/a.png", "caption": "\n".join("line" for _ in range(40))},
    ]
    ask = ask_of("confirm", media=items, question=LONGEST, context=LONGEST)

    message = blocks.question_message(ask, "q7zzzzzz")

    assert message.links_only is not None
    for shown in (message.blocks, message.links_only):
        assert block_problems(shown) == []
    text = json.dumps(message.blocks)
    assert "its address is too long to show here" in text
    assert "<https://e.io/?aaaa" in text  # one that fits is still a link


def test_slack_s_refusal_of_a_picture_is_told_from_other_refusals() -> None:
    sent = [{"type": "section"}, {"type": "image"}]

    failed = "[ERROR] downloading image failed [json-pointer:/blocks/1/image_url]"
    assert media.refused_an_image([failed], sent)
    assert media.refused_an_image(["[ERROR] invalid url [json-pointer:/blocks/1/image_url]"], sent)
    assert not media.refused_an_image(["[ERROR] must be more than 0 [json-pointer:/blocks/0/text]"], sent)
    assert not media.refused_an_image([], sent)


# -- how it ended -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ask", "shown"),
    [
        (ask_of("multi", answer_value='["web","cache"]'), "*web, cache*"),
        (ask_of("confirm", answer_value="true"), "*yes*"),
        (ask_of("confirm", answer_value="false"), "*no*"),
        (ask_of("ack", answer_value="true"), "*ok*"),
        (form_ask({"type": "object", "properties": {"region": {"type": "string", "title": "Region"},
                                                    "nodes": {"type": "integer", "title": "Nodes"}}},
                  answer_value='{"region":"eu","nodes":3}'), "*Region: eu, Nodes: 3*"),
    ],
    ids=["multi", "confirm-yes", "confirm-no", "ack", "form"],
)
def test_the_closed_message_shows_the_answer_as_people_read_it(ask: AskRow, shown: str) -> None:
    closed = ask.model_copy(update={"status": "answered", "answered_by": "slack:U0123ABCD"})

    message = blocks.closed_message(closed, "q7")

    text = json.dumps(message.blocks)
    assert f"Answered by <@U0123ABCD>: {shown}" in text
    assert "[\\\"" not in text and "{\\\"" not in text  # never the stored JSON
    assert block_problems(message.blocks) == []


def test_a_sensitive_typed_answer_is_never_shown() -> None:
    closed = form_ask(sensitive=True, status="answered", answer_value='{"region":"s3cret"}')

    assert "s3cret" not in json.dumps(blocks.closed_message(closed, "q7").blocks)


def test_a_refusal_s_reason_and_long_notes_stay_within_slack_s_limits() -> None:
    note = ("why\n" * 2000)[:3000]
    refused = builders.approval(id=ASK_ID, status="answered", outcome="approval_refused",
                                answer_value="refuse", answer_note=note, answered_by="slack:U1AB")
    free = ask_of("text", status="answered", answer_value=LONGEST, answer_note=LONGEST + "\n" * 10,
                  question=LONGEST, context=LONGEST, answered_by="slack:U1AB")

    for closed in (refused, free):
        message = blocks.closed_message(closed, "q7zzzzzz")
        assert block_problems(message.blocks) == []
    assert ":no_entry: Refused by <@U1AB>.\n>why\n>why" in json.loads(
        json.dumps(blocks.closed_message(refused, "a1").blocks))[-2]["text"]["text"]
