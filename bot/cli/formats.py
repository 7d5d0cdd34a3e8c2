"""An ask's answer format as the CLI prints it: how to answer, a form's fields, the media, and
an answer's typed value (a list, yes/no, a form's fields). Reads the ask as the server sends it;
every piece of agent text goes through bot.cli.text."""

from __future__ import annotations

import json
from typing import Any

from bot.cli.text import joined, line
from core.domain.bounds import between

TEXT, CHOICE, MULTI, CONFIRM, ACK, FORM = "text", "choice", "multi", "confirm", "ack", "form"
# Answered by an outside system through its signed door, never by a person.
EXTERNAL = "external"
# Shown beside the question in `aye asks` for the formats that are not answered as before.
MARKED = (MULTI, CONFIRM, ACK, FORM, EXTERNAL)
# What `aye show` says of an external ask's ticket (the server never sends the ticket).
TICKET_WORDS = {
    "waiting": "waiting (its door is open for the outside system's answer)",
    "used": "used (the outside system answered through it)",
    "dead": "dead (the ask closed without it: its door is shut)",
}


def format_of(ask: dict[str, Any]) -> str:
    """The ask's format; from a server that does not say, a choice with options, else text."""
    fmt = ask.get("format")
    if isinstance(fmt, str) and fmt:
        return fmt
    return CHOICE if ask.get("options") else TEXT


def marker(ask: dict[str, Any]) -> str:
    """`[multi] ` before a question whose format is not a plain choice or text;
    `[waits on docsign (external)] ` before an external ask."""
    fmt = format_of(ask)
    if fmt == EXTERNAL:
        return f"[{waits_on(ask)} (external)] "
    return f"[{line(fmt)}] " if fmt in MARKED and ask.get("kind") != "approval" else ""


def waits_on(ask: dict[str, Any]) -> str:
    """`waits on docsign`: the outside system (verifier) an external ask waits on."""
    return f"waits on {line(ask.get('verifier') or 'an outside system')}"


def bounds(ask: dict[str, Any]) -> tuple[int, int]:
    count = len(ask.get("options") or [])
    low, high = ask.get("min"), ask.get("max")
    return (low if isinstance(low, int) else 1), (high if isinstance(high, int) else count)


def how(ask: dict[str, Any]) -> str:
    """The format and what it takes: `multi (pick 1 to 3: numbers or texts, like 1, 3)`."""
    fmt = format_of(ask)
    if fmt == MULTI:
        low, high = bounds(ask)
        pick = f"{low}" if low == high else f"{low} to {high}"
        return f"multi (pick {pick}: numbers or texts separated by commas, like 1, 3)"
    words = {
        TEXT: "text (free text)", CHOICE: "choice (an option's number or its text)",
        CONFIRM: "confirm (yes or no)", ACK: "ack (ok when the work may go on)",
        FORM: "form (one line of JSON with the fields below)",
        EXTERNAL: f"external ({waits_on(ask)}, an outside system, which answers through its "
        f"signed door; nobody answers it here: `aye withdraw {line(ask.get('ref', 'REF'))}` "
        "if it is no longer needed)",
    }
    return words.get(fmt, line(fmt))


def ticket_line(ask: dict[str, Any]) -> str | None:
    """`ticket: waiting (…)`: an external ask's ticket state, as the operator's view says it."""
    state = ask.get("ticket")
    if not isinstance(state, str):
        return None
    return f"ticket: {TICKET_WORDS.get(state, line(state))}"


# -- a form's fields ----------------------------------------------------------------------------


def field_lines(ask: dict[str, Any]) -> list[str]:
    """A form's fields: name, required or not, type and limits, then title and description."""
    schema = ask.get("schema")
    if format_of(ask) != FORM or not isinstance(schema, dict):
        return []
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    required = set(schema.get("required") or [])
    lines = ["fields:"]
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        need = "required" if name in required else "optional"
        lines.append(f"  {line(name)} ({need}): {takes(spec)}")
        about = [str(spec[k]) for k in ("title", "description") if isinstance(spec.get(k), str)]
        if about:
            lines.append(f"    {line(' - '.join(about))}")
    return lines


