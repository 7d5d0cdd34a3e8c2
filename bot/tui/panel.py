"""The right of `aye tui`: the selected ask in full, as `aye show` prints it (question, context,
numbered options, an approval's operation and whole input with `input_sha256`, who it is for,
the deadline, the answer and the history), with the outcome of what was just pressed above it.

The text is `aye show`'s own (bot.cli.show), so the two never disagree; every piece of agent
text in it went through bot.cli.text. It becomes a `rich.text.Text`, never markup."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from bot.cli import formats as cli_formats
from bot.cli import show as cli_show
from bot.cli.text import line
from bot.tui import bindings, listing

TAKEN, REFUSED, NOTICE = "taken", "refused", "notice"
STYLES = {TAKEN: "bold green", REFUSED: "bold red", NOTICE: "bold yellow"}
# `aye show`'s own labels start a line at the margin (agent text is indented below them).
LABEL = re.compile(r"^([a-z][a-z0-9_ ]*):")
# Shown whatever `aye show` says of them, where the server has them: what ran after an
# approval, and its signed receipt.
EXTRAS = ("run", "receipt")
OUTCOME = "outcome: "


@dataclass(frozen=True)
class Outcome:
    """What became of the last key pressed on an ask (or what happened to it elsewhere)."""

    kind: str
    words: str


def detail(ask: dict[str, Any], outcome: Outcome | None = None) -> Text:
    out = Text()
    if outcome is not None:
        out.append(f"{outcome.kind}: ", style=STYLES.get(outcome.kind, "bold"))
        out.append(outcome.words + "\n\n", style=STYLES.get(outcome.kind, "bold"))
    if ask.get("danger") and ask.get("status") == "open":
        out.append("destructive: ", style="bold red reverse")
        out.append("approving (or yes, or an option) asks you to confirm first\n", style="bold")
    shown = as_shown(ask)
    for text in shown:
        if text.startswith("format: ") and cli_formats.format_of(ask) != cli_formats.EXTERNAL:
            # `aye show` says how the CLI takes it (one line of JSON); here, keys do.
            text = f"format: {line(cli_formats.format_of(ask))} ({bindings.hint(ask)})"
        if text.startswith(OUTCOME) and ask.get("kind") == "approval":
            text = OUTCOME + listing.outcome_words(ask.get("outcome"))  # words, not the code
        found = LABEL.match(text)
        if found:
            out.append(found.group(0), style="bold")
            out.append(text[found.end():] + "\n")
        else:
            out.append(text + "\n")
    for text in extras(ask, shown):
        out.append(text + "\n")
    return out


def as_shown(ask: dict[str, Any]) -> list[str]:
    """`aye show`'s lines for this ask (printed into a buffer: it prints)."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            cli_show.show(ask)
    except (KeyError, TypeError, ValueError, AttributeError):
        # An ask this TUI cannot read in full (a server of another version): what it can.
        return [f"{line(ask.get('ref', '?'))}  {line(ask.get('status', '?'))}",
                f"question: {line(ask.get('question', ''))}"]
    return buffer.getvalue().splitlines()


def extras(ask: dict[str, Any], shown: list[str]) -> list[str]:
    """`run:` and `receipt:` lines `aye show` did not print itself."""
    lines = []
    for key in EXTRAS:
        value = ask.get(key)
        if value is None or any(text.startswith(f"{key}:") for text in shown):
            continue
        if isinstance(value, dict):
            parts = [f"{line(k)} {line(v)}" for k, v in value.items() if v is not None]
            lines.append(f"{key}: " + ", ".join(parts))
        else:
            lines.append(f"{key}: {line(value)}")
    return lines
