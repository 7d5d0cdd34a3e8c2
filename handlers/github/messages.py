"""The comments aye posts on an issue or pull request: a question, and how it closed (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core import rules
from bot.core.responders import Responder
from store.models import AskRow

from .parsing import ANSWER_COMMAND

MARKER = "<!-- aye:ask:{id} -->"
GITHUB = "github"
INLINE_MAX = 200
# An approval's input in the question comment, cut here (the agent and `aye show` have it whole).
INPUT_MAX = 2900


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


def question_comment(ask: AskRow, ref: str) -> str:
    """A new ask, with how to answer it here; the first line is never a command."""
    title = "Approval needed" if ask.kind == rules.APPROVAL else "Question"
    lines = [f"**{title}** from an agent (ref `{ref}`)", "", *_quoted(question(ask))]
    if context(ask):
        lines += ["", *_quoted(context(ask) or "")]
    if ask.options:
        lines += ["", *(f"{n}. {option}" for n, option in enumerate(ask.options, start=1))]
    lines += ["", *_how_to_answer(ask, ref), "", f"Deadline: {when(ask.deadline)}."]
    return "\n".join([*lines, "", marker(ask.id)])


def question(ask: AskRow) -> str:
    """An approval stores its operation; here it is worded as a question."""
    if ask.kind == rules.APPROVAL and ask.operation:
        return f"Approve {ask.operation}?"
    return ask.question


def context(ask: AskRow) -> str | None:
    if ask.kind == rules.APPROVAL and ask.operation:
        shown = rules.input_shown(ask.call_input, INPUT_MAX)
        return f"Input: {shown.text}" + ("" if shown.whole else "…")
    return ask.context


def _how_to_answer(ask: AskRow, ref: str) -> list[str]:
    if ask.sensitive:
        return [
            "This answer is sensitive: it cannot be given in a public comment. "
            "Answer it in Slack or with the `aye` CLI."
        ]
    if ask.options:
        first = ask.options[0]
        example = f"`{ANSWER_COMMAND} 1` or `{ANSWER_COMMAND} {first}`"
    else:
        example = f"`{ANSWER_COMMAND} <your answer>`"
    logins = github_logins(_allowed(ask))
    who = "Anyone on GitHub" if logins is None else ", ".join(f"@{login}" for login in logins)
    return [
        f"{who}: answer with a comment whose first line is {example} "
        f"(`{ANSWER_COMMAND} {ref} …` when several questions are open here). "
        "Lines after the first are passed on as a note.",
    ]


def closed_comment(ask: AskRow, ref: str) -> str:
    """The question comment once the ask is closed: how, by whom, never a sensitive value."""
    title = "Approval" if ask.kind == rules.APPROVAL else "Question"
    lines = [f"**{title}** from an agent (ref `{ref}`): {closed_line(ask)}", "",
             *_quoted(question(ask))]
    return "\n".join([*lines, "", marker(ask.id)])


def closed_line(ask: AskRow) -> str:
    """How the ask ended (rules.ending), in public words."""
    by = who_answered(ask.answered_by)
    ended = rules.ending(ask)
    if ended == rules.ANSWERED:
        return f"answered by {by}: **{_inline(ask.answer_value or '')}**"
    words = {
        rules.ANSWERED_PRIVATELY: f"answered by {by}.",
        rules.APPROVED: f"approved by {by}.",
        rules.APPROVAL_REFUSED: f"refused by {by}.",
        rules.APPROVAL_TIMED_OUT: "expired with no answer.",
        rules.EXPIRED: "expired with no answer.",
        rules.WITHDRAWN: "withdrawn.",
    }
    return words.get(ended, "closed.")


def who_answered(answered_by: str | None) -> str:
    """Shown in public: a GitHub login as a mention, never a Slack member id."""
    if not answered_by:
        return "someone"
    kind, _, ident = answered_by.partition(":")
    if kind == GITHUB and ident:
        return f"@{ident}"
    if kind == "slack":
        return "someone in Slack"
    return "the operator"


def _quoted(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in text.splitlines()]


def _inline(value: str) -> str:
    """A free-text answer on one line, cut short: the agent has it in full."""
    lines = value.strip().splitlines() or [""]
    first = lines[0]
    if len(first) > INLINE_MAX:
        return first[: INLINE_MAX - 1] + "…"
    return first + (" …" if len(lines) > 1 else "")
