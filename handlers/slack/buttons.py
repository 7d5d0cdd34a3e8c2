"""aye's buttons on a question: what each carries, and the buttons of an ask by its format.
Pure, no I/O."""

from __future__ import annotations

from typing import Any

from core.app.ports import AskRow
from core.domain import formats, refs, vocabulary
from handlers.slack.text import clip

# What aye's buttons carry. Every action id starts with ACTION_PREFIX, so one catch-all
# listener can ack a press on any of them (an un-acked press shows the person an error).
ACTION_PREFIX = "aye_"
OPTION_ACTION = "aye_option_"  # + the option's 1-based number; value "<ask id>:<number>"
WORD_ACTION = "aye_word_"  # + a word of WORDS (confirm, ack); value "<ask id>:<word>"
ANSWER_ACTION = "aye_answer"  # text, multi, form: opens the answer modal; value "<ask id>"
REFUSE_ACTION = "aye_refuse"  # an approval's Refuse: opens the modal asking why; value "<ask id>"
# Step-up: a link to the ask in the web inbox, in place of Approve (Slack still sends a press).
INBOX_ACTION = "aye_inbox"
DEFAULT_INBOX = "http://127.0.0.1:8080/inbox"  # aye's own address, unless AYE_PUBLIC_URL says
BUTTONS_BLOCK = "aye_buttons"
BUTTON_MAX = 75  # Slack's limit on a button's text

STYLES = {vocabulary.APPROVE: "primary", vocabulary.REFUSE: "danger"}
LABELS = {vocabulary.APPROVE: "Approve", vocabulary.REFUSE: "Refuse"}
# The buttons of a confirm and an ack: (label, the word answered, style), per format.
WORDS = {
    formats.CONFIRM: (("Yes", "yes", "primary"), ("No", "no", None)),
    formats.ACK: (("Continue", "ok", "primary"),),
}


# A destructive ask (`danger`): its affirmative button is danger-styled and asks first. The
# dialog holds none of the agent's words (Slack's confirm texts are short and plain).
DANGER_CONFIRM: dict[str, Any] = {
    "title": {"type": "plain_text", "text": "Are you sure?"},
    "text": {"type": "plain_text", "text": "This ask is marked destructive: the agent will act "
             "on this answer. Go ahead?"},
    "confirm": {"type": "plain_text", "text": "Yes, go ahead"},
    "deny": {"type": "plain_text", "text": "Cancel"},
    "style": "danger",
}


def is_ask_id(text: str) -> bool:
    """Ask ids are 32 hex digits (uuid4().hex); anything else in a button is not aye's."""
    return len(text) == 32 and all(c in "0123456789abcdef" for c in text)


def option_value(ask: AskRow, number: int) -> str:
    return f"{ask.id}:{number}"


def parse_option_value(value: str) -> tuple[str, int] | None:
    """(ask id, 1-based option number) from a button's value, or None when it is not one."""
    ask_id, sep, number = value.partition(":")
    if not sep or not is_ask_id(ask_id) or not (number.isascii() and number.isdigit()):
        return None
    return ask_id, int(number)


def parse_word_value(value: str) -> tuple[str, str] | None:
    """(ask id, word) from a Yes / No / Continue button's value, or None when it is not one."""
    ask_id, sep, word = value.partition(":")
    known = {w for choices in WORDS.values() for _, w, _ in choices}
    if not sep or not is_ask_id(ask_id) or word not in known:
        return None
    return ask_id, word


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


def _approval_buttons(ask: AskRow, inbox: str) -> list[dict[str, Any]]:
    """Approve answers at once; Refuse opens a modal asking why (the reason is optional).
    Under step-up (the gate's sign_in_within) an approval counts only from the inbox, after a
    recent sign-in: "Approve in the inbox" links there instead, and Refuse stays."""
    options = ask.options or [vocabulary.APPROVE, vocabulary.REFUSE]
    approve = options.index(vocabulary.APPROVE) + 1 if vocabulary.APPROVE in options else 1
    first = _button(LABELS[vocabulary.APPROVE], f"{OPTION_ACTION}{approve}", option_value(ask, approve),
                    STYLES[vocabulary.APPROVE])
    if ask.sign_in_within is not None:
        first = _button("Approve in the inbox", INBOX_ACTION, ask.id, STYLES[vocabulary.APPROVE])
        first["url"] = f"{inbox}/{refs.ref(ask)}"
    return [first, _button(LABELS[vocabulary.REFUSE], REFUSE_ACTION, ask.id, STYLES[vocabulary.REFUSE])]


def button_elements(ask: AskRow, inbox: str = DEFAULT_INBOX) -> list[dict[str, Any]]:
    """What a person presses, by the ask's format: an approval's Approve / Refuse, a choice's
    options, a confirm's Yes / No, an ack's Continue, or "Answer" (a modal) for the rest.
    `inbox`: the web inbox's address, for a link to an ask there. A destructive ask's
    affirmative buttons are danger-styled with a confirm dialog (see `affirmative`)."""
    elements = _elements(ask, inbox)
    if ask.danger:
        for element in elements:
            if affirmative(element):
                element["style"] = "danger"
                if "url" not in element:  # a link opens the inbox, which asks there
                    element["confirm"] = DANGER_CONFIRM
            elif element.get("style") == "danger":
                del element["style"]  # one red button: the destructive one
    return elements


def affirmative(button: dict[str, Any]) -> bool:
    """Whether pressing goes ahead: Approve, Yes, Continue, an option, Answer (not Refuse, No)."""
    action, value = button["action_id"], str(button.get("value", ""))
    return action != REFUSE_ACTION and not value.endswith(":no")


def _elements(ask: AskRow, inbox: str) -> list[dict[str, Any]]:
    fmt = formats.format_of(ask)
    if ask.kind == vocabulary.APPROVAL:
        return _approval_buttons(ask, inbox)
    if fmt == formats.CHOICE:
        return [
            _button(option, f"{OPTION_ACTION}{number}", option_value(ask, number))
            for number, option in enumerate(ask.options or [], start=1)
        ]
    if fmt in WORDS:
        return [
            _button(label, f"{WORD_ACTION}{word}", f"{ask.id}:{word}", style)
            for label, word, style in WORDS[fmt]
        ]
    if fmt in (formats.TEXT, formats.MULTI, formats.FORM):
        return [_button("Answer", ANSWER_ACTION, ask.id, "primary")]
    return []  # a format no person answers here


def buttons(ask: AskRow, inbox: str = DEFAULT_INBOX) -> list[dict[str, Any]]:
    """The actions block of the ask's buttons (none when nobody answers it by pressing)."""
    elements = button_elements(ask, inbox)
    if not elements:
        return []
    return [{"type": "actions", "block_id": BUTTONS_BLOCK, "elements": elements}]
