"""An approval of a start (core.domain.ask.is_start) in words: which agent would start on which
work, and the title, links and trigger it gave, instead of an operation and its JSON. Pure, no
I/O.

Everything here but aye's own words is the agent's: escaped (text.fit), and each link made a
Slack link that nothing in its address can end early (media.safe_url).
"""

from __future__ import annotations

from typing import Any

from core.app.ports import AskRow
from core.domain import ask as domain_ask
from core.domain import identity, rules, vocabulary
from core.domain.ask import is_start as is_start  # the surfaces ask it of this module
from handlers.slack import media, quorum
from handlers.slack.settings import SURFACE
from handlers.slack.text import cut_escaped, fit, person, slack_date

# Each part's room once escaped: the section holding them takes 3,000 characters.
AGENT_MAX = 120
TITLE_MAX = 1000
TRIGGER_MAX = 1000
WORK_MAX = 300
# The links go in one context block (at most 10 elements of 3,000 characters): a heading and
# the API's 5 links, each cut to what a reader can take in.
LINKS_SHOWN = 9
CONTEXT_MAX = 3000
LABEL_MAX = 120
THIS_THREAD = "this thread"


def agent(ask: AskRow) -> str:
    """The agent that would start (as the start recorded it), unescaped."""
    return domain_ask.starter(ask)


def where(ask: AskRow) -> str:
    """The work in a few words, unescaped: `octo/app#7`, or this thread (a start on a Slack
    thread is posted in that thread)."""
    work = ask.work or {}
    if isinstance(work.get(SURFACE), dict):
        return THIS_THREAD
    github = work.get("github")
    if isinstance(github, dict):
        return f"{github.get('repo')}#{github.get('number')}"
    return identity.work_key(work) or "this work"


def question(ask: AskRow) -> str:
    """What the message asks, unescaped: `May triage start on octo/app#7?`."""
    return f"May {agent(ask)} start on {where(ask)}?"


def what(ask: AskRow) -> str:
    """The start as an object of a sentence, unescaped: `triage starting on octo/app#7`."""
    return f"{agent(ask)} starting on {where(ask)}"


def _work_words(ask: AskRow) -> str:
    """The work as a reader finds it, escaped: the kind, the issue or the thread's channel."""
    work = ask.work or {}
    thread = work.get(SURFACE)
    if isinstance(thread, dict):
        return f"this thread, in <#{fit(str(thread.get('channel')), 40)}>"
    github = work.get("github")
    if isinstance(github, dict):
        kind = "pull request" if github.get("type") == "pull" else "issue"
        return f"GitHub {kind} {fit(where(ask), WORK_MAX)}"
    return fit(where(ask), WORK_MAX)


def details(ask: AskRow, ref: str) -> list[dict[str, Any]]:
    """The agent, the work, the title and the trigger in one section; the links below it."""
    lines = [f"*Agent:* {fit(agent(ask), AGENT_MAX)}", f"*Work:* {_work_words(ask)}"]
    title, trigger = domain_ask.said(ask, "title"), domain_ask.said(ask, "trigger")
    lines.append(f"*Title:* {fit(title, TITLE_MAX)}" if title else "*Title:* none given")
    if trigger:
        lines.append(f"*Trigger:* {fit(trigger, TRIGGER_MAX)}")
    shown: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}}
    ]
    links = domain_ask.links(ask)
    if links:
        elements = ["*Links:*", *(link_text(link, ref) for link in links[:LINKS_SHOWN])]
        shown.append({"type": "context",
                      "elements": [{"type": "mrkdwn", "text": t} for t in elements]})
    return shown


def _label(safe: str) -> str:
    """What a link shows: its own (safe) address, cut short, never inside an entity."""
    return cut_escaped(safe, LABEL_MAX)


def link_text(url: str, ref: str) -> str:
    """One link as `<address|address>`: `|`, `<`, `>` and spaces in it percent-encoded, `&`
    escaped, so it can neither end the link early nor show one place and go to another. One
    that is not https, or too long to show, is said in words instead."""
    safe = media.safe_url(url)
    if safe is None:
        return f"{fit(url, LABEL_MAX)} (not an https:// address, so not linked)"
    linked = f":link: <{safe}|{_label(safe)}>"
    if len(linked) <= CONTEXT_MAX:
        return linked
    return f":link: {_label(safe)} (too long to show here: read it whole with `aye show {ref}`)"


def cancelled(ask: AskRow) -> str:
    return f"the work is cancelled for {fit(agent(ask), AGENT_MAX)}"


def outcome_line(ask: AskRow) -> str | None:
    """How the start was decided, in words; None for an ending said as for any approval."""
    ended = rules.ending(ask)
    if ended == vocabulary.APPROVED:
        return (f":white_check_mark: Start approved by {quorum.approved_by(ask)}: "
                f"{fit(agent(ask), AGENT_MAX)} may start.")
    if ended == vocabulary.APPROVAL_REFUSED:
        who = person(ask.answered_by) if ask.answered_by else "someone"
        return f":no_entry: Start refused by {who} — {cancelled(ask)}.{quorum.refused_after(ask)}"
    if ended == vocabulary.APPROVAL_TIMED_OUT:
        return (f":hourglass: Start refused: {quorum.too_few(ask)} by "
                f"{slack_date(ask.deadline)} — {cancelled(ask)}.")
    if ended == vocabulary.WITHDRAWN:
        return ":leftwards_arrow_with_hook: Withdrawn: the agent no longer asks to start."
    return None


def escalation_ending(ask: AskRow) -> str:
    """What happens when the escalation runs out too."""
    return f"the start will be refused and {cancelled(ask)}"