def takes(spec: dict[str, Any]) -> str:
    """A field's type and limits: `string, one of: eu, us`, `integer, 1 to 10`."""
    kind = str(spec.get("type", "?"))
    words = [line(kind)]
    if kind == "string":
        if isinstance(spec.get("enum"), list):
            words.append("one of: " + joined(spec["enum"]))
        if spec.get("format"):
            words.append(f"format {line(spec['format'])}")
        words.append(between(spec.get("minLength"), spec.get("maxLength"), " characters", shown=line))
        if spec.get("pattern"):
            words.append(f"pattern {line(spec['pattern'])}")
    elif kind in ("integer", "number"):
        words.append(between(spec.get("minimum"), spec.get("maximum"), "", shown=line))
    elif kind == "array":
        values = (spec.get("items") or {}).get("enum") if isinstance(spec.get("items"), dict) else None
        if isinstance(values, list):
            words.append("any of: " + joined(values))
        words.append(between(spec.get("minItems"), spec.get("maxItems"), " picked", shown=line))
    return ", ".join(w for w in words if w)


def media_lines(ask: dict[str, Any]) -> list[str]:
    """The media beside the question: kind, caption, URL."""
    media = [m for m in ask.get("media") or [] if isinstance(m, dict)]
    if not media:
        return []
    lines = ["media:"]
    for item in media:
        caption = f"  {line(item['caption'])}" if item.get("caption") else ""
        lines.append(f"  {line(item.get('kind', '?'))}{caption}  {line(item.get('url', ''))}")
    return lines


# -- answers ------------------------------------------------------------------------------------


def shown(ask: dict[str, Any], value: Any) -> str:
    """An answer's value on one line: `red, blue`, `yes`, `ok`, `region: eu, count: 3`."""
    fmt = format_of(ask)
    if fmt == EXTERNAL:  # any JSON the outside system sent, as one line of it
        return line(json.dumps(value, ensure_ascii=False))
    if fmt == CONFIRM and isinstance(value, bool):
        return "yes" if value else "no"
    if fmt == ACK and value is True:
        return "ok"
    if isinstance(value, list):
        return joined(value)
    if isinstance(value, dict):
        return ", ".join(f"{line(k)}: {_field(v)}" for k, v in value.items())
    return line(value if isinstance(value, str) else json.dumps(value, sort_keys=True))


def answer_lines(ask: dict[str, Any], value: Any) -> list[str]:
    """Below the `answer:` line: a multi's option numbers, a form's fields one a line."""
    fmt = format_of(ask)
    numbers = (ask.get("answer") or {}).get("options")
    if fmt == MULTI and isinstance(numbers, list):
        return [f"  options: {joined(numbers)}"]
    if fmt == FORM and isinstance(value, dict):
        return [f"  {line(k)}: {_field(v)}" for k, v in value.items()]
    return []


def _field(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return joined(value)
    return line(value)


def valid_answers(ask: dict[str, Any]) -> str | None:
    """What would be taken, after a refusal that did not fit: None where the server's message
    says it all (text)."""
    fmt = format_of(ask)
    options = [line(o) for o in ask.get("options") or []]
    numbered = ", ".join(f"{n}. {o}" for n, o in enumerate(options, start=1))
    if ask.get("kind") == "approval":
        return " or ".join(options)
    if fmt == CHOICE and options:
        return f"{numbered} (the number or the text)"
    if fmt == MULTI:
        low, high = bounds(ask)
        pick = f"{low}" if low == high else f"{low} to {high}"
        return f"{pick} of {numbered}, separated by commas (numbers or texts)"
    if fmt == CONFIRM:
        return "yes or no (also y, n, true, false)"
    if fmt == ACK:
        return "ok, continue, yes or true"
    if fmt == FORM:
        return "one line of JSON: " + _example_names(ask)
    return None


def _example_names(ask: dict[str, Any]) -> str:
    """`{"region": …, "count": …}` (required: region, count)."""
    schema = ask.get("schema") if isinstance(ask.get("schema"), dict) else {}
    names = list((schema or {}).get("properties") or {})
    shape = "{" + ", ".join(f"{line(json.dumps(n))}: …" for n in names) + "}"
    required = [n for n in names if n in set((schema or {}).get("required") or [])]
    return shape + (f" (required: {joined(required)})" if required else "")
