"""Block Kit payloads for aye's Slack messages and modal: pure functions of an ask, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.core import rules
from store.models import AskRow

# What aye's buttons carry. Every action id starts with ACTION_PREFIX, so one catch-all
# listener can ack a press on any of them (an un-acked press shows the person an error).
ACTION_PREFIX = "aye_"
OPTION_ACTION = "aye_option_"  # + the option's 1-based number; value "<ask id>:<number>"
ANSWER_ACTION = "aye_answer"  # free text: opens the modal; value "<ask id>"
BUTTONS_BLOCK = "aye_buttons"
MODAL_CALLBACK = "aye_answer"
ANSWER_BLOCK = "answer"
ANSWER_INPUT = "text"
# Message metadata marking aye's posts, found again before re-posting after a crash.
ASK_EVENT = "aye_ask"
ESCALATION_EVENT = "aye_escalation"

# Slack's limits: section text 3000, context element 3000 (10 elements), button text 75,
# modal title 24, fallback text 40000 (kept short: it is what notifications show).
SECTION_MAX = 3000
CONTEXT_MAX = 3000
BUTTON_MAX = 75
TITLE_MAX = 24
FALLBACK_MAX = 300
INPUT_MAX = rules.MAX_FREE_TEXT
PREVIEW_MAX = 2500  # the question shown above the modal's text field

STYLES = {rules.APPROVE: "primary", rules.REFUSE: "danger"}
LABELS = {rules.APPROVE: "Approve", rules.REFUSE: "Refuse"}
# An approval's input is shown in one section between these.
INPUT_HEAD = "*Input:*\n```"
INPUT_TAIL = "```"


@dataclass(frozen=True, slots=True)
class Message:
    """What chat.postMessage / chat.update take: fallback text, blocks and metadata."""

    text: str
    blocks: list[dict[str, Any]]
    metadata: dict[str, Any]


# -- text --------------------------------------------------------------------------------------


def escape(text: str) -> str:
    """Slack mrkdwn control characters: an agent's `<!channel>` stays text, not a ping."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fit(text: str, limit: int) -> str:
    """`text` escaped and cut to `limit` characters with an ellipsis, never inside an entity."""
    shown = escape(text)
    if len(shown) <= limit:
        return shown
    cut = shown[: limit - 1]
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + "…"


def clip(text: str, limit: int) -> str:
    """Plain text (no mrkdwn) cut to `limit` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_date(epoch: float) -> str:
    """A time each reader sees in their own zone, with a UTC fallback for old clients."""
    fallback = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(epoch)}^{{date_short_pretty}} at {{time}}|{fallback}>"


def person(responder: str) -> str:
    """A responder (`slack:U…`, `github:x`, `operator:local`, `slack`) as people read it."""
    kind, _, ident = responder.partition(":")
    if kind == "slack":
        return f"<@{ident}>" if ident else "anyone in Slack"
    if kind == "github":
        return f"{escape(ident)} on GitHub" if ident else "anyone on GitHub"
    if kind == "operator":
        return "the operator"
    return escape(responder)


def people(responders: list[str] | None) -> str:
    names = [person(r) for r in responders or []]
    return ", ".join(dict.fromkeys(names)) or "nobody"


def ask_metadata(ask: AskRow, event: str = ASK_EVENT) -> dict[str, Any]:
    return {"event_type": event, "event_payload": {"ask_id": ask.id}}


def marked_ask_id(message: dict[str, Any], event: str = ASK_EVENT) -> str | None:
    """The ask id a Slack message carries in its metadata under `event`, if any."""
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != event:
        return None
    ask_id = (metadata.get("event_payload") or {}).get("ask_id")
    return ask_id if isinstance(ask_id, str) else None


# -- buttons -----------------------------------------------------------------------------------


def is_ask_id(text: str) -> bool:
    """Ask ids are 32 hex digits (uuid4().hex); anything else in a button is not aye's."""
    return len(text) == 32 and all(c in "0123456789abcdef" for c in text)


def option_value(ask: AskRow, number: int) -> str:
    return f"{ask.id}:{number}"


