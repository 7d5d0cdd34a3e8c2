"""The modals a button opens, built from the ask: pure functions, no I/O.

"Answer" opens one by the ask's format: a text field (text), checkboxes or a multi-select
(multi), or one input per field of the form's schema (form). An approval's Refuse opens one
asking why. Every modal carries the ask id in `private_metadata`; what its submission says is
read back by handlers.slack.submitted.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from core.app.ports import AskRow
from core.domain import formats, forms, vocabulary
from handlers.slack import starts
from handlers.slack.text import clip, fit

ANSWER_CALLBACK = "aye_answer"
REFUSE_CALLBACK = "aye_refuse"
# text and multi: one input block; a form: one per field, its block_id the field's name.
ANSWER_BLOCK = "answer"
TEXT_INPUT = "text"
PICKS_INPUT = "picks"
FIELD_INPUT = "field"
REASON_BLOCK = "reason"
REASON_INPUT = "text"
TRUE_VALUE = "true"  # the one checkbox of a boolean field

# Slack's limits: a modal's title, submit and close 24; an option's text 75; a checkboxes
# element 10 options; a plain_text_input 3,000 characters; a label or a hint 2,000.
TITLE_MAX = 24
OPTION_MAX = 75
CHECKBOXES_MAX = 10
INPUT_MAX = 3000
LABEL_MAX = 2000
PREVIEW_MAX = 2500  # the question shown above the inputs
SHORT_TEXT = 150  # a string field allowed no more than this is one line, not a text area
PRIVATE_HINT = "This answer is private: only the agent that asked will see it."
REASON_HINT = "Optional. The agent that asked reads it with the refusal."


def _plain(text: str, limit: int = LABEL_MAX) -> dict[str, Any]:
    return {"type": "plain_text", "text": clip(text, limit), "emoji": True}


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": _plain(text, OPTION_MAX), "value": value}


def _input(
    block_id: str, label: str, element: dict[str, Any], optional: bool, hint: str | None = None
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input", "block_id": block_id, "label": _plain(label), "element": element,
        "optional": optional,
    }
    if hint:
        block["hint"] = _plain(hint)
    return block


def _modal(
    callback: str, ask: AskRow, title: str, submit: str, blocks: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": callback,
        "private_metadata": ask.id,
        "title": _plain(title, TITLE_MAX),
        "submit": _plain(submit, TITLE_MAX),
        "close": _plain("Cancel", TITLE_MAX),
        "blocks": blocks,
    }


def _heading(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": "*" + fit(text, PREVIEW_MAX) + "*"}}


# -- answers --------------------------------------------------------------------------------


def answer_modal(ask: AskRow, ref: str) -> dict[str, Any] | None:
    """The modal answering `ask`, or None for a format answered by a button instead."""
    fmt = formats.format_of(ask)
    if fmt == formats.TEXT:
        inputs = [_text_input(ask)]
    elif fmt == formats.MULTI:
        inputs = [_picks_input(ask)]
    elif fmt == formats.FORM:
        inputs = form_inputs(ask.form_schema or {})
    else:
        return None
    blocks = [_heading(ask.question), *inputs]
    return _modal(ANSWER_CALLBACK, ask, f"Answer {ref}", "Send", blocks)


def _text_input(ask: AskRow) -> dict[str, Any]:
    element = {
        "type": "plain_text_input", "action_id": TEXT_INPUT, "multiline": True,
        "max_length": INPUT_MAX,
    }
    hint = PRIVATE_HINT if ask.sensitive else None
    return _input(ANSWER_BLOCK, "Your answer", element, optional=False, hint=hint)


def pick_words(low: int, high: int) -> str:
    """How many a person picks, in words: `Pick 2`, `Pick 1 to 3`."""
    return f"Pick {low}" if low == high else f"Pick {low} to {high}"


def _picks_input(ask: AskRow) -> dict[str, Any]:
    """Checkboxes, one per option; past Slack's 10, a multi-select allowing `max` of them."""
    options = ask.options or []
    low, high = formats.bounds(ask)
    choices = [_option(text, str(n)) for n, text in enumerate(options, start=1)]
    element: dict[str, Any] = {"action_id": PICKS_INPUT, "options": choices}
    if len(options) <= CHECKBOXES_MAX:
        element["type"] = "checkboxes"
    else:
        element.update(type="multi_static_select", max_selected_items=high,
                       placeholder=_plain("Choose", OPTION_MAX))
    return _input(ANSWER_BLOCK, pick_words(low, high), element, optional=False,
                  hint=PRIVATE_HINT if ask.sensitive else None)


# -- a form ---------------------------------------------------------------------------------


