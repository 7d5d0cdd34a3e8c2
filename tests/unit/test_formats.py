"""Answer formats, pure: what each format takes, what the agent reads, a form's schema subset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from core.domain import formats, forms
from core.domain.formats import Misfit


@dataclass
class Ask:
    format: str | None = None
    options: list[str] | None = None
    form_schema: dict[str, Any] | None = None
    pick_min: int | None = None
    pick_max: int | None = None
    kind: str = "question"


FORM = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "enum": ["eu-west", "us-east"], "title": "Region"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Nodes"},
        "when": {"type": "string", "format": "date", "title": "By when"},
        "contact": {"type": "string", "format": "email"},
        "runbook": {"type": "string", "format": "uri"},
        "drain": {"type": "boolean", "title": "Drain first"},
        "zones": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "name": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"},
    },
    "required": ["region", "count"],
}


def misfit(ask: Ask, given: Any) -> Misfit:
    with pytest.raises(Misfit) as caught:
        formats.fit(ask, given)
    return caught.value


def test_choice_by_number_text_case_and_space() -> None:
    ask = Ask(options=["Ship it", "Hold"])
    assert formats.fit(ask, "2").value == "Hold" and formats.fit(ask, "2").option == 2
    assert formats.fit(ask, "  ship IT ").option == 1
    assert formats.fit(ask, 2).value == "Hold"  # the API's JSON number
    for bad in ("3", "maybe", "   ", 0, True, None, ["1"]):
        assert misfit(ask, bad).field == "answer"
    assert "1 Ship it, 2 Hold" in misfit(ask, "maybe").message


def test_numeric_options_prefer_their_own_text() -> None:
    ask = Ask(options=["1", "3", "5"])
    assert formats.fit(ask, "3").option == 2
    assert formats.fit(ask, "2").value == "3"


def test_text_is_trimmed_and_bounded() -> None:
    assert formats.fit(Ask(), " use the blue key ").value == "use the blue key"
    assert misfit(Ask(), "   ").words == "must not be empty"
    assert misfit(Ask(), "x" * 3001).words == "must be at most 3000 characters"
    assert misfit(Ask(), {"a": 1}).words == "must be text"


def test_multi_takes_lists_and_comma_strings_in_the_options_order() -> None:
    ask = Ask(format="multi", options=["web", "api", "db, primary", "cache"], pick_min=1, pick_max=3)
    fit = formats.fit(ask, "4, 1")
    assert (fit.value, fit.options, fit.option) == (["web", "cache"], [1, 4], None)
    assert formats.fit(ask, ["db, primary", 2]).value == ["api", "db, primary"]
    assert formats.fit(ask, "DB, primary").value == ["db, primary"]  # one option's own text
    assert formats.fit(ask, "1, 1").value == ["web"]
    assert formats.value_of(ask, fit.stored) == ["web", "cache"]
    assert formats.picked(ask, ["web", "cache"]) == [1, 4]
    assert misfit(ask, "1,2,3,4").words == "must pick at most 3 options"
    assert misfit(ask, []).words == "must pick at least 1 option"
    bad = misfit(ask, [1, "nope"])
    assert bad.field == "answer[1]" and "must be one of the options" in bad.words
    assert misfit(ask, True).field == "answer"


def test_confirm_and_ack() -> None:
    confirm = Ask(format="confirm")
    for given in (True, "yes", " Y ", "true"):
        assert formats.fit(confirm, given).value is True
    for given in (False, "no", "N", "false"):
        assert formats.fit(confirm, given).value is False
    assert misfit(confirm, "maybe").words == "answer yes or no"
    ack = Ask(format="ack")
    for given in (True, "ok", "Continue", "yes", "true"):
        assert formats.fit(ack, given).value is True
    for bad in (False, "no", "later", 1):
        misfit(ack, bad)
    assert formats.plain(confirm, "false") == "no" and formats.plain(ack, "true") == "ok"


def test_form_answers_are_validated_by_the_schema() -> None:
    ask = Ask(format="form", form_schema=FORM)
    fit = formats.fit(ask, '{"region": "eu-west", "count": 3, "drain": true}')
    assert fit.value == {"region": "eu-west", "count": 3, "drain": True}
    assert formats.value_of(ask, fit.stored) == fit.value
    assert formats.plain(ask, fit.stored) == "Region: eu-west, Nodes: 3, Drain first: yes"
    base = {"region": "eu-west", "count": 1}
    cases = {
        "answer.count": ({**base, "count": 11}, "Nodes must be at most 10"),
        "answer.region": ({"count": 1}, "Region is required"),
        "answer.when": ({**base, "when": "2026-13-01"}, "By when must be a date like 2026-12-01"),
        "answer.contact": ({**base, "contact": "nobody"}, "contact must be an email address"),
        "answer.runbook": ({**base, "runbook": "a b"}, "runbook must be a URL like https://example.com"),
        "answer.zones[0]": ({**base, "zones": ["z"]}, "zones must be one of: a, b, c"),
        "answer.typo": ({**base, "typo": 1}, "typo is not a field of this form"),
        "answer.name": ({**base, "name": "ABC"}, "name must match the pattern ^[a-z]+$"),
        "answer.ratio": ({**base, "ratio": 2}, "ratio must be at most 1"),
    }
    for field, (given, message) in cases.items():
        found = misfit(ask, given)
        assert (found.field, found.message) == (field, message)
    assert misfit(ask, {"region": "eu-west", "count": True}).message == "Nodes must be a whole number"
    assert misfit(ask, "not json").field == "answer"
    assert misfit(ask, "[1]").field == "answer"


def test_approvals_are_a_choice_of_approve_or_refuse() -> None:
    ask = Ask(options=["approve", "refuse"], kind="approval")
    assert formats.fit(ask, "1").value == "approve"
    assert formats.fit(ask, "REFUSE").value == "refuse"
    assert formats.format_of(ask) == "choice"


def one(spec: Any, **top: Any) -> dict[str, Any]:
    """A form of one field `f` with `spec`, and `top` beside `properties`."""
    return {"type": "object", "properties": {"f": spec}, **top}


STRING = {"type": "string"}


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ([], "schema"),
        ({"type": "array"}, "schema.type"),
        ({"type": "object", "properties": {}}, "schema.properties"),
        ({"type": "object", "properties": {"when": {"type": "object"}}}, "schema.properties.when.type"),
        (one({"type": "string", "oneOf": []}), "schema.properties.f.oneOf"),
        (one({"type": "integer", "minimum": "1"}), "schema.properties.f.minimum"),
        (one({"type": "integer", "minimum": 5, "maximum": 1}), "schema.properties.f.maximum"),
        (one({"type": "string", "maxLength": 3001}), "schema.properties.f.maxLength"),
        (one({"type": "string", "format": "ipv4"}), "schema.properties.f.format"),
        (one({"type": "string", "pattern": "("}), "schema.properties.f.pattern"),
        (one({"type": "string", "enum": ["a", "a"]}), "schema.properties.f.enum[1]"),
        (one({"type": "string", "enum": [str(i) for i in range(21)]}), "schema.properties.f.enum"),
        (one({"type": "array", "items": {"type": "integer"}}), "schema.properties.f.items"),
        (one(STRING, required=["t"]), "schema.required[0]"),
        ({"type": "object", "properties": {f"f{i}": STRING for i in range(11)}}, "schema.properties"),
        (one(STRING, additionalProperties=True), "schema.additionalProperties"),
        (one({"type": "string", "title": ""}), "schema.properties.f.title"),
        (one(STRING, **{"$defs": {}}), "schema.$defs"),
    ],
)
def test_schemas_outside_the_subset_name_the_part(schema: Any, field: str) -> None:
    with pytest.raises(forms.SchemaProblem) as caught:
        forms.check(schema)
    assert caught.value.field == field


def test_the_whole_subset_is_accepted() -> None:
    assert forms.check(FORM) is FORM
    assert [name for name, _, required in forms.fields(FORM) if required] == ["region", "count"]
