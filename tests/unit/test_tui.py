"""`aye tui`'s pure parts: what each key does to each kind of ask, a form's typed lines as
JSON, the event stream's framing, the server's misfit field, and agent text made inert (no
markup, no terminal control) in the list and the panel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from rich.text import Text

from bot.tui import bindings as keys
from bot.tui import forms, listing, panel
from bot.tui.api import Reply
from bot.tui.events import frames, lines

OPEN: dict[str, Any] = {"id": "x", "ref": "q1", "kind": "question", "status": "open",
                        "question": "?", "deadline": "2030-01-01T00:00:00Z",
                        "created_at": "2029-12-31T00:00:00Z"}


def asking(**extra: Any) -> dict[str, Any]:
    return OPEN | extra


@pytest.mark.parametrize(("ask", "key", "action"), [
    (asking(options=["a", "b"]), "2", keys.Send("2", affirmative=True)),
    (asking(options=["a", "b"]), "enter", keys.OpenInput(form=False)),
    (asking(kind="approval", options=["approve", "refuse"]), "a", keys.Send("approve", True)),
    (asking(kind="approval", options=["approve", "refuse"]), "1", keys.Send("approve", True)),
    (asking(kind="approval", options=["approve", "refuse"]), "r", keys.AskNote()),
    (asking(format="confirm"), "y", keys.Send("yes", affirmative=True)),
    (asking(format="confirm"), "n", keys.Send("no", affirmative=False)),
    (asking(format="ack"), "c", keys.Send("ok", affirmative=True)),
    (asking(format="text"), "enter", keys.OpenInput(form=False)),
    (asking(format="multi", options=["a", "b"]), "enter", keys.OpenInput(form=False)),
    (asking(format="form", schema={}), "enter", keys.OpenInput(form=True)),
])
def test_each_format_answers_with_its_keys(ask: dict[str, Any], key: str, action: keys.Action) -> None:
    assert keys.on_key(ask, key) == action


@pytest.mark.parametrize(("ask", "key", "why"), [
    (asking(options=["a", "b"]), "3", "3 does not answer q1: 1-2 picks an option"),
    (asking(format="confirm"), "a", "a does not answer q1: y says yes, n says no"),
    (asking(kind="approval"), "y", "y does not answer q1: a approves, r refuses"),
    (asking(status="answered", options=["a", "b"]), "1", "q1 is answered: there is nothing"),
    (asking(format="external", verifier="docsign"), "enter", "q1 waits on docsign, an outside"),
    (None, "1", "no ask is selected"),
])
def test_a_key_that_does_not_answer_says_why(ask: dict[str, Any] | None, key: str, why: str) -> None:
    action = keys.on_key(ask, key)
    assert isinstance(action, keys.Nothing) and action.why.startswith(why), action


def test_a_forms_lines_become_its_json_object() -> None:
    ask = asking(format="form", schema={"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "title": "Region"}, "count": {"type": "integer"},
        "ratio": {"type": "number"}, "dry": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}}, "skip": {"type": "string"}}})
    fields = forms.fields(ask)
    assert [f.label for f in fields] == ["Region *", "count", "ratio", "dry", "tags", "skip"]
    typed = {"region": " eu ", "count": "3", "ratio": "0.5", "dry": "No", "tags": "a, b",
             "skip": "  "}
    assert forms.answer(fields, typed) == {"region": " eu ", "count": 3, "ratio": 0.5,
                                           "dry": False, "tags": ["a", "b"]}
    # Not of the field's type: sent as typed, for the server to refuse naming the field.
    assert forms.value("integer", "ten") == "ten" and forms.value("boolean", "maybe") == "maybe"


@pytest.mark.parametrize(("status", "body", "misfit"), [
    (422, {"error": "invalid_answer", "field": "answer.count"}, "count"),
    (422, {"error": "invalid_answer", "field": "answer"}, ""),
    (422, {"error": "invalid_answer"}, ""),
    (409, {"error": "closed"}, None),
    (200, {"outcome": "taken"}, None),
])
def test_the_servers_field_names_the_misfit(status: int, body: Any, misfit: str | None) -> None:
    assert Reply(status, body).misfit() == misfit


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_the_stream_is_framed_however_its_bytes_are_cut() -> None:
    raw = (b"retry: 2000\n\n: keep-alive\n\nid: 7\nevent: ask.created\ndata: {\"id\": \"a\", "
           b"\"q\": \"\xc3\xa9\"}\r\n\nid: 8\nevent: ask.answered\ndata: [1]\n\n"
           b"id: 9\nevent: ask.expired\ndata: {\"id\":\ndata: \"b\"}\n\n")
    cut = [raw[i:i + 5] for i in range(0, len(raw), 5)]
    found = [f async for f in frames(lines(chunks(*cut)))]
    assert [(f.id, f.name, f.ask) for f in found] == [
        ("7", "ask.created", {"id": "a", "q": "é"}),
        ("9", "ask.expired", {"id": "b"}),  # data over two lines; event 8 is not an ask
    ]


MARKUP = "[bold red]x[/] [link=https://evil.example]y[/link] \x1b]52;c;SGVsbG8=\x07 \u202eab"


def test_agent_text_is_inert_in_the_list_and_the_panel() -> None:
    ask = asking(question=MARKUP, context=MARKUP, options=[MARKUP, "b"])
    for cell in listing.cells(ask, 0.0, 200):
        assert isinstance(cell, Text) and not cell.spans
    shown = panel.detail(ask)
    text = shown.plain
    assert "[bold red]x[/]" in text and "[U+001B]]52;c;SGVsbG8=[U+0007]" in text and "[U+202E]ab" in text
    assert not any(c in text for c in ("\x1b", "\x07", "\u202e"))
    assert all(span.style == "bold" for span in shown.spans)  # aye's own labels, nothing else


def test_what_ran_and_the_receipt_show_where_the_server_has_them() -> None:
    ask = asking(kind="approval", status="answered", operation="deploy.prod", input={"v": 1},
                 options=["approve", "refuse"], outcome="approved",
                 run={"outcome": "failed", "detail": "exit 1\x1b[2K", "at": "2030-01-01T00:01:00Z"},
                 receipt="eyJhbGciOiJFZERTQSJ9.e30.c2ln",
                 history=[{"at": "2030-01-01T00:01:00Z", "event": "outcome", "outcome": "failed",
                           "detail": "exit 1"}])
    text = panel.detail(ask).plain
    assert "run: outcome failed, detail exit 1[U+001B][2K, at 2030-01-01T00:01:00Z" in text
    assert "receipt: eyJhbGciOiJFZERTQSJ9.e30.c2ln" in text
    assert "outcome  (outcome failed, detail exit 1)" in text


def test_the_outcome_of_a_key_shows_on_top_of_the_panel() -> None:
    text = panel.detail(asking(), panel.Outcome(panel.REFUSED, "the ask is already answered")).plain
    assert text.startswith("refused: the ask is already answered\n")


def test_a_closed_approval_is_labelled_by_its_outcome() -> None:
    approval = asking(kind="approval", operation="deploy.prod")
    assert listing.title(approval) == "Approval needed: deploy.prod"
    assert listing.title(approval | {"status": "answered", "outcome": "approval_refused"}) == (
        "Refused: deploy.prod")
