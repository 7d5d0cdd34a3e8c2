"""A form's fields as HTML inputs of the matching kind, and what a posted HTML form gives as
the answer to each format (the core then checks that it fits, as for any surface).

Each control macro in templates/controls.html has a reader here of the same name; a format
whose controls post one `answer` field needs no reader (the default takes that text).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from multidict import MultiDictProxy

from core.domain import forms
from core.domain.visible import visible

STRING_WIDGETS = {"email": "email", "uri": "url", "date": "date"}
FIELD_PREFIX = "f."  # a form field's input is named by its position: names may hold anything

Posted = MultiDictProxy[str]


@dataclass(frozen=True, slots=True)
class FormField:
    """One input of a form: `widget` is text, email, url, date, number, select, checks (a
    checkbox per value of a multi-select) or checkbox (a boolean); `attrs` are the HTML
    attributes that carry the schema's limits."""

    name: str
    input_name: str
    id: str
    title: str
    description: str | None
    required: bool
    widget: str
    attrs: dict[str, str]
    choices: list[str]
    hint: str | None = None  # its bounds in words, shown beside it before any submit


def form_fields(schema: dict[str, Any], ref: str) -> list[FormField]:
    out = []
    for index, (name, spec, required) in enumerate(forms.fields(schema)):
        widget, attrs, choices = _widget(spec if isinstance(spec, dict) else {})
        description = spec.get("description") if isinstance(spec, dict) else None
        out.append(FormField(
            name=name, input_name=f"{FIELD_PREFIX}{index}", id=f"{ref}-f{index}",
            title=visible(forms.title(schema, name)),
            description=visible(str(description), multiline=True) if description else None,
            required=required, widget=widget, attrs=attrs, choices=choices,
            hint=_sentence(bounds(spec if isinstance(spec, dict) else {})),
        ))
    return out


def _sentence(words: str | None) -> str | None:
    return words[:1].upper() + words[1:] if words else None


FORMAT_WORDS = {"email": "an email address", "uri": "a URL", "date": "a date"}


def _range(low: Any, high: Any, unit: str = "") -> str | None:
    def shown(n: Any) -> str:
        return _number_text(n) + unit

    if low is not None and high is not None:
        return f"from {_number_text(low)} to {shown(high)}"
    if low is not None:
        return f"at least {shown(low)}"
    return f"at most {shown(high)}" if high is not None else None


def bounds(spec: dict[str, Any]) -> str | None:
    """A field's limits in words (`a whole number from 1 to 8`, `at most 200 characters`,
    `an email address`), or None when it has none worth saying."""
    kind = spec.get("type")
    low, high = (spec.get(k) if isinstance(spec.get(k), int | float) and not isinstance(spec.get(k), bool)
                 else None for k in ("minimum", "maximum"))
    if kind in ("integer", "number"):
        limits = _range(low, high)
        what = "a whole number" if kind == "integer" else "a number"
        return f"{what} {limits}" if limits else (what if kind == "integer" else None)
    if kind != "string" or "enum" in spec:
        return None
    shortest, longest = (spec.get(k) if isinstance(spec.get(k), int) else None
                         for k in ("minLength", "maxLength"))
    words = [w for w in (FORMAT_WORDS.get(str(spec.get("format"))),
                         _range(shortest, longest, " characters")) if w]
    if isinstance(spec.get("pattern"), str):
        words.append(f"matching {spec['pattern']}")
    return ", ".join(words) or None


def _number_text(value: Any) -> str:
    return json.dumps(value)


def _widget(spec: dict[str, Any]) -> tuple[str, dict[str, str], list[str]]:
    kind = spec.get("type")
    if kind == "boolean":
        return "checkbox", {}, []
    if kind in ("integer", "number"):
        attrs = {"step": "1" if kind == "integer" else "any"}
        for key, attr in (("minimum", "min"), ("maximum", "max")):
            if isinstance(spec.get(key), int | float):
                attrs[attr] = _number_text(spec[key])
        return "number", attrs, []
    if kind == "array":
        items = spec.get("items")
        values = items.get("enum", []) if isinstance(items, dict) else []
        return "checks", {}, [str(v) for v in values]
    if "enum" in spec:
        return "select", {}, [str(v) for v in spec["enum"]]
    attrs = {}
    for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
        if isinstance(spec.get(key), int):
            attrs[attr] = str(spec[key])
    pattern = spec.get("pattern")
    if isinstance(pattern, str):
        # JSON Schema's pattern matches anywhere in the text; HTML's must match all of it.
        attrs["pattern"] = f"[\\s\\S]*(?:{pattern})[\\s\\S]*"
        attrs["title"] = f"must match the pattern {pattern}"
    return STRING_WIDGETS.get(str(spec.get("format")), "text"), attrs, []


# -- what a posted form gives ---------------------------------------------------------------


def _number(text: str, integer: bool) -> Any:
    """The number typed, or the text itself for the core to refuse in its own words."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    return int(value) if integer and value.is_integer() else value


def _form(posted: Posted, schema: dict[str, Any]) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for index, (name, spec, _) in enumerate(forms.fields(schema)):
        key = f"{FIELD_PREFIX}{index}"
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "boolean":
            given[name] = key in posted
        elif kind == "array":
            given[name] = posted.getall(key, [])
        else:
            text = posted.get(key, "").strip()
            if not text:
                continue  # left empty: absent (the core says so if it is required)
            given[name] = _number(text, kind == "integer") if kind in ("integer", "number") else text
    return given


def _choice(posted: Posted, _: dict[str, Any]) -> Any:
    text = posted.get("answer", "")
    # The buttons send the option's number: exact even when two options differ only in case.
    return int(text) if text.isascii() and text.isdigit() and len(text) < 4 else text


def _multi(posted: Posted, _: dict[str, Any]) -> Any:
    picked = posted.getall("pick", [])
    return [int(p) if p.isascii() and p.isdigit() and len(p) < 4 else p for p in picked]


def _text(posted: Posted, _: dict[str, Any]) -> Any:
    return posted.get("answer", "")


READERS: dict[str, Callable[[Posted, dict[str, Any]], Any]] = {
    "choice": _choice,
    "multi": _multi,
    "form": _form,
}


def given(control: str, posted: Posted, schema: dict[str, Any] | None) -> Any:
    """What the person gave, as the core takes it, for an ask whose controls are `control`."""
    return READERS.get(control, _text)(posted, schema or {})
