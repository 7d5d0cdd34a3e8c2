"""Answer formats: what an ask takes as an answer, and what the agent reads back.

`fit(ask, given)` reads what a person gave (a string from a surface, or JSON from the API) as
the answer to an ask of its format, or raises Misfit naming the failing part (`answer.count`)
and why, in words a person reads. A form's answer is checked by jsonschema against the ask's
schema (core/domain/forms.py checks that schema when the ask is made). Pure: no I/O here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from core.domain import forms, payloads
from core.domain.forms import Misfit

TEXT, CHOICE, MULTI, CONFIRM, ACK, FORM = "text", "choice", "multi", "confirm", "ack", "form"
# Answered by an outside system through its signed door (core/app/external.py), not a person.
EXTERNAL = "external"
FORMATS = (TEXT, CHOICE, MULTI, CONFIRM, ACK, FORM, EXTERNAL)
# Stored as JSON in answer_value: the agent reads a list, a bool, an object or any JSON.
TYPED = (MULTI, CONFIRM, ACK, FORM, EXTERNAL)
APPROVAL = "approval"
APPROVE, REFUSE = "approve", "refuse"
MAX_TEXT = 3000
YES_WORDS = ("true", "yes", "y")
NO_WORDS = ("false", "no", "n")
ACK_WORDS = ("true", "ok", "continue", "yes")


class FormatFacts(Protocol):
    """What the formats read of an ask (a store row, or a test's stand-in)."""

    @property
    def kind(self) -> str: ...
    @property
    def format(self) -> str | None: ...
    @property
    def options(self) -> list[str] | None: ...
    @property
    def form_schema(self) -> dict[str, Any] | None: ...
    @property
    def pick_min(self) -> int | None: ...
    @property
    def pick_max(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Fit:
    """An answer that fits: the value the agent reads, the 1-based option of a choice, the
    1-based options of a multi, and the text kept in the store."""

    value: Any
    option: int | None
    options: list[int] | None
    stored: str


def format_of(ask: FormatFacts) -> str:
    """The ask's format; an ask made before formats existed is a choice with options, else text.
    An approval is a choice between approve and refuse."""
    if ask.format:
        return ask.format
    return CHOICE if ask.options else TEXT


def bounds(ask: FormatFacts) -> tuple[int, int]:
    """How many options a multi takes: (min, max)."""
    count = len(ask.options or [])
    return ask.pick_min or 1, ask.pick_max or count


def fit(ask: FormatFacts, given: Any) -> Fit:
    """`given` read as the answer to `ask`, or Misfit."""
    fmt = format_of(ask)
    if fmt == TEXT:
        return _text(given)
    if fmt == CHOICE:
        index = pick(ask.options or [], given)
        value = (ask.options or [])[index - 1]
        return Fit(value, index, None, value)
    if fmt == MULTI:
        return _multi(ask, given)
    if fmt == CONFIRM:
        return _typed(_word(given, YES_WORDS, NO_WORDS, "answer yes or no"))
    if fmt == ACK:
        if _word(given, ACK_WORDS, (), "answer ok to let the work go on"):
            return _typed(True)
        raise Misfit("answer ok to let the work go on")
    if fmt == FORM:
        return _typed(forms.answer(ask.form_schema or {}, given))
    if fmt == EXTERNAL:
        return _typed(payloads.fit(ask.form_schema or {}, given))
    raise Misfit(f"this ask's format ({fmt}) takes no answer here")


def value_of(ask: FormatFacts, stored: str | None) -> Any:
    """What the agent reads for the stored text: a JSON value for the typed formats."""
    if stored is None or format_of(ask) not in TYPED:
        return stored
    try:
        return json.loads(stored)
    except ValueError:  # not written by fit(): show it as it is rather than fail the read
        return stored


def picked(ask: FormatFacts, value: Any) -> list[int] | None:
    """A multi's answer as the 1-based numbers of its options."""
    if format_of(ask) != MULTI or not isinstance(value, list):
        return None
    options = ask.options or []
    return [options.index(v) + 1 for v in value if v in options]


def _typed(value: Any) -> Fit:
    return Fit(value, None, None, json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _text(given: Any) -> Fit:
    if not isinstance(given, str):
        raise Misfit("must be text")
    cleaned = given.strip()
    if not cleaned:
        raise Misfit("must not be empty")
    if len(cleaned) > MAX_TEXT:
        raise Misfit(f"must be at most {MAX_TEXT} characters")
    return Fit(cleaned, None, None, cleaned)


def pick(options: list[str], given: Any) -> int:
    """An option's 1-based number, given as its number or its text (case and surrounding
    space ignored; an option's own text first, so with options "1", "3" the answer "3" is
    the option "3")."""
    if isinstance(given, int) and not isinstance(given, bool):
        if 1 <= given <= len(options):
            return given
        raise Misfit(f"must be a number from 1 to {len(options)}")
    if not isinstance(given, str) or not given.strip():
        raise Misfit("must be one of the options: " + _listed(options))
    cleaned = given.strip()
    folded = cleaned.casefold()
    for index, option in enumerate(options, start=1):
        if option.strip().casefold() == folded:
            return index
    if cleaned.isascii() and cleaned.isdigit() and 1 <= int(cleaned) <= len(options):
        return int(cleaned)
    raise Misfit("must be one of the options: " + _listed(options))


def _listed(options: list[str]) -> str:
    shown = [f"{i} {o}" for i, o in enumerate(options, start=1)]
    return ", ".join(shown) if len(", ".join(shown)) <= 300 else f"a number from 1 to {len(options)}"


def _multi(ask: FormatFacts, given: Any) -> Fit:
    options = ask.options or []
    if isinstance(given, str):
        items: list[Any] = _split(options, given)
    elif isinstance(given, list):
        items = given
    else:
        raise Misfit("must be a list of options, like 1, 3")
    chosen: set[int] = set()
    for position, item in enumerate(items):
        try:
            chosen.add(pick(options, item))
        except Misfit as misfit:
            raise Misfit(misfit.words, f"answer[{position}]") from None
    low, high = bounds(ask)
    if len(chosen) < low:
        raise Misfit(f"must pick at least {low} option{'s' if low != 1 else ''}")
    if len(chosen) > high:
        raise Misfit(f"must pick at most {high} option{'s' if high != 1 else ''}")
    numbers = sorted(chosen)
    value = [options[n - 1] for n in numbers]
    return Fit(value, None, numbers, json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _split(options: list[str], text: str) -> list[str]:
    """`1, 3` or `red, blue` as its parts; one option's whole text (which may hold a comma)
    is that one option."""
    folded = text.strip().casefold()
    if any(option.strip().casefold() == folded for option in options):
        return [text]
    parts = [part for part in (p.strip() for p in text.split(",")) if part]
    return parts


def _word(given: Any, yes: tuple[str, ...], no: tuple[str, ...], hint: str) -> bool:
    if isinstance(given, bool):
        if given or no:
            return given
        raise Misfit(hint)
    if isinstance(given, str):
        word = given.strip().casefold()
        if word in yes:
            return True
        if word in no:
            return False
    raise Misfit(hint)


def plain(ask: FormatFacts, stored: str | None) -> str | None:
    """The answer as one plain line for a person (a surface escapes and decorates it):
    `red, blue`, `yes`, `ok`, `Region: eu, Nodes: 3`."""
    value = value_of(ask, stored)
    fmt = format_of(ask)
    if value is None or fmt in (TEXT, CHOICE):
        return None if value is None else str(value)
    if fmt == MULTI and isinstance(value, list):
        return ", ".join(map(str, value))
    if fmt == CONFIRM:
        return "yes" if value is True else "no"
    if fmt == ACK:
        return "ok"
    if fmt == FORM and isinstance(value, dict):
        schema = ask.form_schema or {}
        return ", ".join(f"{forms.title(schema, k)}: {_field(v)}" for k, v in value.items())
    if fmt == EXTERNAL:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def _field(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)