def form_inputs(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """One input block per field, in the schema's order: its block_id the field's name, its
    label the title, its hint the description. A boolean is one checkbox, and always optional:
    left unchecked it answers false."""
    blocks = []
    for name, spec, required in forms.fields(schema):
        optional = not required or spec.get("type") == "boolean"
        hint = _hint(spec)
        blocks.append(_input(name, forms.title(schema, name), field_element(spec), optional, hint))
    return blocks


def _hint(spec: dict[str, Any]) -> str | None:
    parts = [str(spec["description"])] if spec.get("description") else []
    if spec.get("type") == "array" and ("minItems" in spec or "maxItems" in spec):
        count = len((spec.get("items") or {}).get("enum") or [])
        parts.append(pick_words(int(spec.get("minItems", 0)), int(spec.get("maxItems", count))) + ".")
    return " ".join(parts) or None


def field_element(spec: dict[str, Any]) -> dict[str, Any]:
    """The Block Kit element for one field of a form."""
    kind = spec.get("type")
    if kind == "boolean":
        return {"type": "checkboxes", "action_id": FIELD_INPUT,
                "options": [_option("Yes", TRUE_VALUE)]}
    if kind in ("integer", "number"):
        return _number_element(spec, whole=kind == "integer")
    if kind == "array":
        values = [str(v) for v in (spec.get("items") or {}).get("enum") or []]
        element: dict[str, Any] = {
            "type": "multi_static_select", "action_id": FIELD_INPUT,
            "options": [_option(v, v) for v in values], "placeholder": _plain("Choose", OPTION_MAX),
        }
        if isinstance(spec.get("maxItems"), int) and spec["maxItems"] >= 1:
            element["max_selected_items"] = spec["maxItems"]
        return element
    if "enum" in spec:
        values = [str(v) for v in spec["enum"]]
        return {"type": "static_select", "action_id": FIELD_INPUT,
                "options": [_option(v, v) for v in values], "placeholder": _plain("Choose", OPTION_MAX)}
    kinds = {"date": "datepicker", "email": "email_text_input", "uri": "url_text_input"}
    if spec.get("format") in kinds:
        return {"type": kinds[spec["format"]], "action_id": FIELD_INPUT}
    return _text_element(spec)


def _text_element(spec: dict[str, Any]) -> dict[str, Any]:
    low, high = spec.get("minLength"), spec.get("maxLength")
    top = high if isinstance(high, int) and 1 <= high <= INPUT_MAX else INPUT_MAX
    element: dict[str, Any] = {
        "type": "plain_text_input", "action_id": FIELD_INPUT, "multiline": top > SHORT_TEXT,
        "max_length": top,
    }
    if isinstance(low, int) and 1 <= low <= top:
        element["min_length"] = low
    return element


def _number_element(spec: dict[str, Any], whole: bool) -> dict[str, Any]:
    """A number input; an integer field's bounds rounded inwards to whole numbers (Slack takes
    no decimal bound on an input that allows none)."""
    element: dict[str, Any] = {
        "type": "number_input", "action_id": FIELD_INPUT, "is_decimal_allowed": not whole,
    }
    low, high = _bound(spec.get("minimum"), whole, up=True), _bound(spec.get("maximum"), whole, up=False)
    if low is not None and high is not None and Decimal(low) > Decimal(high):
        return element  # no whole number between them: the answer's check says so
    if low is not None:
        element["min_value"] = low
    if high is not None:
        element["max_value"] = high
    return element


def _bound(value: Any, whole: bool, up: bool) -> str | None:
    """A schema bound as Slack's number text (`-3`, `0.25`, never `1e-07`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    exact = Decimal(str(value))
    if not exact.is_finite():
        return None
    if whole:
        exact = exact.to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR)
    return format(exact.normalize(), "f") if exact != 0 else "0"


# -- a refusal's reason ---------------------------------------------------------------------


def refusal_modal(ask: AskRow, ref: str) -> dict[str, Any] | None:
    """What the Refuse button of an approval opens: an optional reason, which the agent reads
    as the answer's note. None for an ask that is not an approval."""
    if ask.kind != vocabulary.APPROVAL:
        return None
    element = {
        "type": "plain_text_input", "action_id": REASON_INPUT, "multiline": True,
        "max_length": INPUT_MAX,
    }
    if starts.is_start(ask):
        heading = f"Refuse {starts.what(ask)}? That cancels the work for {starts.agent(ask)}."
    else:
        heading = f"Refuse {ask.operation or ask.question}?"
    blocks = [
        _heading(heading),
        _input(REASON_BLOCK, "Reason", element, optional=True, hint=REASON_HINT),
    ]
    return _modal(REFUSE_CALLBACK, ask, f"Refuse {ref}", "Refuse", blocks)
