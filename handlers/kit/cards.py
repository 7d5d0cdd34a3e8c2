"""What a page shows of an ask (the inbox's, email's answer page): plain values the templates
lay out (the templates escape them all). Facts come from the core; the words are the inbox's own.

A sensitive ask's answer is never here: not its value, not its note (the operator never sees
it, as in the API's operator view).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.app.ports import AskRow
from core.domain import answering, external, formats, identity, refs, rules, vocabulary
from core.domain.ask import is_external
from core.domain.policy import START
from core.domain.responders import OPERATOR, admitted
from core.domain.visible import HIDDEN_WARNING, approval_hides, visible, visible_json
from handlers.kit.fields import form_fields

# Above an approval whose operation or input holds a control or format character.
HIDDEN_WORDS = f"Careful: {HIDDEN_WARNING}, shown as codes such as [U+202E]."
# How much of an approval's input (canonical JSON) a list item shows; the ask's own page
# shows it whole. Past this the list says it is cut and gives the SHA-256 of the whole.
LIST_INPUT_LIMIT = 2000
APPROVAL_CONTROL = "approval"
KIND_NAMES = {"operator": "the operator", "slack": "Slack", "github": "GitHub"}
# A closed approval's badge, by how it ended (rules.ending), in place of "Approval needed".
OUTCOME_BADGES = {
    vocabulary.APPROVED: "Approved", vocabulary.APPROVAL_REFUSED: "Refused",
    vocabulary.APPROVAL_TIMED_OUT: "Timed out", "expired": "Expired", "withdrawn": "Withdrawn",
}
# Checks a receipt with the Python client aye installs, run in aye's folder as the README's
# commands are (`.venv/bin/…`); the receipt and the keys' URL follow it, each quoted.
VERIFY = (".venv/bin/python -c 'import json, sys, urllib.request; "
          "from aye_client import verify_receipt; "
          "print(json.dumps(verify_receipt(sys.argv[1], "
          "json.load(urllib.request.urlopen(sys.argv[2]))), indent=2))'")
# What the agent reported ran after using an approval (POST /v1/calls/outcome).
RUN_WORDS = {"ran": "ran", "failed": "failed", "not_run": "not run"}
# An external ask's ticket state (core.domain.external.ticket_state) in words; never the ticket.
TICKET_WORDS = {
    external.WAITING: "Waiting: its door is open for the outside system's answer",
    external.USED: "Used: the outside system answered through it",
    external.DEAD: "Dead: the ask closed without it, and its door is shut",
}


@dataclass(frozen=True, slots=True)
class Moment:
    """A time as the page shows it: relative words, the absolute time and its ISO form."""

    iso: str
    absolute: str
    relative: str


@dataclass(frozen=True, slots=True)
class Media:
    kind: str
    url: str
    caption: str | None


@dataclass(frozen=True, slots=True)
class ShownInput:
    text: str
    whole: bool
    input_sha256: str  # of the canonical input, whatever text is shown (core.domain.identity)
    size: int


@dataclass(slots=True)
class Card:
    """One ask as a list item (and, with `history`, as its own page)."""

    ref: str
    kind: str
    status: str
    agent: str
    question: str
    context: str | None
    control: str  # the macro in controls.html that renders its controls
    options: list[str]
    sensitive: bool
    created: Moment
    deadline: Moment
    responders: list[str]
    answerable: bool
    work: str | None = None
    closed: Moment | None = None
    operation: str | None = None
    input: ShownInput | None = None
    call_sha256: str | None = None  # an approval's call identity (core.domain.identity)
    media: list[Media] = field(default_factory=list)
    pick: tuple[int, int] | None = None
    fields: list[Any] = field(default_factory=list)
    quorum: str | None = None
    escalation: str | None = None
    reminder: str | None = None
    ending: str | None = None
    note: str | None = None
    history: list[Entry] | None = None
    # An external ask: the outside system (verifier) it waits on, and its ticket's state.
    waits_on: str | None = None
    ticket: str | None = None
    # Destructive (`danger`): its affirmative control asks to confirm.
    danger: bool = False
    badge: str = "Approval needed"  # an approval's: by its outcome once closed
    hidden: str | None = None  # HIDDEN_WORDS, for an approval that holds hidden characters
    run: str | None = None  # what ran after the approval was used, as the agent reported it
    # A decided approval's signed receipt (its own page only), and the line that verifies it.
    receipt: str | None = None
    verify: str | None = None
    # What a refused answer's form held, by input name, shown again as typed (controls.html).
    typed: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Entry:
    at: Moment
    words: str
    details: list[tuple[str, str]]


def moment(ts: float, now: float) -> Moment:
    at = datetime.fromtimestamp(ts, UTC)
    iso = at.isoformat(timespec="seconds").replace("+00:00", "Z")
    return Moment(iso, at.strftime("%Y-%m-%d %H:%M UTC"), relative(ts, now))


def relative(ts: float, now: float) -> str:
    """`in 2 h`, `5 min ago`, `in 3 days`: the largest unit the span reaches, rounded."""
    delta = ts - now
    span = abs(delta)
    if span < 45:
        return "in under a minute" if delta > 0 else "just now"
    for size, one, many in ((86400, "day", "days"), (3600, "h", "h"), (60, "min", "min")):
        if span >= size * 0.95 or size == 60:
            count = max(1, round(span / size))
            amount = f"{count} {one if count == 1 else many}"
            break
    return f"in {amount}" if delta > 0 else f"{amount} ago"


def who(responder: str) -> str:
    """`slack:U0123` as `Slack U0123`, `github` as `anyone on GitHub`, the operator as such,
    `external:docsign` as `docsign (an outside system)`."""
    kind, _, ident = responder.partition(":")
    name = KIND_NAMES.get(kind, kind)
    if kind == "operator":
        return name
    if kind == "external":
        return f"{ident} (an outside system)"
    if not ident:
        return f"anyone on {name}"
    return f"{name} @{ident}" if kind == "github" else f"{name} {ident}"


def where(work_key: str | None) -> str | None:
    """The work an ask is on, as `GitHub octo/app#42` or `Slack C0123ABCD/1700000000.000100`."""
    if not work_key:
        return None
    kind, _, rest = work_key.partition(":")
    return f"{KIND_NAMES.get(kind, kind)} {visible(rest)}"


def shown_input(call_input: Any, limit: int | None) -> ShownInput:
    """An approval's input: whole (pretty) when it fits `limit` (None: always), else the cut
    of its canonical form; with its `input_sha256` either way. Hidden characters as codes."""
    whole = identity.input_shown(call_input, 10**9)
    if limit is None or len(whole.text) <= limit:
        pretty = visible_json(call_input, indent=2, sort_keys=True)
        return ShownInput(pretty, True, whole.sha256, len(whole.text))
    cut = identity.input_shown(call_input, limit)
    return ShownInput(visible(cut.text), False, cut.sha256, len(whole.text))


def card(ask: AskRow, now: float, whole_input: bool = False) -> Card:
    approval = ask.kind == vocabulary.APPROVAL
    fmt = formats.format_of(ask)
    shown = Card(
        ref=refs.ref(ask), kind=ask.kind, status=ask.status, agent=ask.agent,
        question=visible(ask.question, multiline=True),
        context=None if approval or not ask.context else visible(ask.context, multiline=True),
        control=APPROVAL_CONTROL if approval else fmt,
        options=[visible(o) for o in ask.options or []], sensitive=bool(ask.sensitive),
        created=moment(ask.created_at, now), deadline=moment(ask.deadline, now),
        responders=[who(r) for r in ask.responders],
        answerable=ask.status == vocabulary.OPEN and _operator_may(ask),
        media=_media(ask.media), work=where(ask.work_key),
    )
    shown.danger = bool(ask.danger)
    if approval:
        if ask.status != vocabulary.OPEN:
            shown.badge = OUTCOME_BADGES.get(rules.ending(ask), shown.badge)
        shown.run = run_words(ask)
        shown.operation = visible(ask.operation or ask.question)
        shown.hidden = HIDDEN_WORDS if approval_hides(ask.operation, ask.call_input) else None
        shown.input = shown_input(ask.call_input, None if whole_input else LIST_INPUT_LIMIT)
        shown.call_sha256 = ask.call_hash
        shown.quorum = _quorum(ask)
    if fmt == formats.MULTI and not approval:
        shown.pick = formats.bounds(ask)
    if fmt == formats.FORM and not approval:
        shown.fields = form_fields(ask.form_schema or {}, shown.ref)
    if is_external(ask):
        shown.waits_on = ask.verifier
        shown.ticket = TICKET_WORDS.get(external.ticket_state(ask) or "")
    shown.escalation = _escalation(ask, now)
    shown.reminder = _reminder(ask, now)
    if ask.status != vocabulary.OPEN:
        shown.ending = ending(ask)
        shown.closed = moment(ask.closed_at, now) if ask.closed_at is not None else None
        if not ask.sensitive and ask.answer_note:
            shown.note = ask.answer_note
    return shown


def heading(ask: AskRow) -> str:
    """The ask's own page is headed by its question: an approval's in words."""
    if ask.kind != vocabulary.APPROVAL:
        return visible(ask.question, multiline=True)
    if ask.operation == START:
        return f"May {ask.agent} start on {where(ask.work_key) or 'this work'}?"
    return f"Approve {visible(ask.operation or ask.question)}?"


def run_words(ask: AskRow) -> str | None:
    """`ran 12:03 UTC`, `failed: <detail>`, `not run`: what the agent said ran (its detail is
    the agent's text, escaped by the templates like all of it)."""
    said = RUN_WORDS.get(ask.run_outcome or "")
    if said is None:
        return None
    if ask.run_detail:
        return f"{said}: {visible(ask.run_detail)}"
    at = datetime.fromtimestamp(ask.run_at, UTC).strftime(" %H:%M UTC") if ask.run_at else ""
    return f"{said}{at}"


def verify_command(receipt: str, keys_url: str) -> str:
    """One shell line that checks `receipt` against the public keys at `keys_url` with the
    Python client aye installs, printing its claims (or BadReceipt)."""
    return f"{VERIFY} {shlex.quote(receipt)} {shlex.quote(keys_url)}"


def _operator_may(ask: AskRow) -> bool:
    try:
        return admitted(OPERATOR, answering.allowed(ask))
    except ValueError:  # a responder of a kind this process does not run: not the operator's
        return False


def _media(media: list[dict[str, Any]] | None) -> list[Media]:
    found = []
    for item in media or []:
        url = item.get("url")
        # The API takes only https:// URLs; checked again, so no other scheme is ever a link.
        if isinstance(url, str) and url.startswith("https://"):
            caption = item.get("caption")
            found.append(Media(str(item.get("kind", "link")), visible(url),
                               visible(str(caption), multiline=True) if caption else None))
    return found


def _quorum(ask: AskRow) -> str | None:
    needed = ask.approvals_needed or 1
    if needed <= 1:
        return None
    approvers = list(ask.approvers or [])
    count = f"{len(approvers)} of {needed} approvals"
    return f"{count}: {', '.join(who(a) for a in approvers)}" if approvers else f"{count} so far"


def _escalation(ask: AskRow, now: float) -> str | None:
    if not ask.escalate_responders:
        return None
    wider = ", ".join(who(r) for r in ask.escalate_responders)
    if ask.escalated_at is not None:
        return f"Escalated {relative(ask.escalated_at, now)} to {wider}"
    if ask.status == vocabulary.OPEN and ask.escalate_at is not None:
        return f"Escalates {relative(ask.escalate_at, now)} to {wider}"
    return None


def _reminder(ask: AskRow, now: float) -> str | None:
    if ask.reminded_at is not None:
        return f"Reminded {relative(ask.reminded_at, now)}"
    if ask.status == vocabulary.OPEN and ask.remind_at is not None:
        return f"Reminder {relative(ask.remind_at, now)}"
    return None


def ending(ask: AskRow) -> str:
    """How a closed ask ended, in words; never a sensitive value."""
    how = rules.ending(ask)
    by = who(ask.answered_by) if ask.answered_by else "someone"
    if how == vocabulary.APPROVED:
        return f"Approved by {by}"
    if how == vocabulary.APPROVAL_REFUSED:
        return f"Refused by {by}"
    if how == vocabulary.APPROVAL_TIMED_OUT:
        return "Timed out: nobody approved it in time"
    if how == vocabulary.ANSWERED:
        answer = visible(formats.plain(ask, ask.answer_value) or "", multiline=True)
        return f"Answered by {by}: {answer}"
    if how == vocabulary.ANSWERED_PRIVATELY:
        return f"Answered by {by} (the answer is sensitive and is not shown)"
    return {"expired": "Expired: nobody answered in time", "withdrawn": "Withdrawn"}.get(how, how)


def answered_words(ask: AskRow) -> str:
    """The outcome line after the operator's answer was taken."""
    if ask.kind == vocabulary.APPROVAL and ask.status == vocabulary.OPEN:
        return f"Approved: {_quorum(ask) or 'counted'}; the approval waits for more"
    if ask.sensitive:
        return "Answered (the answer is sensitive and is not shown)"
    if ask.kind == vocabulary.APPROVAL:
        return "Answered: approved" if ask.outcome == vocabulary.APPROVED else "Answered: refused"
    return f"Answered: {visible(formats.plain(ask, ask.answer_value) or '', multiline=True)}"
