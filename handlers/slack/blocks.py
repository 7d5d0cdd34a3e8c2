"""Block Kit payloads for aye's Slack messages: pure functions of an ask, no I/O.

The modals (answer forms, the reason for a refusal) are handlers.slack.modals'; pictures and
links beside the question are handlers.slack.media's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.app.ports import AskRow
from core.domain import formats, identity, rules, vocabulary
from core.domain.ask import is_external
from core.domain.visible import HIDDEN_WARNING, approval_hides
from handlers.slack import media, quorum, starts
from handlers.slack.buttons import DEFAULT_INBOX, buttons
from handlers.slack.text import cut_escaped, escape, fit, people, person, slack_date

# Message metadata marking aye's posts, found again before re-posting after a crash.
ASK_EVENT = "aye_ask"
ESCALATION_EVENT = "aye_escalation"
REMINDER_EVENT = "aye_reminder"

# Slack's limits: section text 3000, context element 3000 (10 elements), fallback text 40000
# (kept short: it is what notifications show). Buttons' are handlers.slack.buttons', modals'
# handlers.slack.modals'. Every section and context element is bounded where it is made
# (_section, _context), whatever went into it; the parts people write (an answer, a note)
# share one section's room, so the whole line fits (outcome_line).
SECTION_MAX = 3000
CONTEXT_MAX = 3000
CONTEXT_ELEMENTS_MAX = 10
FALLBACK_MAX = 300
VALUE_MAX = 2000  # an answer shown in a closed message or a reply
NOTE_MAX = 800
# A note's lines are quoted: each starts a new line with `>` (one more character a line).
QUOTE = "\n>"

# Above an approval whose operation or input holds a control or format character.
HIDDEN_LINE = f":warning: *Careful: {HIDDEN_WARNING}*, shown as codes such as `[U+202E]`."
# An approval's input is shown in one section between these.
INPUT_HEAD = "*Input:*\n```"
INPUT_TAIL = "```"


@dataclass(frozen=True, slots=True)
class Message:
    """What chat.postMessage / chat.update take: fallback text, blocks and metadata."""

    text: str
    blocks: list[dict[str, Any]]
    metadata: dict[str, Any]
    # The same blocks with each picture shown as a link: sent when Slack cannot fetch a picture
    # (None: the message has none).
    links_only: list[dict[str, Any]] | None = None


def ask_metadata(ask: AskRow, event: str = ASK_EVENT) -> dict[str, Any]:
    return {"event_type": event, "event_payload": {"ask_id": ask.id}}


def marked_ask_id(message: dict[str, Any], event: str = ASK_EVENT) -> str | None:
    """The ask id a Slack message carries in its metadata under `event`, if any."""
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != event:
        return None
    ask_id = (metadata.get("event_payload") or {}).get("ask_id")
    return ask_id if isinstance(ask_id, str) else None


# -- blocks ------------------------------------------------------------------------------------


def _section(text: str) -> dict[str, Any]:
    """A section of `text` (mrkdwn), held to Slack's 3,000 characters whatever it holds: over
    that Slack refuses the whole message (`invalid_blocks`) and a close would never show."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut_escaped(text, SECTION_MAX)}}


def _context(*parts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": cut_escaped(p, CONTEXT_MAX)}
                     for p in parts[:CONTEXT_ELEMENTS_MAX]],
    }


def _details(ask: AskRow, ref: str) -> list[dict[str, Any]]:
    """The context: for a start, what would start in words; for another approval, the
    operation and its input as a code block."""
    warned = [_section(HIDDEN_LINE)] if ask.kind == vocabulary.APPROVAL and approval_hides(
        ask.operation, ask.call_input) else []
    if starts.is_start(ask):
        return [*warned, *starts.details(ask, ref)]
    if ask.kind == vocabulary.APPROVAL and ask.operation:
        return [*warned, _section(f"*Operation:* `{fit(ask.operation, 200)}`"),
                *input_blocks(ask, ref), hashes(ask)]
    return [_section(fit(ask.context, SECTION_MAX))] if ask.context else []


