"""How the CLI prints what the server sent: every piece of agent text without terminal
controls (each shown as its code, `[U+202E]`, as on every surface: core.domain.visible), times
as people read them."""

from __future__ import annotations

from datetime import datetime

from core.domain.visible import cut_before_code, visible


def when(text: str | None) -> float | None:
    """An ISO 8601 time from the server as epoch seconds."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def relative(ts: float | None, now: float) -> str:
    """`3m ago`, `in 2h`: the largest unit the span reaches, rounded to the nearest (a deadline
    a day away a moment after it was set is `in 24h`, not `in 23h`)."""
    if ts is None:
        return "-"
    delta = ts - now
    span = abs(delta)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if span >= size or unit == "s":
            amount = f"{round(span / size)}{unit}"
            break
    return f"in {amount}" if delta > 0 else f"{amount} ago"


def line(value: object) -> str:
    """Server text on one line: whitespace runs (line breaks too) as one space, and every
    other control or format character as its code (`[U+001B]`, `[U+202E]`), so that no agent
    can move the cursor, rewrite a line, reorder text or write the clipboard of the operator's
    terminal."""
    return " ".join(visible(str(value), multiline=True).split())


def block(value: object, indent: str = "  ") -> str:
    """Server text over several lines, each cleaned as by `line` but for its spaces, the lines
    after the first indented: only the CLI's own labels start at the margin."""
    lines = str(value).replace("\r\n", "\n").split("\n")
    return ("\n" + indent).join(visible(text.expandtabs(4)) for text in lines)


def one_line(text: str, width: int) -> str:
    flat = line(text)
    # Cut before a code rather than inside it: `[U+20…` would name no character.
    return flat if len(flat) <= width else cut_before_code(flat[: width - 1]) + "…"


def joined(value: object) -> str:
    """A list as `a, b`, anything else as it is; on one line, cleaned."""
    return line(", ".join(map(str, value)) if isinstance(value, list) else value)
