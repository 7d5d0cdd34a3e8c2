"""How to answer an ask on GitHub, per its format, and what a question comment shows beside it:
a form's fields, the media (pure). Everything an agent wrote is inert (handlers.github.inert);
field names, values and examples people may copy are code spans."""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import quote, urlsplit

from core.app.ports import AskRow
from core.domain import bounds, formats, forms, vocabulary

from . import cut, inert
from .cut import WHOLE, Rooms
from .parsing import ANSWER_COMMAND

# Kept as they are in a link's destination: what cannot end it or start anything else.
URL_SAFE = "/:?#@!$&+,;=%-._~"


def how_to_answer(ask: AskRow, ref: str, who: str, rooms: Rooms = WHOLE) -> list[str]:
    """A paragraph for `who` (the people who may answer here): the `/answer` line that fits
    the ask's format, with an example; for an external ask, what it waits on instead."""
    if formats.format_of(ask) == formats.EXTERNAL:
        return [waits_on(ask)]
    if ask.sensitive:
        return [
            "This answer is sensitive: it cannot be given in a public comment. "
            "Answer it in Slack or with the `aye` CLI."
        ]
    return [
        f"{who}: answer with a comment whose first line is {example(ask, rooms)}. With several "
        f"questions open here, name this one: `{ANSWER_COMMAND} {ref} …`. "
        "Lines after the first are passed on as a note."
    ]


def waits_on(ask: AskRow) -> str:
    """An external ask waits on an outside system (the verifier aye's config names), which
    answers through its signed door: nobody answers it on GitHub."""
    return (f"Waits on {inert.code_span(ask.verifier or '?')}, an outside system; it answers "
            "through its signed door, so nobody answers this question here: an "
            f"`{ANSWER_COMMAND}` is refused.")


def example(ask: AskRow, rooms: Rooms = WHOLE) -> str:
    """The `/answer` line for the ask's format, in words and code spans."""
    fmt = formats.format_of(ask)
    options = ask.options or []
    if ask.kind == vocabulary.APPROVAL:
        return f"`{ANSWER_COMMAND} {vocabulary.APPROVE}` or `{ANSWER_COMMAND} {vocabulary.REFUSE}`"
    if fmt == formats.CHOICE and options:
        return f"`{ANSWER_COMMAND} 1` or {inert.code_span(f'{ANSWER_COMMAND} {options[0]}')}"
    if fmt == formats.MULTI:
        low, high = formats.bounds(ask)
        numbers = ", ".join(map(str, _some(len(options), low, high)))
        pick = f"pick {low}" if low == high else f"pick {low} to {high}"
        return (f"`{ANSWER_COMMAND} {numbers}` ({pick}: option numbers or texts, "
                "separated by commas)")
    if fmt == formats.CONFIRM:
        return f"`{ANSWER_COMMAND} yes` or `{ANSWER_COMMAND} no`"
    if fmt == formats.ACK:
        return f"`{ANSWER_COMMAND} ok` when the work may go on"
    if fmt == formats.FORM:
        return _form_example(ask.form_schema or {}, rooms.example)
    return f"`{ANSWER_COMMAND} <your answer>`"


def _some(count: int, low: int, high: int) -> list[int]:
    """Option numbers for an example: as many as fit the bounds (2 where they allow),
    spread out (`1, 3`) where there are enough options."""
    wanted = max(low, min(2, high))
    spread = list(range(1, count + 1, 2))[:wanted]
    return spread if len(spread) == wanted else list(range(1, wanted + 1))


def _form_example(schema: dict[str, Any], room: int) -> str:
    answer = {name: _sample(spec) for name, spec, _ in forms.fields(schema)}
    line = f"{ANSWER_COMMAND} {json.dumps(answer, ensure_ascii=False)}"
    shown = inert.code_span(line)
    if cut.size(shown) > room:
        shown = f"`{ANSWER_COMMAND} {{\"field\": \"value\", …}}`"
    return f"{shown} (the form's fields as one line of JSON)"