def parse_option_value(value: str) -> tuple[str, int] | None:
    """(ask id, 1-based option number) from a button's value, or None when it is not one."""
    ask_id, sep, number = value.partition(":")
    if not sep or not is_ask_id(ask_id) or not number.isdigit():
        return None
    return ask_id, int(number)


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": clip(text, BUTTON_MAX), "emoji": True},
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def buttons(ask: AskRow) -> dict[str, Any]:
    """One button per option (approve/refuse styled for an approval), or "Answer" for free text."""
    if ask.options is None:
        elements = [_button("Answer", ANSWER_ACTION, ask.id, "primary")]
    else:
        approval = ask.kind == rules.APPROVAL
        elements = [
            _button(
                LABELS.get(option, option) if approval else option,
                f"{OPTION_ACTION}{number}",
                option_value(ask, number),
                STYLES.get(option) if approval else None,
            )
            for number, option in enumerate(ask.options, start=1)
        ]
    return {"type": "actions", "block_id": BUTTONS_BLOCK, "elements": elements}


# -- blocks ------------------------------------------------------------------------------------


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _context(*parts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": clip(p, CONTEXT_MAX)} for p in parts],
    }


def _details(ask: AskRow, ref: str) -> list[dict[str, Any]]:
    """The context: for an approval, the operation and its input as a code block."""
    if ask.kind == rules.APPROVAL and ask.operation:
        return [_section(f"*Operation:* `{fit(ask.operation, 200)}`"), *input_blocks(ask, ref)]
    return [_section(fit(ask.context, SECTION_MAX))] if ask.context else []


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
    gives its SHA-256 and where to read it whole. Never cut silently (rules.input_shown)."""
    budget = SECTION_MAX - len(INPUT_HEAD) - len(INPUT_TAIL)
    shown = rules.input_shown(ask.call_input, budget)
    if len(escape(shown.text)) > budget:
        shown = rules.input_shown(ask.call_input, _escaped_prefix(shown.text, budget))
    found = [_section(INPUT_HEAD + escape(shown.text) + INPUT_TAIL)]
    if not shown.whole:
        whole = len(rules.canonical_json(ask.call_input))
        found.append(_section(
            f":warning: *The input is cut:* shown above are its first {len(shown.text):,} of "
            f"{whole:,} characters, and the rest runs too. Read it whole with `aye show {ref}` "
            f"before approving. SHA-256 of the whole input (canonical JSON): `{shown.sha256}`"
        ))
    return found


def question(ask: AskRow) -> str:
    """An approval stores its operation; here it is worded as a question."""
    if ask.kind == rules.APPROVAL and ask.operation:
        return f"Approve {ask.operation}?"
    return ask.question


def _title(ask: AskRow, suffix: str = "") -> dict[str, Any]:
    return _section("*" + fit(question(ask) + suffix, SECTION_MAX - 2) + "*")


def _fallback(ask: AskRow, ref: str, tail: str = "") -> str:
    """Notification text: the question and its ref only, never a sensitive ask's details.
    Escaped like the blocks: it is what notifications show, and mrkdwn too."""
    return fit(f"[{ref}] {question(ask)}", FALLBACK_MAX) + tail


def question_message(ask: AskRow, ref: str) -> Message:
    """The message asking people: question, context, who it is for, deadline, ref, buttons."""
    blocks = [_title(ask), *_details(ask, ref)]
    blocks.append(
        _context(
            f"*For:* {people(ask.responders)}",
            f"*Answer by:* {slack_date(ask.deadline)}",
            f"*Ref:* `{ref}`",
        )
    )
    blocks.append(buttons(ask))
    return Message(_fallback(ask, ref), blocks, ask_metadata(ask))


def escalation_message(ask: AskRow, ref: str) -> Message:
    """Posted again in the thread when nobody answered in time: to whom it now goes, until when."""
    approval = ask.kind == rules.APPROVAL
    if approval:
        title = _section(
            f"*Approve or refuse `{fit(ask.operation or '', 200)}`? (escalated)*"
        )
        ending = "it will be refused"
    else:
        title = _title(ask, " (escalated)")
        ending = "it will expire"
    blocks = [
        title,
        _section(
            f"Nobody answered in time. It now goes to {people(ask.escalate_responders)} as well; "
            f"unless someone answers by {slack_date(ask.deadline)}, {ending}."
        ),
        *_details(ask, ref),
        _context(
            f"*For:* {people([*ask.responders, *(ask.escalate_responders or [])])}",
            f"*Ref:* `{ref}`",
        ),
        buttons(ask),
    ]
    if approval:
        text = fit(f"[{ref}] Approve or refuse {ask.operation}?", FALLBACK_MAX) + " (escalated)"
    else:
        text = _fallback(ask, ref, " (escalated)")
    return Message(text, blocks, ask_metadata(ask, ESCALATION_EVENT))


def outcome_line(ask: AskRow) -> str:
    """How the ask closed, as people read it; a sensitive ask's value is never shown."""
    who = person(ask.answered_by) if ask.answered_by else "someone"
    ended = rules.ending(ask)
    if ended == rules.ANSWERED:
        line = f":white_check_mark: Answered by {who}: *{fit(ask.answer_value or '', 2000)}*"
        if ask.answer_note:
            line += "\n>" + fit(ask.answer_note, 800).replace("\n", "\n>")
        return line
    by = slack_date(ask.deadline)
    return {
        rules.APPROVED: f":white_check_mark: Approved by {who}.",
        rules.APPROVAL_REFUSED: f":no_entry: Refused by {who}.",
        rules.ANSWERED_PRIVATELY: f":white_check_mark: Answered by {who}. The answer is private.",
        rules.APPROVAL_TIMED_OUT: f":hourglass: Refused: nobody approved it by {by}.",
        rules.EXPIRED: f":hourglass: Expired: nobody answered by {by}.",
        rules.WITHDRAWN: ":leftwards_arrow_with_hook: Withdrawn: the answer is no longer needed.",
    }.get(ended, "")


