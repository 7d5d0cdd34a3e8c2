"""Agent text made inert in GitHub Markdown (pure): shown as written, but never a mention, an
issue or commit link, an autolink, an image, HTML or a hidden part.

GitHub finds mentions (`@user`, `@org/team`), references (`#123`, `GH-123`, `owner/repo#1`,
commit SHAs) and bare URLs in the rendered text, after Markdown and HTML entities are decoded:
escaping cannot stop them, so an invisible zero-width joiner breaks each pattern. Markdown and
HTML themselves are escaped (`&lt;` for `<`, `\\[` for `[`): no tag, comment, link or image
forms. Code (a fenced block) is inert as it is: only its fence must outlast the text.
Characters that would not show (controls, bidi overrides, tag characters, odd spaces) are
written as `\\uXXXX` escapes, in text and code alike: they could reorder or hide what is shown.
"""

from __future__ import annotations

import re
import unicodedata

ZWJ = "\u200d"
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Backslash-escaped: links and images ([ ]), code spans and fences (` ~), emphasis (* _),
# tables (|), math ($), and the backslash itself.
_MARKDOWN = frozenset("\\`[]*_~|$")
# Unicode categories that show nothing, or show as a plain space: controls, formats (bidi
# overrides, tag characters), surrogates, private use, unassigned, separators.
_UNSEEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# What agent text may keep: a tab, and the joiners of emoji sequences (they hide nothing).
_TEXT_KEEPS = " \t\u200c\u200d"
_BREAKS = [
    (re.compile("@"), "@" + ZWJ),  # mentions, emails, `owner/repo@sha`
    (re.compile(r"#(?=\d)"), "#" + ZWJ),  # #123, owner/repo#123
    (re.compile(r"(?i)\b(gh)(?=-\d)"), r"\1" + ZWJ),  # GH-123
    (re.compile(r":(?=//)"), ":" + ZWJ),  # scheme://…
    (re.compile(r"(?i)\b(www)(?=\.)"), r"\1" + ZWJ),  # www.…
]
# A commit SHA (7 to 40 hex digits) links to the commit: cut every run into pieces of 6.
_HEX_RUN = re.compile(r"(?i)\b[0-9a-f]{7,}\b")


def _unsha(found: re.Match[str]) -> str:
    run = found.group(0)
    return ZWJ.join(run[i : i + 6] for i in range(0, len(run), 6))


def _escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:  # as JSON writes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def visible(value: str, keep: str = " ") -> str:
    """`value` with each character that would not show (but those in `keep`) written as a
    JSON-style `\\uXXXX` escape; inside a JSON string that is the same JSON."""
    if value.isascii() and value.isprintable():
        return value
    return "".join(
        _escape(c) if c not in keep and unicodedata.category(c) in _UNSEEN else c for c in value
    )


def text(value: str) -> str:
    """One line, for a Markdown paragraph, list item or quote."""
    value = visible(value, _TEXT_KEEPS)
    for pattern, replacement in _BREAKS:
        value = pattern.sub(replacement, value)
    value = _HEX_RUN.sub(_unsha, value)
    return "".join(_HTML.get(c) or ("\\" + c if c in _MARKDOWN else c) for c in value)


def inline(value: str) -> str:
    """On one line (a list item, bold text): line breaks become spaces."""
    return text(" ".join(value.splitlines()))


def quoted(value: str) -> list[str]:
    """A block quote, each line of it inert."""
    return [f"> {text(line)}" if line.strip() else ">" for line in value.splitlines()]


def _longest_backticks(code: str) -> int:
    return max((len(run) for run in re.findall("`+", code)), default=0)


def fence_for(code: str) -> str:
    """Backticks enough to open a block that nothing in `code` can close."""
    return "`" * max(3, _longest_backticks(code) + 1)


def code_span(code: str) -> str:
    """Inline code on one line, whatever backticks it holds, every character visible."""
    code = visible(" ".join(code.splitlines()))
    fence = "`" * (_longest_backticks(code) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{fence}{pad}{code}{pad}{fence}"


def code_block(code: str, language: str = "") -> str:
    """A fenced block of `code` as it is (see visible() for code that may hold the unseen)."""
    fence = fence_for(code)
    return f"{fence}{language}\n{code}\n{fence}"