def _sample(spec: dict[str, Any]) -> Any:
    """A value that fits the field, for the example."""
    kind = spec.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        low, high = spec.get("minimum"), spec.get("maximum")
        if low is not None and kind == "integer":
            low = math.ceil(low)
        if high is not None and kind == "integer":
            high = math.floor(high)
        value = max(low, 1) if low is not None else 1
        return min(value, high) if high is not None else value
    if kind == "array":
        values = list((spec.get("items") or {}).get("enum") or [])
        return values[: min(max(spec.get("minItems") or 1, 1), spec.get("maxItems", 1 << 20))]
    if spec.get("enum"):
        return spec["enum"][0]
    by_format = {"email": "name@example.com", "uri": "https://example.com", "date": "2026-12-01"}
    if spec.get("format") in by_format:
        return by_format[spec["format"]]
    length = min(max(4, spec.get("minLength") or 0), spec.get("maxLength", 1 << 20))
    return ("text" * (length // 4 + 1))[:length]


# -- a form's fields -------------------------------------------------------------------------


def field_lines(ask: AskRow, ref: str, rooms: Rooms = WHOLE) -> list[str]:
    """A form's fields, one list item each: name, title, whether required, what it takes."""
    if formats.format_of(ask) != formats.FORM or not ask.form_schema:
        return []
    lines = ["", "Fields:"]
    for name, spec, required in forms.fields(ask.form_schema):
        line = _field_line(name, spec, required)
        if cut.size(line) > rooms.field:
            short = f"- {inert.code_span(name)} ({'required' if required else 'optional'})"
            line = f"{short}: {_kind(spec)}; too long to show here: see `aye show {ref}`."
        lines.append(line)
    return lines


def _field_line(name: str, spec: dict[str, Any], required: bool) -> str:
    head = f"- {inert.code_span(name)}"
    title = spec.get("title")
    if isinstance(title, str) and title != name:
        head += f" {inert.inline(title)}"
    line = f"{head} ({'required' if required else 'optional'}): {_takes(spec)}"
    description = spec.get("description")
    if isinstance(description, str):
        line += f". {inert.inline(description)}"
    return line


def _kind(spec: dict[str, Any]) -> str:
    return {
        "string": "text", "integer": "a whole number", "number": "a number",
        "boolean": "`true` or `false`", "array": "a list",
    }.get(str(spec.get("type")), "a value")


def _takes(spec: dict[str, Any]) -> str:
    """What a field takes, in words: its type and its limits."""
    kind = spec.get("type")
    words = [_kind(spec)]
    if kind == "string":
        if spec.get("enum"):
            words = ["one of " + ", ".join(inert.code_span(v) for v in spec["enum"])]
        shapes = {"email": "an email address", "uri": "a URL", "date": "a date like `2026-12-01`"}
        if spec.get("format") in shapes:
            words = [shapes[spec["format"]]]
        words.append(bounds.between(spec.get("minLength"), spec.get("maxLength"), " characters",
                                    lead="from "))
        if spec.get("pattern"):
            words.append("matching " + inert.code_span(str(spec["pattern"])))
    elif kind in ("integer", "number"):
        words.append(bounds.between(spec.get("minimum"), spec.get("maximum"), "", lead="from "))
    elif kind == "array":
        values = (spec.get("items") or {}).get("enum") or []
        words = ["a list of " + ", ".join(inert.code_span(v) for v in values)]
        picks = bounds.between(spec.get("minItems"), spec.get("maxItems"))
        words.append(f"(pick {picks})" if picks else "")
    return " ".join(w for w in words if w)


# -- media -----------------------------------------------------------------------------------


def media_lines(ask: AskRow, rooms: Rooms = WHOLE) -> list[str]:
    """The media beside the question, each a plain link (an image too: never embedded), its
    caption inert and its host shown, so that no link hides where it goes."""
    items = [m for m in ask.media or [] if isinstance(m, dict)]
    if not items:
        return []
    return ["", "Media:", *(_media_line(item, rooms) for item in items)]


def _media_line(item: dict[str, Any], rooms: Rooms) -> str:
    kind = "Image" if item.get("kind") == "image" else "Link"
    url = str(item.get("url") or "")
    host = cut.inline(urlsplit(url).hostname or "?", rooms.host)
    caption = str(item.get("caption") or "")
    text = cut.inline(caption, rooms.caption) if caption.strip() else kind.lower()
    target = destination(url)
    if target is None:
        return f"- {kind} ({host}): {text}; not an https:// address, so not linked."
    if cut.size(target) > rooms.url:
        return f"- {kind} ({host}): {text}; its address is too long to show here."
    return f"- {kind}: [{text}]({target}) ({host})"


def destination(url: str) -> str | None:
    """An `https://` URL as a Markdown link's destination that nothing in it can end early or
    turn into anything else (parentheses, angle brackets, quotes, backslashes, spaces and
    non-ASCII are percent-encoded); None for anything but https."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "https" or not parts.hostname:
        return None
    return quote(url, safe=URL_SAFE)