CLOSED_WORDS = {
    rules.APPROVED: "approved",
    rules.APPROVAL_REFUSED: "refused",
    rules.ANSWERED: "answered",
    rules.ANSWERED_PRIVATELY: "answered",
    rules.APPROVAL_TIMED_OUT: "refused (timed out)",
    rules.EXPIRED: "expired",
    rules.WITHDRAWN: "withdrawn",
}


def _closed_words(ask: AskRow) -> str:
    """The short word for the notification text of a closed ask."""
    ended = rules.ending(ask)
    return CLOSED_WORDS.get(ended, ended)


def closed_message(ask: AskRow, ref: str, escalation: bool = False) -> Message:
    """The posted message once the ask is closed: how it ended and who answered, no buttons."""
    title = _title(ask, " (escalated)" if escalation else "")
    blocks = [title, *_details(ask, ref), _section(outcome_line(ask)), _context(f"*Ref:* `{ref}`")]
    metadata = ask_metadata(ask, ESCALATION_EVENT if escalation else ASK_EVENT)
    return Message(_fallback(ask, ref, f" ({_closed_words(ask)})"), blocks, metadata)


def answer_modal(ask: AskRow, ref: str) -> dict[str, Any]:
    """The free-text answer form; `private_metadata` carries the ask id back on submission."""
    blocks: list[dict[str, Any]] = [_section("*" + fit(question(ask), PREVIEW_MAX) + "*")]
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": ANSWER_INPUT,
        "multiline": True,
        "max_length": INPUT_MAX,
    }
    field: dict[str, Any] = {
        "type": "input",
        "block_id": ANSWER_BLOCK,
        "label": {"type": "plain_text", "text": "Your answer"},
        "element": element,
        "optional": False,
    }
    if ask.sensitive:
        field["hint"] = {
            "type": "plain_text",
            "text": "This answer is private: only the agent that asked will see it.",
        }
    blocks.append(field)
    return {
        "type": "modal",
        "callback_id": MODAL_CALLBACK,
        "private_metadata": ask.id,
        "title": {"type": "plain_text", "text": clip(f"Answer {ref}", TITLE_MAX)},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def answer_text(view_state: dict[str, Any]) -> str:
    """The text typed in the modal, from a view's `state.values` ("" when absent)."""
    entry = (view_state.get(ANSWER_BLOCK) or {}).get(ANSWER_INPUT) or {}
    value = entry.get("value")
    return value if isinstance(value, str) else ""
