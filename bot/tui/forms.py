"""A form's fields as `aye tui` asks for them (one line of input each), and the typed lines
as the answer's JSON object. The server judges the answer: a line that is not the field's type
(`ten` for an integer) is sent as typed, and the server's refusal names the field, shown
under it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.cli import formats as cli_formats
from bot.cli.text import line

YES = frozenset({"yes", "y", "true"})
NO = frozenset({"no", "n", "false"})
INTEGER = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class Field:
    name: str
    label: str  # title (or name), with `*` when required
    takes: str  # type and bounds: `integer, 1 to 10`
    about: str  # description, or ""
    kind: str
    required: bool


def fields(ask: dict[str, Any]) -> list[Field]:
    schema = ask.get("schema") if isinstance(ask.get("schema"), dict) else {}
    properties = (schema or {}).get("properties")
    if not isinstance(properties, dict):
        return []
    required = set((schema or {}).get("required") or [])
    found = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        title = spec.get("title") if isinstance(spec.get("title"), str) else name
        need = name in required
        takes = cli_formats.takes(spec)
        if spec.get("type") == "boolean":
            takes += ", yes or no"
        elif spec.get("type") == "array":
            takes += ", separated by commas"
        about = spec.get("description") if isinstance(spec.get("description"), str) else ""
        found.append(Field(str(name), line(title) + (" *" if need else ""), takes, line(about),
                           str(spec.get("type", "string")), need))
    return found


def value(kind: str, typed: str) -> Any:
    """A typed line as the field's JSON type where it reads as one; else the text itself."""
    text = typed.strip()
    if kind == "integer" and INTEGER.match(text):
        return int(text)
    if kind == "number":
        if INTEGER.match(text):
            return int(text)
        try:
            return float(text)
        except ValueError:
            return text
    if kind == "boolean" and text.casefold() in YES | NO:
        return text.casefold() in YES
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    return typed if kind == "string" else text


def answer(form: list[Field], typed: dict[str, str]) -> dict[str, Any]:
    """The form's answer: each field typed in (a blank one left out, as a form leaves it)."""
    return {f.name: value(f.kind, typed[f.name]) for f in form if typed.get(f.name, "").strip()}
