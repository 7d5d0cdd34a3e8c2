"""An approval of a start (core.domain.ask.is_start) on its issue or pull request, in words:
which agent would start, with the title, links and trigger it gave, and how to approve or refuse
it here (pure). Everything an agent wrote is inert (handlers.github.inert); each link is a plain
link whose text is its own address, with its host shown, as the media of a question are."""

from __future__ import annotations

from urllib.parse import urlsplit

from core.app.ports import AskRow
from core.domain import ask as domain_ask
from core.domain import rules, vocabulary
from core.domain.ask import is_start as is_start  # the surfaces ask it of this module

from . import cut
from .cut import Rooms
from .guide import destination
from .parsing import ANSWER_COMMAND

AGENT_ROOM = 400  # bytes: the config allows names of 100 characters
LINKS_SHOWN = 5  # the API's limit


def agent(ask: AskRow) -> str:
    """The agent that would start, inert."""
    return cut.inline(domain_ask.starter(ask), AGENT_ROOM)


def where(ask: AskRow) -> str:
    """The work: the comment is on it, so `this issue` or `this pull request`."""
    github = (ask.work or {}).get("github")
    if isinstance(github, dict):
        return "this pull request" if github.get("type") == "pull" else "this issue"
    return "this work"


def question(ask: AskRow) -> str:
    """What is asked, inert: `May triage start on this issue?`."""
    return f"May {agent(ask)} start on {where(ask)}?"


def detail_lines(ask: AskRow, rooms: Rooms) -> list[str]:
    """The title, the trigger and the links, each inert and within its room."""
    title, trigger = domain_ask.said(ask, "title"), domain_ask.said(ask, "trigger")
    lines = [f"- Title: {cut.inline(title, rooms.question)}" if title else "- Title: none given"]
    if trigger:
        lines.append(f"- Trigger: {cut.inline(trigger, rooms.context)}")
    links = domain_ask.links(ask)
    if links:
        lines += ["- Links:", *(f"  - {link_text(link, rooms)}" for link in links[:LINKS_SHOWN])]
    return lines


def link_text(url: str, rooms: Rooms) -> str:
    """A link whose text is its own address, inert (so the text cannot show one place and go
    to another), and its host; one that is not https, or too long, is not linked."""
    host = cut.inline(urlsplit(url).hostname or "?", rooms.host)
    shown = cut.inline(url, rooms.caption)
    target = destination(url)
    if target is None:
        return f"{shown} ({host}): not an https:// address, so not linked."
    if cut.size(target) > rooms.url:
        return f"{shown} ({host}): its address is too long to link here."
    return f"[{shown}]({target}) ({host})"


def how_to_answer(ask: AskRow, ref: str, who: str) -> list[str]:
    """For `who` (the people who may answer here): approve, or refuse with a reason."""
    return [
        f"{who}: answer with a comment whose first line is `{ANSWER_COMMAND} {vocabulary.APPROVE}` "
        f"or `{ANSWER_COMMAND} {vocabulary.REFUSE}`. To refuse, write the reason on the lines after "
        f"`{ANSWER_COMMAND} {vocabulary.REFUSE}`: the agent reads it. Refusing cancels the work for "
        f"{agent(ask)}. With several questions open here, name this one: "
        f"`{ANSWER_COMMAND} {ref} {vocabulary.APPROVE}`."
    ]


def consequence(ask: AskRow) -> str:
    """What the start's ending means for the work, after how it ended ("" while open)."""
    ended = rules.ending(ask)
    if ended == vocabulary.APPROVED:
        return f" {agent(ask)} may start."
    if ended in (vocabulary.APPROVAL_REFUSED, vocabulary.APPROVAL_TIMED_OUT):
        return f" The work is cancelled for {agent(ask)}."
    return ""