def hashes(ask: AskRow) -> dict[str, Any]:
    """The approval's identity, each hash named as what it is: `input_sha256` (of the canonical
    input: what a person compares with what they expect) and `call_sha256` (of the whole
    canonical call: agent, operation, input and work)."""
    named = [f"input_sha256 `{identity.input_shown(ask.call_input, 0).sha256}`"]
    if ask.call_hash:
        named.append(f"call_sha256 `{ask.call_hash}`")
    return _context(*named)


def _escaped_prefix(text: str, budget: int) -> int:
    """How many characters of `text` fit in `budget` once escaped (an `&` takes five)."""
    used = 0
    for n, char in enumerate(text):
        used += len(escape(char))
        if used > budget:
            return n
    return len(text)


def input_blocks(ask: AskRow, ref: str) -> list[dict[str, Any]]:
    """An approval's input as canonical JSON in a code block, as much of it as one section
    holds once escaped; when that is not all of it, a second section says so plainly and
    gives its SHA-256 and where to read it whole. Never cut silently (identity.input_shown)."""
    budget = SECTION_MAX - len(INPUT_HEAD) - len(INPUT_TAIL)
    shown = identity.input_shown(ask.call_input, budget)
    if len(escape(shown.text)) > budget:
        shown = identity.input_shown(ask.call_input, _escaped_prefix(shown.text, budget))
    found = [_section(INPUT_HEAD + escape(shown.text) + INPUT_TAIL)]
    if not shown.whole:
        whole = len(identity.canonical(ask.call_input).decode())  # what input_shown cuts
        found.append(_section(
            f":warning: *The input is cut:* shown above are its first {len(shown.text):,} of "
            f"{whole:,} characters, and the rest runs too. Read it whole with `aye show {ref}` "
            f"before approving. The whole input's input_sha256 (the SHA-256 of its canonical "
            f"form): `{shown.sha256}`"
        ))
    return found


def question(ask: AskRow) -> str:
    """An approval stores its operation; here it is worded as a question (a start's as what
    would start: "May triage start on octo/app#7?")."""
    if starts.is_start(ask):
        return starts.question(ask)
    if ask.kind == vocabulary.APPROVAL and ask.operation:
        return f"Approve {ask.operation}?"
    return ask.question


def _title(ask: AskRow, suffix: str = "") -> dict[str, Any]:
    return _section("*" + fit(question(ask) + suffix, SECTION_MAX - 2) + "*")


def _fallback(ask: AskRow, ref: str, tail: str = "") -> str:
    """Notification text: the question and its ref only, never a sensitive ask's details.
    Escaped like the blocks: it is what notifications show, and mrkdwn too."""
    return fit(f"[{ref}] {question(ask)}", FALLBACK_MAX) + tail


def _message(
    ask: AskRow, text: str, metadata: dict[str, Any], build: Callable[[bool], list[dict[str, Any]]]
) -> Message:
    """A message of the blocks `build(pictures)` makes, and, when the ask has pictures, the
    same blocks with them as links (see handlers.slack.media)."""
    links_only = build(False) if media.has_pictures(ask.media) else None
    return Message(text, build(True), metadata, links_only)


def _details_and_media(ask: AskRow, ref: str, pictures: bool) -> list[dict[str, Any]]:
    return [*_details(ask, ref), *media.media_blocks(ask.media, pictures)]


def _quorum(ask: AskRow) -> list[dict[str, Any]]:
    """An approval that needs several people: how many, and who approved so far."""
    line = quorum.quorum_line(ask)
    return [_context(line)] if line else []


def waits_on(ask: AskRow) -> list[dict[str, Any]]:
    """An external ask, in place of buttons: the outside system it waits on (the verifier
    aye's config names), which answers through its signed door and never in Slack."""
    if not is_external(ask):
        return []
    return [_section(
        f":hourglass_flowing_sand: Waits on *{fit(ask.verifier or '?', 100)}*, an outside system; it "
        "answers through its signed door, so nobody answers it in Slack."
    )]


