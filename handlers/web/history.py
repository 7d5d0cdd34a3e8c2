"""An ask's history as sentences a person reads ("Outcome reported by agent deploy: ran"),
one per entry, with what is worth keeping beside it (a hash, a refused answer as given).

Every event kind aye writes has its own words here; a kind this module does not know yet is
still worded from its name and fields, and no entry ever shows `None`, `False` or a raw key.
Everything an agent or a person wrote is shown with its hidden characters as codes (and the
templates escape it all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.domain import identity, vocabulary
from core.domain.policy import START
from core.domain.visible import visible
from handlers.kit.cards import RUN_WORDS, Entry, moment, who

Fields = dict[str, Any]
Worded = tuple[str, list[tuple[str, str]]]

SURFACE_WORDS = {
    "web": "the web inbox", "slack": "Slack", "github": "GitHub", "email": "email",
    "api": "the API", "tui": "the terminal inbox", "cli": "the CLI", "mcp": "MCP",
    "external": "its signed door",
}
# What a surface was doing when it gave up (core.app.ports' outbox actions).
ACTION_WORDS = {
    "post": "posting it", "close": "showing how it closed", "escalate": "showing it again",
    "update": "updating it", "remind": "reminding", "ran": "showing what ran",
}
# A known kind with nothing more to say, and the first words of a kind not known here.
PLAIN_WORDS = {"reminded": "Reminded", "read": "Read by the agent"}
# Why an answer was not taken, said of whoever gave it (vocabulary.REASONS speaks to them).
REASON_WORDS = {
    "not_a_responder": "not one of the people this is for",
    "invalid_answer": "the answer does not fit the question",
    "answered": "it was already answered", "expired": "it had expired",
    "withdrawn": "it had been withdrawn",
    "sensitive": "a sensitive answer cannot be given on a public page",
    "no_open_ask": "there was no open question there",
    "ambiguous": "several questions were open there, and it named none",
    "already_approved": "they had already approved it; another person's approval is needed",
    "self_approval": "they opened this work, so someone else must approve it",
    "author_unknown": "aye could not check who opened this work",
    "sign_in_required": "this approval counts only from the web inbox, after a recent sign-in",
}
# Fields named as every surface names them (the hashes): shown under their own names.
NAMED = ("_sha256",)


def entries(history: list[dict[str, Any]], now: float, approval: bool = False) -> list[Entry]:
    """The history, oldest first, each entry a sentence and its remaining facts."""
    out = []
    for raw in history:
        fields = {k: v for k, v in raw.items() if k not in ("at", "event")}
        event = str(raw.get("event", ""))
        say = WORDING.get(event)
        words, details = say(fields, approval) if say else _unknown(event, fields)
        details += _facts(fields, now)  # whatever the wording left: named, never raw
        at = raw.get("at")
        when = moment(float(at), now) if isinstance(at, int | float) else moment(now, now)
        out.append(Entry(when, words, details))
    return out


# -- the words of each kind (each pops the fields it has put into words) ------------------


def _by(fields: Fields) -> str:
    """` by <who> on <surface>`, as far as the entry says."""
    by, surface = fields.pop("by", None), fields.pop("surface", None)
    said = f" by {who(str(by))}" if by else ""
    return said + (f" on {SURFACE_WORDS.get(str(surface), visible(str(surface)))}" if surface else "")


def _from(fields: Fields) -> str:
    return _by(fields).replace(" by ", " from ", 1)


def _why(fields: Fields) -> str:
    """Why an answer was not taken: the misfit's own words, else the reason's."""
    why, message = fields.pop("why", None), fields.pop("message", None)
    part = str(fields.pop("field", None) or "answer")  # its path (answer.count): not shown
    if message:
        # A form field's message starts with its title; any other is said of the answer,
        # as the page that refused it said it.
        return visible(str(message) if part.startswith("answer.") else f"the answer {message}")
    if not why:
        return "it was not taken"
    return REASON_WORDS.get(str(why)) or vocabulary.REASONS.get(str(why)) or _spoken(str(why)).lower()


def _created(fields: Fields, approval: bool) -> Worded:
    agent, operation = fields.pop("agent", None), fields.pop("operation", None)
    words = f"Asked by agent {visible(str(agent))}" if agent else "Asked"
    if operation == START:
        words += " to start"
    elif operation:
        words += f" to approve {visible(str(operation))}"
    return words, []


def _posted(fields: Fields, approval: bool) -> Worded:
    surface, where = fields.pop("surface", None), fields.pop("where", None)
    words = f"Shown on {SURFACE_WORDS.get(str(surface), visible(str(surface)))}" if surface else "Shown"
    return words + (f": {visible(str(where))}" if where else ""), []


def _undelivered(fields: Fields, approval: bool) -> Worded:
    surface, action = fields.pop("surface", None), fields.pop("action", None)
    words = "Could not be shown"
    if surface:
        words += f" on {SURFACE_WORDS.get(str(surface), visible(str(surface)))}"
    if action:
        words += f" ({ACTION_WORDS.get(str(action), _spoken(str(action)).lower())})"
    why = fields.pop("why", None)
    return words + (f": {visible(str(why))}" if why else ""), []


def _answered(fields: Fields, approval: bool) -> Worded:
    outcome = fields.pop("outcome", None)
    approvers = fields.pop("approvers", None)
    heads = {vocabulary.APPROVED: "Approved", vocabulary.APPROVAL_REFUSED: "Refused"}
    head = heads.get(str(outcome), "Answered")
    words = head + _by(fields)
    if isinstance(approvers, list) and len(approvers) > 1:
        words += f", the last of {len(approvers)} approvals: {', '.join(who(str(a)) for a in approvers)}"
    return words, []


def _approved(fields: Fields, approval: bool) -> Worded:
    count, needed = fields.pop("count", None), fields.pop("needed", None)
    words = "Approved" + _by(fields)
    if count is not None:
        words += f": {count} of {needed if needed is not None else '?'} approvals"
    return words, []


def _refused(fields: Fields, approval: bool) -> Worded:
    words = "Refused answer" + _from(fields)
    given = fields.pop("answer", None)
    return f"{words}: {_why(fields)}", ([("Given", visible(str(given)))] if given else [])


def _late(fields: Fields, approval: bool) -> Worded:
    return f"Late answer{_from(fields)}, not taken: {_why(fields)}", []


def _withdrawn(fields: Fields, approval: bool) -> Worded:
    return "Withdrawn" + _by(fields), []


def _escalated(fields: Fields, approval: bool) -> Worded:
    to, until = fields.pop("to", None), fields.pop("until", None)
    names = to if isinstance(to, list) else [to] if to else []
    words = "Escalated" + (f" to {', '.join(who(str(n)) for n in names)}" if names else "")
    if isinstance(until, int | float):
        words += f", until {moment(float(until), 0).absolute}"
    return words, []


def _expired(fields: Fields, approval: bool) -> Worded:
    if approval:
        return "Timed out: nobody approved it in time", []
    return "Expired: nobody answered in time", []


def _read(fields: Fields, approval: bool) -> Worded:
    if fields.pop("erased", False):
        return "Read by the agent; the sensitive answer was erased", []
    return "Read by the agent", []


def _used(fields: Fields, approval: bool) -> Worded:
    agent, use = fields.pop("agent", None), fields.pop("use", None)
    words = "Used" + (f" by agent {visible(str(agent))}" if agent else "")
    words += f" (use {use})" if use else ""
    return words + ": its call went through", []


def _outcome(fields: Fields, approval: bool) -> Worded:
    outcome, detail = fields.pop("outcome", None), fields.pop("detail", None)
    use, again = fields.pop("use", None), fields.pop("usable_again", False)
    by = fields.pop("by", None)
    words = "Outcome" + (f" of use {use}" if use else "") + " reported"
    words += f" by {who(str(by))}" if by else ""
    words += f": {RUN_WORDS.get(str(outcome), _spoken(str(outcome)).lower())}"
    words += f": {visible(str(detail))}" if detail else ""
    if again is True:
        words += "; the approval can be used once more"
    return words, []


def _plain(event: str) -> Callable[[Fields, bool], Worded]:
    def say(fields: Fields, approval: bool) -> Worded:
        return PLAIN_WORDS[event], []

    return say


WORDING: dict[str, Callable[[Fields, bool], Worded]] = {
    "created": _created, "posted": _posted, "undelivered": _undelivered,
    "answered": _answered, "approved": _approved, "refused": _refused, "late": _late,
    "withdrawn": _withdrawn, "escalated": _escalated, "expired": _expired, "read": _read,
    "used": _used, "outcome": _outcome, "reminded": _plain("reminded"),
}


# -- a kind not known here, and the facts left over ---------------------------------------


def _unknown(event: str, fields: Fields) -> Worded:
    """A kind added after this module: its name in words, who and where if it says."""
    return (_spoken(event) or "Changed") + _by(fields), []


def _spoken(key: str) -> str:
    """`usable_again` as `Usable again`."""
    words = key.replace("_", " ").replace(".", " ").strip()
    return words[:1].upper() + words[1:]


def _facts(fields: Fields, now: float) -> list[tuple[str, str]]:
    """The fields no wording took: each named in words (a hash by its own name), its value
    in words; an empty one (None, False, nothing) is left out."""
    out = []
    for key, value in fields.items():
        shown = _value(key, value, now)
        if shown:
            out.append((key if key.endswith(NAMED) else _spoken(key), shown))
    return out


def _value(key: str, value: Any, now: float) -> str:
    if value is None or value is False or value == "" or value == [] or value == {}:
        return ""
    if value is True:
        return "yes"
    if key in ("by", "to") or key.endswith("_by"):
        names = value if isinstance(value, list) else [value]
        return ", ".join(who(str(n)) for n in names)
    if (key == "until" or key.endswith("_at")) and isinstance(value, int | float):
        return moment(float(value), now).absolute
    if isinstance(value, list):
        return ", ".join(_value(key, v, now) or "none" for v in value)
    if isinstance(value, dict):
        return visible(identity.canonical_json(value))
    return visible(str(value))
