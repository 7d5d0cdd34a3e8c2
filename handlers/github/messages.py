"""The comments aye posts on an issue or pull request: a question, and how it closed (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.app.ports import AskRow
from core.domain import formats, identity, rules, vocabulary
from core.domain.responders import Responder
from core.domain.visible import HIDDEN_WARNING, approval_hides

from . import cut, guide, inert, starts
from .settings import LOGIN

MARKER = "<!-- aye:ask:{id} -->"
GITHUB = "github"
INLINE_MAX = 200
# GitHub refuses a comment over 65,536 characters (some count UTF-8 bytes): aye's comments
# stay under this many bytes, which is fewer characters however they are counted.
COMMENT_BUDGET = 64_000
# What an approval's comment says around its input when the input is cut.
ROOM_FOR_WORDS = 500
ESCAPED = ("Characters that would not show are written as their codes, such as `[U+202E]`; "
           "the input as sent holds the characters themselves.")
# Above an approval whose operation or input holds a control or format character.
HIDDEN_LINE = f"**Careful: {HIDDEN_WARNING}**, shown as codes such as `[U+202E]`."


def marker(ask_id: str) -> str:
    """Hidden in the rendered comment; found again after a crash between posting and recording."""
    return MARKER.format(id=ask_id)


def when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def github_logins(responders: list[str]) -> list[str] | None:
    """The GitHub logins among the responders; None when anyone on GitHub may answer."""
    logins: list[str] = []
    for text in responders:
        responder = Responder.parse(text)
        if responder.kind != GITHUB:
            continue
        if responder.id is None:
            return None
        logins.append(responder.id)
    return logins


def _allowed(ask: AskRow) -> list[str]:
    return list(ask.responders) + list(ask.escalate_responders or [])


def has_github_responder(ask: AskRow) -> bool:
    logins = github_logins(_allowed(ask))
    return logins is None or bool(logins)


def shown_here(ask: AskRow) -> bool:
    """Whether the question is posted on its issue: someone here may answer it, or it waits
    on an outside system (an external ask), which the comment says (nobody answers it here)."""
    return has_github_responder(ask) or formats.format_of(ask) == formats.EXTERNAL


def question_comment(ask: AskRow, ref: str) -> str:
    """A new ask, with how to answer it here; the first line is never a command. Agent text is
    inert (handlers.github.inert); an approval's input is a code block, whole or plainly cut.
    The comment is whole when it fits, else each part is cut to its room (handlers.github.cut)."""
    for rooms in cut.LEVELS[:-1]:
        comment = _question_comment(ask, ref, rooms)
        if _size(comment) <= COMMENT_BUDGET:
            return comment
    return _question_comment(ask, ref, cut.LEVELS[-1])


def _question_comment(ask: AskRow, ref: str, rooms: cut.Rooms) -> str:
    if starts.is_start(ask):
        return _start_comment(ask, ref, rooms)
    title = "Approval needed" if ask.kind == vocabulary.APPROVAL else "Question"
    head = [f"**{title}** from an agent (ref `{ref}`)", "", *_warned(ask),
            *cut.quoted(question(ask), rooms.question, "question", ref)]
    if ask.context and not _is_call(ask):
        head += ["", *cut.quoted(ask.context, rooms.context, "context", ref)]
    tail: list[str] = []
    if ask.options:
        tail += ["", *(f"{n}. {cut.inline(o, rooms.option)}"
                       for n, o in enumerate(ask.options, start=1))]
    tail += [*guide.field_lines(ask, ref, rooms), *guide.media_lines(ask, rooms)]
    tail += ["", *guide.how_to_answer(ask, ref, _who(ask, rooms.who), rooms), "",
             *_quorum_lines(ask), f"Deadline: {when(ask.deadline)}.", "", marker(ask.id)]
    if not _is_call(ask):
        return "\n".join([*head, *tail])
    tail = ["", *hash_lines(ask), *tail]
    room = COMMENT_BUDGET - _size("\n".join([*head, *tail])) - ROOM_FOR_WORDS
    return "\n".join([*head, "", *input_lines(ask.call_input, ref, room), *tail])


def _warned(ask: AskRow) -> list[str]:
    """The mark of an approval that holds hidden or reordering characters, and a blank line."""
    hides = ask.kind == vocabulary.APPROVAL and approval_hides(ask.operation, ask.call_input)
    return [HIDDEN_LINE, ""] if hides else []


def _start_comment(ask: AskRow, ref: str, rooms: cut.Rooms) -> str:
    """A start: what would start in words, and how to approve or refuse it here."""
    return "\n".join([
        f"**Start approval needed** from an agent (ref `{ref}`)", "", *_warned(ask),
        f"**{starts.question(ask)}**", "", *starts.detail_lines(ask, rooms), "",
        *starts.how_to_answer(ask, ref, _who(ask, rooms.who)), "", *_quorum_lines(ask),
        *hash_lines(ask), "", f"Deadline: {when(ask.deadline)}.", "", marker(ask.id),
    ])


def hash_lines(ask: AskRow) -> list[str]:
    """An approval's identity, each hash named as what it is, as every surface shows them:
    `input_sha256` (of its canonical input) and `call_sha256` (of the whole call)."""
    lines = [f"- `input_sha256`: `{identity.input_sha256(ask.call_input)}`"]
    if ask.call_hash:
        lines.append(f"- `call_sha256`: `{ask.call_hash}`")
    return lines


def _who(ask: AskRow, room: int) -> str:
    """Who may answer here, each GitHub login a mention (the config names them, not an agent)."""
    logins = github_logins(_allowed(ask))
    if logins is None:
        return "Anyone on GitHub"
    named = ", ".join(f"@{login}" for login in logins)
    return named if _size(named) <= room else f"Any of the {len(logins)} people aye's config names"


def needed(ask: AskRow) -> int:
    """How many distinct people must approve (1 for a question or a plain approval)."""
    return (ask.approvals_needed or 1) if ask.kind == vocabulary.APPROVAL else 1


def _quorum_lines(ask: AskRow) -> list[str]:
    """For an approval that needs several people: how many, and who approved so far (named,
    not mentioned: each count edits the comment, and a mention there would notify again)."""
    n = needed(ask)
    if n <= 1:
        return []
    line = f"This needs {n} approvals from different people."
    if ask.approvers:
        names = ", ".join(_named(name) for name in ask.approvers)
        line += f" So far {len(ask.approvers)} of {n} approvals: {names}."
    return [line, ""]


def _named(answered_by: str) -> str:
    """A person in public words without a mention: a GitHub login in code."""
    kind, _, ident = answered_by.partition(":")
    if kind == GITHUB and LOGIN.match(ident):
        return f"`{ident}`"
    return who_answered(answered_by)


def _is_call(ask: AskRow) -> bool:
    return ask.kind == vocabulary.APPROVAL and bool(ask.operation)


def question(ask: AskRow) -> str:
    """An approval stores its operation; here it is worded as a question."""
    if _is_call(ask):
        return f"Approve {ask.operation}?"
    return ask.question


def _size(text: str) -> int:
    return len(text.encode())


def input_lines(call_input: Any, ref: str, room: int) -> list[str]:
    """The call's input as a code block of at most `room` bytes: whole, or as much as fits,
    saying plainly that it is cut, with the whole input's SHA-256 and where to read it."""
    shown = identity.input_shown(call_input, max(room, 0))
    seen = inert.visible(shown.text)
    code = _fit(seen, room)
    escaped = [ESCAPED] if seen != shown.text else []
    if shown.whole and code == seen:
        return ["Input:", "", inert.code_block(code, "json"), *escaped]
    return [
        "Input, **cut**: only its start is shown here.",
        "",
        inert.code_block(code, "json"),
        "",
        *escaped,
        f"**The input above is cut here.** The whole input's `input_sha256` (the SHA-256 of "
        f"its canonical form) is `{shown.sha256}`; read it whole with `aye show {ref}`.",
    ]