def question_message(ask: AskRow, ref: str, inbox: str = DEFAULT_INBOX) -> Message:
    """The message asking people: question, context, media, who it is for, deadline, ref,
    buttons (an external ask: what it waits on instead); `inbox`, the web inbox's address."""

    def build(pictures: bool) -> list[dict[str, Any]]:
        by = "Deadline" if is_external(ask) else "Answer by"
        who = _context(
            f"*For:* {people(ask.responders)}",
            f"*{by}:* {slack_date(ask.deadline)}",
            f"*Ref:* `{ref}`",
        )
        return [_title(ask), *_details_and_media(ask, ref, pictures), *waits_on(ask), who,
                *_quorum(ask), *buttons(ask, inbox)]

    tail = f" (waits on {fit(ask.verifier or '?', 100)})" if is_external(ask) else ""
    return _message(ask, _fallback(ask, ref, tail), ask_metadata(ask), build)


def _escalation_words(ask: AskRow, ref: str) -> tuple[dict[str, Any], str, str]:
    """The escalation's title, what happens when it runs out too, and its notification text."""
    if ask.kind == vocabulary.APPROVAL and not starts.is_start(ask):
        operation = ask.operation or ""
        title = _section(f"*Approve or refuse `{fit(operation, 200)}`? (escalated)*")
        text = fit(f"[{ref}] Approve or refuse {operation}?", FALLBACK_MAX) + " (escalated)"
        return title, "it will be refused", text
    ending = starts.escalation_ending(ask) if starts.is_start(ask) else "it will expire"
    return _title(ask, " (escalated)"), ending, _fallback(ask, ref, " (escalated)")


def escalation_message(ask: AskRow, ref: str, inbox: str = DEFAULT_INBOX) -> Message:
    """Posted again in the thread when nobody answered in time: to whom it now goes, until when."""
    title, ending, text = _escalation_words(ask, ref)
    widened = _section(
        f"Nobody answered in time. It now goes to {people(ask.escalate_responders)} as well; "
        f"unless someone answers by {slack_date(ask.deadline)}, {ending}."
    )
    who = _context(
        f"*For:* {people([*ask.responders, *(ask.escalate_responders or [])])}",
        f"*Ref:* `{ref}`",
    )

    def build(pictures: bool) -> list[dict[str, Any]]:
        return [title, widened, *_details_and_media(ask, ref, pictures), who, *_quorum(ask),
                *buttons(ask, inbox)]

    return _message(ask, text, ask_metadata(ask, ESCALATION_EVENT), build)


def _with_note(line: str, note: str | None, room: int = SECTION_MAX) -> str:
    """`line`, then a person's note below it as a quote, the two within `room` characters:
    the note gets what the line leaves (each of its lines quoted with `>` counts too), cut
    with an ellipsis when that is not all of it."""
    line = cut_escaped(line, room)
    if not note:
        return line
    left = room - len(line)
    if left <= len(QUOTE) + 1:
        return line
    quoted = QUOTE + fit(note, NOTE_MAX).replace("\n", QUOTE)
    return line + cut_escaped(quoted, left)


def shown_answer(ask: AskRow, limit: int = VALUE_MAX) -> str:
    """The answer as one escaped line (a list, yes, ok, a form's fields), never the stored
    JSON, in at most `limit` characters; for an ask whose answer may be shown (rules.ending)."""
    return fit(formats.plain(ask, ask.answer_value) or "", max(limit, 1))


