"""A mail about an ask: a text part and an HTML part from Jinja2 templates (the HTML autoescaped:
everything an agent wrote is text), with one link per option, or one Answer link, to the
recipient's own page. Nothing in it loads from elsewhere: no images, no remote CSS, inline
styles only. Pure: the links' token is given."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from urllib.parse import quote

import jinja2

from core.app.ports import AskRow
from core.domain import formats, vocabulary
from core.domain.visible import cut_before_code, visible
from handlers.kit.cards import Card, card

SUBJECT_LIMIT = 120
BLANKS = re.compile(r"[ \t\r\n]+")
# Why this mail, in a line above the question.
PURPOSE_WORDS = {
    "post": "An agent asks you.",
    "escalate": "Nobody answered in time, so this now comes to you too.",
    "remind": "A reminder: this still waits for your answer.",
}
# The answer each option's link carries (?answer=…), by the ask's controls.
FIXED_OPTIONS = {
    "approval": [("approve", "Approve"), ("refuse", "Refuse")],
    formats.CONFIRM: [("yes", "Yes"), ("no", "No")],
    formats.ACK: [("continue", "Continue")],
}


@dataclass(frozen=True, slots=True)
class Link:
    words: str
    url: str
    danger: bool = False


def _environment(autoescape: bool) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("handlers.email", "templates"), autoescape=autoescape,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )


TEXT, HTML = _environment(False), _environment(True)


def options(shown: Card) -> list[tuple[str, str]]:
    """The answers one link each may carry: (value, words); none for text, multi and form."""
    if shown.control in FIXED_OPTIONS:
        return FIXED_OPTIONS[shown.control]
    if shown.control == formats.CHOICE:
        return [(str(i), option) for i, option in enumerate(shown.options, 1)]
    return []


def links(shown: Card, page: str, danger: bool) -> list[Link]:
    """One link per option, or one Answer link, to `page` (the recipient's /e/<token>)."""
    found = options(shown)
    if not found:
        return [Link("Answer", page)]
    # A destructive ask's affirmative answers: approve, Yes, Continue, any option chosen.
    def destructive(value: str) -> bool:
        return danger and (value in ("approve", "yes", "continue") or shown.control == formats.CHOICE)

    return [Link(words, f"{page}?answer={quote(value)}", destructive(value)) for value, words in found]


def subject(ask: AskRow) -> str:
    what = f"Approval needed: {ask.operation or ask.question}" if ask.kind == vocabulary.APPROVAL \
        else ask.question
    # One line: no header folding, no injection. Only plain blanks fold into a space (split()
    # would also swallow U+2028 and other separators); every hidden character shows as its code.
    line = visible(BLANKS.sub(" ", f"[aye] {what}").strip())
    return line if len(line) <= SUBJECT_LIMIT else cut_before_code(line[: SUBJECT_LIMIT - 1]) + "…"


def compose(
    ask: AskRow, action: str, recipient: str, mail_from: str, message_id: str, page: str,
    now: float,
) -> EmailMessage:
    # An approval's input whole up to the inbox list's limit, else its cut and input_sha256.
    shown = card(ask, now, whole_input=False)
    values = {"card": shown, "links": links(shown, page, bool(ask.danger)),
              "why": PURPOSE_WORDS.get(action, PURPOSE_WORDS["post"]), "recipient": recipient}
    message = EmailMessage()
    message["Subject"] = subject(ask)
    message["From"] = mail_from
    message["To"] = recipient
    message["Date"] = formatdate(now, usegmt=True)
    message["Message-ID"] = message_id
    # RFC 3834: a machine's mail; out-of-office replies are not sent back to it.
    message["Auto-Submitted"] = "auto-generated"
    message["X-Auto-Response-Suppress"] = "All"
    message.set_content(TEXT.get_template("mail.txt").render(values))
    message.add_alternative(HTML.get_template("mail.html").render(values), subtype="html")
    return message
