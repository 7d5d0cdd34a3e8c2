"""What a key does to the selected ask, decided from the ask alone (no screen, no network), and
the one-line hint of the keys that answer it. The answer goes to the server as the text the CLI
would send (`aye answer REF 2`, `yes`, `ok`), so the server reads it per the ask's format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.cli import formats as cli_formats
from bot.cli.formats import ACK, CHOICE, CONFIRM, EXTERNAL, FORM, MULTI, TEXT

APPROVE, REFUSE = "approve", "refuse"
ENTER = "enter"
TYPED = (TEXT, MULTI, CHOICE)  # Enter opens one line for these


@dataclass(frozen=True)
class Send:
    """Send this answer; `affirmative`: it says yes (a danger ask confirms it first)."""

    answer: str
    affirmative: bool


@dataclass(frozen=True)
class AskNote:
    """Refuse an approval, with an optional note asked for first."""


@dataclass(frozen=True)
class OpenInput:
    """Open the input for typing the answer: one line, or one field per form field."""

    form: bool


@dataclass(frozen=True)
class Nothing:
    """The key does not answer this ask: why, in a sentence."""

    why: str


Action = Send | AskNote | OpenInput | Nothing


def on_key(ask: dict[str, Any] | None, key: str) -> Action:
    if ask is None:
        return Nothing("no ask is selected")
    ref = str(ask.get("ref") or "this ask")
    if ask.get("status") != "open":
        return Nothing(f"{ref} is {ask.get('status')}: there is nothing to answer")
    fmt = cli_formats.format_of(ask)
    if fmt == EXTERNAL:
        return Nothing(f"{ref} {cli_formats.waits_on(ask)}, an outside system: nobody answers "
                       "it here")
    action = _approval(key) if ask.get("kind") == "approval" else _question(ask, fmt, key)
    return action or Nothing(f"{_name(key)} does not answer {ref}: {hint(ask)}")


def _approval(key: str) -> Action | None:
    if key in ("a", "1"):
        return Send(APPROVE, affirmative=True)
    if key in ("r", "2"):
        return AskNote()
    return None


def _question(ask: dict[str, Any], fmt: str, key: str) -> Action | None:
    if fmt == CHOICE and key.isdigit():
        count = len(ask.get("options") or [])
        return Send(key, affirmative=True) if 1 <= int(key) <= count else None
    if fmt == CONFIRM and key in ("y", "n"):
        return Send("yes" if key == "y" else "no", affirmative=key == "y")
    if fmt == ACK and key == "c":
        return Send("ok", affirmative=True)
    if key == ENTER and fmt in TYPED:
        return OpenInput(form=False)
    if key == ENTER and fmt == FORM:
        return OpenInput(form=True)
    return None


def hint(ask: dict[str, Any] | None) -> str:
    """The keys that answer this ask, in words."""
    if ask is None or ask.get("status") != "open":
        return "nothing to answer here"
    fmt = cli_formats.format_of(ask)
    if ask.get("kind") == "approval":
        return "a approves, r refuses"
    count = len(ask.get("options") or [])
    words = {
        CHOICE: f"1-{min(count, 9)} picks an option, Enter types it"
        if count > 1 else "1 picks the option",
        CONFIRM: "y says yes, n says no",
        ACK: "c lets the work continue",
        TEXT: "Enter types an answer",
        MULTI: "Enter types the options (1, 3)",
        FORM: "Enter fills in the form",
        EXTERNAL: "an outside system answers it",
    }
    return words.get(fmt, "Enter types an answer")


def _name(key: str) -> str:
    return "Enter" if key == ENTER else key