def outcome_line(ask: AskRow) -> str:
    """How the ask closed, as people read it, in one section's room whatever the lengths of
    the answer and the note; a sensitive ask's value is never shown."""
    note = ask.answer_note
    started = starts.outcome_line(ask) if starts.is_start(ask) else None
    if started is not None:
        return _with_note(started, note)
    who = person(ask.answered_by) if ask.answered_by else "someone"
    ended = rules.ending(ask)
    if ended == vocabulary.ANSWERED:
        head = f":white_check_mark: Answered by {who}: *"
        value = shown_answer(ask, min(VALUE_MAX, SECTION_MAX - len(head) - 1))
        return _with_note(f"{head}{value}*", note)
    by = slack_date(ask.deadline)
    return {
        vocabulary.APPROVED: _with_note(
            f":white_check_mark: Approved by {quorum.approved_by(ask)}{ran(ask)}.", note),
        vocabulary.APPROVAL_REFUSED: _with_note(
            f":no_entry: Refused by {who}.{quorum.refused_after(ask)}", note),
        vocabulary.ANSWERED_PRIVATELY: f":white_check_mark: Answered by {who}. The answer is private.",
        vocabulary.APPROVAL_TIMED_OUT: f":hourglass: Refused: {quorum.too_few(ask)} by {by}.",
        vocabulary.EXPIRED: f":hourglass: Expired: nobody answered by {by}.",
        vocabulary.WITHDRAWN: ":leftwards_arrow_with_hook: Withdrawn: the answer is no longer needed.",
    }.get(ended, "")


def ran(ask: AskRow) -> str:
    """What ran after the approval was used, as its agent reported (empty before it did)."""
    if ask.run_outcome is None or ask.run_at is None:
        return ""
    if ask.run_outcome == "ran":
        return f" · ran at {slack_date(ask.run_at)}"
    if ask.run_outcome == "failed":
        return f" · failed: {fit(ask.run_detail or 'no detail', 200)}"
    return f" · not run ({slack_date(ask.run_at)})"


CLOSED_WORDS = {
    vocabulary.APPROVED: "approved",
    vocabulary.APPROVAL_REFUSED: "refused",
    vocabulary.ANSWERED: "answered",
    vocabulary.ANSWERED_PRIVATELY: "answered",
    vocabulary.APPROVAL_TIMED_OUT: "refused (timed out)",
    vocabulary.EXPIRED: "expired",
    vocabulary.WITHDRAWN: "withdrawn",
}


def _closed_words(ask: AskRow) -> str:
    """The short word for the notification text of a closed ask."""
    ended = rules.ending(ask)
    return CLOSED_WORDS.get(ended, ended)


def closed_message(ask: AskRow, ref: str, escalation: bool = False) -> Message:
    """The posted message once the ask is closed: how it ended and who answered, no buttons."""
    title = _title(ask, " (escalated)" if escalation else "")
    line = outcome_line(ask)  # none for an ask still open: Slack refuses an empty section
    ended = [*([_section(line)] if line else []), _context(f"*Ref:* `{ref}`")]

    def build(pictures: bool) -> list[dict[str, Any]]:
        return [title, *_details_and_media(ask, ref, pictures), *ended]

    metadata = ask_metadata(ask, ESCALATION_EVENT if escalation else ASK_EVENT)
    return _message(ask, _fallback(ask, ref, f" ({_closed_words(ask)})"), metadata, build)


def reminder_message(ask: AskRow, ref: str) -> Message:
    """Posted once in the ask's thread while it is still open at its reminder: the people it
    waits for (Slack people mentioned), its ref and deadline. No buttons: those stay on the
    ask's own message."""
    who = quorum.named(ask)
    todo = "approve or refuse it" if ask.kind == vocabulary.APPROVAL else "answer it"
    line = (
        f":bell: *Reminder* for {who}: `{ref}` ({fit(question(ask), 200)}) is still open. "
        f"Please {todo} by {slack_date(ask.deadline)}, with the buttons on its message above."
    )
    blocks = [_section(line), *_quorum(ask), _context(f"*Ref:* `{ref}`")]
    text = f"Reminder for {who}: " + _fallback(ask, ref)
    return Message(text, blocks, ask_metadata(ask, REMINDER_EVENT))
