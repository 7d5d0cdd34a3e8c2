"""What a submitted modal says: its `view.state.values` read as the answer formats.fit takes,
and which of its blocks an error belongs under. Pure, no I/O.

Slack gives every input as text (a number_input's value too): a form's fields are turned into
the JSON types of its schema here, so the agent reads `3`, not `"3"`. What does not convert is
passed on as it was typed, for formats.fit to refuse in words naming the field.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from core.app.ports import AskRow
from core.domain import formats, forms
from core.domain.forms import Misfit
from handlers.slack import modals
from handlers.slack.replies import EMPTY_ANSWER_ERROR

# A number with more digits than this is not one a person typed in a number input; it stays
# text (and is refused as not a number) rather than become an integer JSON cannot write.
MAX_DIGITS = 300


def _entry(values: dict[str, Any], block: str, action: str) -> dict[str, Any]:
    entry = (values.get(block) or {}).get(action)
    return entry if isinstance(entry, dict) else {}


def _picked(entry: dict[str, Any]) -> list[str]:
    options = entry.get("selected_options") or []
    return [str(o.get("value")) for o in options if isinstance(o, dict) and o.get("value")]


def answer_text(values: dict[str, Any]) -> str:
    """The text typed in the text answer's field ("" when absent)."""
    value = _entry(values, modals.ANSWER_BLOCK, modals.TEXT_INPUT).get("value")
    return value if isinstance(value, str) else ""


def given(ask: AskRow, values: dict[str, Any]) -> Any:
    """The answer the modal gives, as formats.fit takes it: the text, the picked options'
    1-based numbers (numbers: two options may differ only in case), or the form's object.
    Misfit when nothing was written in a text answer."""
    fmt = formats.format_of(ask)
    if fmt == formats.MULTI:
        picks = _picked(_entry(values, modals.ANSWER_BLOCK, modals.PICKS_INPUT))
        return [int(p) for p in picks if p.isascii() and p.isdigit()]
    if fmt == formats.FORM:
        return form_answer(ask.form_schema or {}, values)
    text = answer_text(values)
    if not text.strip():
        raise Misfit(EMPTY_ANSWER_ERROR)
    return text


def reason(values: dict[str, Any]) -> str | None:
    """A refusal's reason, stripped; None when none was written."""
    value = _entry(values, modals.REASON_BLOCK, modals.REASON_INPUT).get("value")
    return value.strip() or None if isinstance(value, str) else None


# -- a form ---------------------------------------------------------------------------------


def form_answer(schema: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The form's answer in the schema's order; a field left empty is left out."""
    answer: dict[str, Any] = {}
    for name, spec, _ in forms.fields(schema):
        value = field_value(spec, _entry(values, name, modals.FIELD_INPUT))
        if value is not None:
            answer[name] = value
    return answer


def field_value(spec: dict[str, Any], entry: dict[str, Any]) -> Any:
    """One field's value in its schema's JSON type, or None when it was left empty."""
    kind = spec.get("type")
    if kind == "boolean":
        return modals.TRUE_VALUE in _picked(entry)  # unchecked is an answer: false
    if kind == "array":
        picked = set(_picked(entry))
        order = [str(v) for v in (spec.get("items") or {}).get("enum") or []]
        return [v for v in order if v in picked] or None
    if "enum" in spec:
        selected = entry.get("selected_option")
        return str(selected["value"]) if isinstance(selected, dict) and "value" in selected else None
    if spec.get("format") == "date":
        return entry.get("selected_date") or None
    raw = entry.get("value")
    if not isinstance(raw, str) or not raw.strip():
        return None
    if kind in ("integer", "number"):
        return number(raw)
    return raw.strip()


def number(raw: str) -> Any:
    """A number input's text as a JSON number: an int when it is whole (`3`, `3.0`, `1e3`),
    else a float; the text itself when it is no finite number."""
    try:
        exact = Decimal(raw.strip())
    except InvalidOperation:
        return raw
    if not exact.is_finite() or exact.adjusted() > MAX_DIGITS:
        return raw
    if exact == exact.to_integral_value():
        return int(exact)
    value = float(exact)
    return value if math.isfinite(value) else raw


# -- where an error shows -------------------------------------------------------------------


def input_blocks(view: dict[str, Any]) -> list[str]:
    """The block ids of the view's inputs, in order."""
    return [
        str(b["block_id"]) for b in view.get("blocks") or []
        if isinstance(b, dict) and b.get("type") == "input" and b.get("block_id")
    ]


def first_input(view: dict[str, Any]) -> str:
    """Where an error about the whole answer goes: under the modal's first input."""
    found = input_blocks(view)
    return found[0] if found else modals.ANSWER_BLOCK


def error_block(view: dict[str, Any], misfit: Misfit) -> str:
    """The block of the field a misfit names (`answer.count` is the form's `count`), else the
    first input. Field names may hold dots and brackets: the longest name that fits wins."""
    inputs = input_blocks(view)
    path = misfit.field.removeprefix("answer.")
    named = [
        name for name in inputs
        if misfit.field != "answer" and (path == name or path.startswith((name + "[", name + ".")))
    ]
    if named:
        return max(named, key=len)
    return inputs[0] if inputs else modals.ANSWER_BLOCK