def _fit(code: str, room: int) -> str:
    """The longest start of `code` whose code block fits in `room` (a long backtick run in the
    text lengthens the fences)."""
    def size(n: int) -> int:
        return _size(inert.code_block(code[:n], "json"))

    if size(len(code)) <= room:
        return code
    low, high = 0, len(code)
    while low < high:
        middle = (low + high + 1) // 2
        if size(middle) <= room:
            low = middle
        else:
            high = middle - 1
    return code[:low]


def closed_comment(ask: AskRow, ref: str) -> str:
    """The question comment once the ask is closed: how, by whom, never a sensitive value."""
    if starts.is_start(ask):
        lines = [f"**Start approval** from an agent (ref `{ref}`): {closed_line(ask)}"
                 f"{starts.consequence(ask)}", "", f"**{starts.question(ask)}**"]
        return "\n".join([*lines, "", marker(ask.id)])
    title = "Approval" if ask.kind == vocabulary.APPROVAL else "Question"
    lines = [f"**{title}** from an agent (ref `{ref}`): {closed_line(ask)}", "",
             *cut.quoted(question(ask), cut.TIGHT.question, "question", ref)]
    return "\n".join([*lines, "", marker(ask.id)])


def closed_line(ask: AskRow) -> str:
    """How the ask ended (rules.ending), in public words."""
    by = who_answered(ask.answered_by)
    ended = rules.ending(ask)
    if ended == vocabulary.APPROVED and len(ask.approvers or []) > 1:
        by = ", ".join(who_answered(name) for name in ask.approvers or [])
    if ended == vocabulary.ANSWERED:
        return f"answered by {by}: **{_inline(shown_answer(ask))}**"
    words = {
        vocabulary.ANSWERED_PRIVATELY: f"answered by {by}.",
        vocabulary.APPROVED: f"approved by {by}.",
        vocabulary.APPROVAL_REFUSED: f"refused by {by}.",
        vocabulary.APPROVAL_TIMED_OUT: "expired with no answer.",
        vocabulary.EXPIRED: "expired with no answer.",
        vocabulary.WITHDRAWN: "withdrawn.",
    }
    return words.get(ended, "closed.")


def shown_answer(ask: AskRow) -> str:
    """The answer as people read it (core.domain.formats.plain): `red, blue`, `yes`, `ok`,
    `Region: eu, Nodes: 3`; a typed answer on one line, free text as it was written."""
    shown = formats.plain(ask, ask.answer_value) or ""
    if formats.format_of(ask) in (formats.TEXT, formats.CHOICE):
        return shown
    return " ".join(shown.split())


def who_answered(answered_by: str | None) -> str:
    """Shown in public: a GitHub login as a mention, never a Slack member id."""
    if not answered_by:
        return "someone"
    kind, _, ident = answered_by.partition(":")
    if kind == GITHUB and LOGIN.match(ident):
        return f"@{ident}"
    if kind == GITHUB:
        return inert.inline(ident) or "someone on GitHub"
    if kind == "slack":
        return "someone in Slack"
    if kind == "external":  # an external ask's verifier: a name from aye's config
        return f"{inert.code_span(ident)} (an outside system)"
    return "the operator"


def _inline(value: str) -> str:
    """A free-text answer on one line, cut short (the agent has it in full), inert."""
    lines = value.strip().splitlines() or [""]
    first = lines[0]
    if len(first) > INLINE_MAX:
        return inert.text(first[: INLINE_MAX - 1]) + "…"
    return inert.text(first) + (" …" if len(lines) > 1 else "")
