"""An approval's quorum and reminder in words: how many approvals it needs, who approved so far,
and whom a reminder names. Pure, no I/O."""

from __future__ import annotations

from core.app.ports import AskRow
from core.domain import vocabulary
from handlers.slack.settings import SURFACE
from handlers.slack.text import people, person

# A bare `slack` responder mentions nobody in a reminder: anyone in the thread may answer.
ANYONE_HERE = "anyone here"
# A reminder names at most this many people (Slack's section holds 3,000 characters).
MOST_NAMED = 30


def needed(ask: AskRow) -> int:
    """How many distinct people must approve (1 for a question or a plain approval)."""
    return (ask.approvals_needed or 1) if ask.kind == vocabulary.APPROVAL else 1


def quorum_line(ask: AskRow) -> str | None:
    """For an approval that needs several people: how many, and who approved so far ("1 of 2
    approvals: <@U…>"); None for one that one person decides."""
    n = needed(ask)
    if n <= 1:
        return None
    line = f":busts_in_silhouette: This needs {n} approvals from different people."
    if ask.approvers:
        line += f" So far {len(ask.approvers)} of {n} approvals: {people(ask.approvers)}."
    return line


def approved_by(ask: AskRow) -> str:
    """Who approved a closed approval: everyone of its quorum, or the one who answered."""
    if ask.approvers and len(ask.approvers) > 1:
        return people(ask.approvers)
    return person(ask.answered_by) if ask.answered_by else "someone"


def refused_after(ask: AskRow) -> str:
    """For an approval refused after some of its quorum approved: who had approved."""
    if needed(ask) <= 1 or not ask.approvers:
        return ""
    return f" It had {len(ask.approvers)} of {needed(ask)} approvals: {people(ask.approvers)}."


def too_few(ask: AskRow) -> str:
    """Why a timed-out approval was refused: nobody approved it, or too few did."""
    if needed(ask) <= 1 or not ask.approvers:
        return "nobody approved it"
    return (f"only {len(ask.approvers)} of {needed(ask)} approvals "
            f"({people(ask.approvers)}) came")


def counted_reply(ask: AskRow, ref: str) -> str:
    """To the person whose approval counted towards a quorum not yet reached."""
    n, count = needed(ask), len(ask.approvers or [])
    more = max(n - count, 1)
    rest = "1 more approval is" if more == 1 else f"{more} more approvals are"
    return (f"Your approval of `{ref}` was counted: {count} of {n}. {rest} needed, "
            f"from other people.")


def reminded(ask: AskRow) -> list[str]:
    """Whom a reminder names: the ask's responders (an escalated ask's wider ones too) who have
    not approved yet, Slack people as mentions; a bare `slack` is anyone in the thread."""
    names = [*ask.responders]
    if ask.escalated_at is not None:
        names += ask.escalate_responders or []
    done = {name.lower() for name in ask.approvers or []}
    shown: list[str] = []
    for name in names:
        if name.lower() in done:
            continue
        word = ANYONE_HERE if name == SURFACE else person(name)
        if word not in shown:
            shown.append(word)
    return shown or [ANYONE_HERE]


def named(ask: AskRow) -> str:
    """The people a reminder names, as one line: at most MOST_NAMED, then how many more."""
    names = reminded(ask)
    if len(names) <= MOST_NAMED:
        return ", ".join(names)
    return ", ".join(names[:MOST_NAMED]) + f" and {len(names) - MOST_NAMED} more"
