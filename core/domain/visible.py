"""Agent text as a person may safely see it (pure): every Unicode control and format character
shown as its code in brackets (`[U+202E]`), never raw.

A right-to-left override (U+202E) shows `rm -fr /tmp/beach.txt` as `txt.hcaeb/ pmt/ rf- mr`;
a zero-width space hides a difference; an escape sequence rewrites a terminal line. Every
surface (the inbox, email, Slack, GitHub, the CLI, the TUI) passes agent text through
`visible` before its own escaping (HTML, mrkdwn, Markdown), and marks an approval whose
operation or input holds such a character with `HIDDEN_WARNING`. What the agent sent is stored
unchanged: only its display changes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

# Controls (C0, DEL, C1), formats (bidi embeddings, overrides and isolates, zero-width
# characters, marks, soft hyphen, tag characters), line and paragraph separators, and lone
# surrogates (which no encoding can carry).
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# What multi-line text keeps as it is: its line breaks and tabs.
MULTILINE_KEEPS = frozenset("\n\t")
HIDDEN_WARNING = "this request contains hidden or reordering characters"
# The start of a code at the end of a text cut short: `[`, `[U`, `[U+20`.
PART_CODE = re.compile(r"\[(U(\+[0-9A-F]{0,5})?)?$")


def is_hidden(char: str, multiline: bool = False) -> bool:
    """True for a character that `visible` shows as its code."""
    if multiline and char in MULTILINE_KEEPS:
        return False
    return unicodedata.category(char) in HIDDEN_CATEGORIES


def code_of(char: str) -> str:
    """`[U+202E]`: the character's code point, four hex digits at least, in brackets."""
    return f"[U+{ord(char):04X}]"


def visible(text: str, multiline: bool = False) -> str:
    """`text` with every hidden character as its code; in multi-line text, line breaks (a
    CRLF counts as one) and tabs stay as they are."""
    if text.isascii() and text.isprintable():
        return text
    if multiline:
        text = text.replace("\r\n", "\n")
    return "".join(code_of(c) if is_hidden(c, multiline) else c for c in text)


def cut_before_code(cut: str) -> str:
    """Shown text cut short, without a code's first part at its end (`[U+20` names nothing)."""
    return PART_CODE.sub("", cut)


def has_hidden(value: Any, multiline: bool = True) -> bool:
    """True when `value` (text, or JSON: its keys and strings at any depth) holds a character
    that `visible` would show as its code."""
    if isinstance(value, str):
        return any(is_hidden(c, multiline) for c in value)
    if isinstance(value, dict):
        return any(has_hidden(k, multiline) or has_hidden(v, multiline) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_hidden(v, multiline) for v in value)
    return False


def visible_json(value: Any, indent: int | None = 2, sort_keys: bool = False) -> str:
    """`value` as (pretty) JSON with every hidden character as its code. `ensure_ascii=False`
    keeps letters readable but leaves U+202E, DEL and C1 controls raw, so escape after dumping
    (C0 controls are already JSON escapes such as `\\u001b`)."""
    dumped = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
    return visible(dumped, multiline=indent is not None)


def approval_hides(operation: str | None, call_input: Any) -> bool:
    """Whether an approval must carry `HIDDEN_WARNING`: its operation (one line) or its input
    (any string in it, line breaks aside) holds a hidden character."""
    return has_hidden(operation or "", multiline=False) or has_hidden(call_input)
