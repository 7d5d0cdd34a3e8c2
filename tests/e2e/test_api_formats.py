"""Answer formats over the HTTP API, on both stores: each format made, answered with the
inputs the contract lists, read back with the right JSON type; misfits refused, recorded,
and the ask left open for a later answer that fits."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Aye

FORM = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "enum": ["eu-west", "us-east"], "title": "Region"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Nodes"},
        "when": {"type": "string", "format": "date", "title": "By when"},
        "drain": {"type": "boolean"},
    },
    "required": ["region", "count"],
}
SERVICES = ["web", "api", "worker", "cache", "db"]


async def answered(aye: Aye, ask: dict[str, Any], given: Any, note: str | None = None) -> Any:
    status, body = await aye.answer(ask["ref"], given, note)
    assert status == 200, body
    return (await aye.wait(ask["id"]))["answer"]


async def test_multi_reads_a_list_in_the_options_order(aye: Aye) -> None:
    ask = await aye.ask(question="Restart which?", format="multi", options=SERVICES, min=1, max=3)
    assert (ask["format"], ask["min"], ask["max"]) == ("multi", 1, 3)
    answer = await answered(aye, ask, "5, 1")
    assert answer == {"value": ["web", "db"], "option": None, "options": [1, 5], "note": None}


async def test_multi_as_a_json_list_of_numbers_and_texts(aye: Aye) -> None:
    ask = await aye.ask(question="Restart which?", format="multi", options=SERVICES)
    answer = await answered(aye, ask, ["cache", 2])
    assert answer["value"] == ["api", "cache"] and answer["options"] == [2, 4]


@pytest.mark.parametrize(("given", "value"), [("yes", True), ("N", False), (True, True), (False, False)])
async def test_confirm_reads_a_bool(aye: Aye, given: Any, value: bool) -> None:
    ask = await aye.ask(question="Go ahead?", format="confirm")
    assert ask["options"] is None
    assert (await answered(aye, ask, given))["value"] is value


async def test_ack_reads_true(aye: Aye) -> None:
    ask = await aye.ask(question="Tell me when the window opens", format="ack")
    assert (await answered(aye, ask, "continue", "window open"))["value"] is True
    assert (await aye.get(ask["id"]))["answer"]["note"] == "window open"


async def test_form_reads_an_object(aye: Aye) -> None:
    ask = await aye.ask(question="Where?", format="form", schema=FORM)
    assert ask["schema"] == FORM
    answer = await answered(aye, ask, '{"region": "eu-west", "count": 3, "drain": false}')
    assert answer["value"] == {"region": "eu-west", "count": 3, "drain": False}


async def test_text_is_the_default_without_options_and_choice_with(aye: Aye) -> None:
    assert (await aye.ask(question="Why?"))["format"] == "text"
    choice = await aye.ask(question="Which?", options=["a", "b"])
    assert choice["format"] == "choice"
    assert await answered(aye, choice, 2) == {"value": "b", "option": 2, "note": None}


async def test_a_misfit_is_422_names_the_part_is_recorded_and_leaves_the_ask_open(aye: Aye) -> None:
    ask = await aye.ask(question="Where?", format="form", schema=FORM)
    status, body = await aye.answer(ask["ref"], {"region": "eu-west", "count": 11})
    assert status == 422
    assert body == {"error": "invalid_answer", "message": "refused: Nodes must be at most 10",
                    "field": "answer.count"}
    view = await aye.get(ask["id"], operator=True)
    assert view["status"] == "open"
    [refused] = [e for e in view["history"] if e["event"] == "refused"]
    assert refused["by"] == "operator:local" and refused["why"] == "invalid_answer"
    assert refused["field"] == "answer.count" and "at most 10" in refused["message"]
    assert '"count":11' in refused["answer"]
    assert (await answered(aye, ask, {"region": "us-east", "count": 10}))["value"]["count"] == 10


@pytest.mark.parametrize(
    ("fmt", "extra", "given", "field", "words"),
    [
        ("multi", {"options": SERVICES, "max": 2}, "1,2,3", "answer", "must pick at most 2 options"),
        ("multi", {"options": SERVICES, "min": 2}, [1], "answer", "must pick at least 2 options"),
        ("multi", {"options": SERVICES}, [1, 9], "answer[1]", "must be a number from 1 to 5"),
        ("confirm", {}, "maybe", "answer", "answer yes or no"),
        ("ack", {}, False, "answer", "answer ok to let the work go on"),
        ("text", {}, ["a"], "answer", "must be text"),
        ("form", {"schema": FORM}, "{not json", "answer", "must be a JSON object"),
        ("form", {"schema": FORM}, {"count": 2}, "answer.region", "Region is required"),
    ],
)
async def test_misfits_per_format(
    aye: Aye, fmt: str, extra: dict[str, Any], given: Any, field: str, words: str
) -> None:
    ask = await aye.ask(question="?", format=fmt, **extra)
    status, body = await aye.answer(ask["ref"], given)
    assert (status, body["error"], body["field"]) == (422, "invalid_answer", field)
    assert words in body["message"]
    assert (await aye.get(ask["id"]))["status"] == "open"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"format": "choice"}, "options", "a choice ask needs 2 to 20 options"),
        ({"format": "multi"}, "options", "a multi ask needs"),
        ({"format": "confirm", "options": ["a", "b"]}, "options", "a confirm ask takes no options"),
        ({"format": "form"}, "schema", "a form needs a schema"),
        ({"format": "text", "schema": FORM}, "schema", "only a form"),
        ({"options": ["a", "b"], "min": 1}, "min", "only a multi"),
        ({"format": "multi", "options": ["a", "b"], "max": 3}, "max", "from 1 to 2"),
        ({"format": "multi", "options": ["a", "b"], "min": 0}, "min", "from 1 to 2"),
        ({"format": "multi", "options": ["a", "b", "c"], "min": 3, "max": 2}, "min", "not be above"),
        ({"format": "form", "schema": {"type": "object", "properties": {"when": {"type": "object"}}}},
         "schema.properties.when.type", "must be one of"),
        ({"format": "poll"}, "format", "must be one of"),
        ({"options": ["only"]}, "options", "needs at least 2 options"),
        ({"options": [str(i) for i in range(21)]}, "options", "takes at most 20 options"),
        ({"question": ""}, "question", "must not be empty"),
        ({"media": [{"kind": "image", "url": "http://example.com/a.png"}]}, "media[0].url", "https"),
        ({"media": [{"kind": "video", "url": "https://example.com/a"}]}, "media[0].kind", "must be one of"),
        ({"media": [{"kind": "link", "url": "https://example.com/a", "caption": "x" * 201}]},
         "media[0].caption", "at most 200 characters"),
        ({"media": [{"kind": "link", "url": "https://example.com/a"}] * 6}, "media", "at most 5"),
        ({"media": [{"kind": "link", "url": "https:///nohost"}]}, "media[0].url", "https"),
    ],
)
async def test_create_refuses_what_does_not_go_together(
    aye: Aye, body: dict[str, Any], field: str, words: str
) -> None:
    created = await aye.ask(expect=422, **{"question": "?", **body})
    assert created["error"] == "invalid_field" and created["field"] == field
    assert words in created["message"], created


async def test_media_is_kept_and_shown_to_the_agent(aye: Aye) -> None:
    media = [{"kind": "image", "url": "https://example.com/graph.png", "caption": "CPU"},
             {"kind": "link", "url": "https://example.com/runbook"}]
    ask = await aye.ask(question="Scale up?", format="confirm", media=media)
    assert ask["media"] == media
    assert (await aye.get(ask["id"]))["media"] == media


async def test_a_sensitive_misfit_records_no_value(aye: Aye) -> None:
    ask = await aye.ask(question="PIN?", format="form", sensitive=True,
                        schema={"type": "object", "properties": {"pin": {"type": "integer"}}})
    status, _ = await aye.answer(ask["ref"], {"pin": "1234"})
    assert status == 422
    view = await aye.get(ask["id"], operator=True)
    [refused] = [e for e in view["history"] if e["event"] == "refused"]
    assert "answer" not in refused and "1234" not in str(view)
