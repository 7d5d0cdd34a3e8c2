"""Agent text made inert in GitHub Markdown (pure): shown as written, but never a mention, an
issue or commit link, an autolink, an image, HTML or a hidden part.

GitHub finds mentions (`@user`, `@org/team`), references (`#123`, `GH-123`, `owner/repo#1`,
commit SHAs) and bare URLs in the rendered text, after Markdown and HTML entities are decoded:
escaping cannot stop them, so an invisible zero-width joiner breaks each pattern. Markdown and
HTML themselves are escaped (`&lt;` for `<`, `\\[` for `[`): no tag, comment, link or image
forms. Code (a fenced block) is inert as it is: only its fence must outlast the text.
Characters that would not show (controls, bidi overrides, zero-width and tag characters, odd
spaces) are written as their codes (`[U+202E]`, core.domain.visible), in text and code alike:
they could reorder or hide what is shown.
"""

from __future__ import annotations

import re
import unicodedata

from core.domain.visible import code_of, is_hidden

ZWJ = "\u200d"
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Backslash-escaped: links and images ([ ]), code spans and fences (` ~), emphasis (* _),
# tables (|), math ($), and the backslash itself.
_MARKDOWN = frozenset("\\`[]*_~|$")
# Besides what core.domain.visible shows as codes (controls, formats, separators): what shows
# nothing or a plain space on GitHub, private use, unassigned, odd spaces.
_UNSEEN_ALSO = frozenset({"Co", "Cn", "Zs"})
# What agent text may keep: a tab.
_TEXT_KEEPS = " \t"
# Line breaks, as CommonMark reads them (U+2028 is not one: it shows as its code).
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
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


def _unseen(char: str) -> bool:
    return is_hidden(char) or unicodedata.category(char) in _UNSEEN_ALSO


def _lines(value: str) -> list[str]:
    """As str.splitlines(), but breaking only where CommonMark does."""
    found = _LINE_BREAKS.split(value)
    return found[:-1] if found[-1] == "" else found


def visible(value: str, keep: str = " ") -> str:
    """`value` with each character that would not show (but those in `keep`) written as its
    code, `[U+202E]`."""
    if value.isascii() and value.isprintable():
        return value
    return "".join(code_of(c) if c not in keep and _unseen(c) else c for c in value)


def text(value: str) -> str:
    """One line, for a Markdown paragraph, list item or quote."""
    value = visible(value, _TEXT_KEEPS)
    for pattern, replacement in _BREAKS:
        value = pattern.sub(replacement, value)
    value = _HEX_RUN.sub(_unsha, value)
    return "".join(_HTML.get(c) or ("\\" + c if c in _MARKDOWN else c) for c in value)


def inline(value: str) -> str:
    """On one line (a list item, bold text): line breaks become spaces."""
    return text(" ".join(_lines(value)))


def quoted(value: str) -> list[str]:
    """A block quote, each line of it inert."""
    return [f"> {text(line)}" if line.strip() else ">" for line in _lines(value)]


def _longest_backticks(code: str) -> int:
    return max((len(run) for run in re.findall("`+", code)), default=0)


def fence_for(code: str) -> str:
    """Backticks enough to open a block that nothing in `code` can close."""
    return "`" * max(3, _longest_backticks(code) + 1)


def code_span(code: str) -> str:
    """Inline code on one line, whatever backticks it holds, every character visible."""
    code = visible(" ".join(_lines(code)))
    fence = "`" * (_longest_backticks(code) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{fence}{pad}{code}{pad}{fence}"


def code_block(code: str, language: str = "") -> str:
    """A fenced block of `code` as it is (see visible() for code that may hold the unseen)."""
    fence = fence_for(code)
    return f"{fence}{language}\n{code}\n{fence}"
