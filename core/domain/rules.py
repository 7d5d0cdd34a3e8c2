"""Pure rules about asks: statuses, refs, works, what counts as an answer, how an ask ended.

No I/O here. Facts only: the words people read are the renderers' (ask_api/views.py, each
surface's own), except the refusal reasons, which the API and every surface share.
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

# A work's key and kind are its identity's (core.domain.identity); every module reads them here.
from core.domain import identity
from core.domain.identity import work_key as work_key
from core.domain.identity import work_kind as work_kind

QUESTION = "question"
APPROVAL = "approval"
OPEN, ANSWERED, EXPIRED, WITHDRAWN = "open", "answered", "expired", "withdrawn"
STATUSES = (OPEN, ANSWERED, EXPIRED, WITHDRAWN)
APPROVE, REFUSE = "approve", "refuse"
APPROVAL_OPTIONS = [APPROVE, REFUSE]
APPROVED, APPROVAL_REFUSED, APPROVAL_TIMED_OUT = "approved", "approval_refused", "approval_timed_out"
# How an ask ended, beyond its status: an answer nobody but the agent may see.
ANSWERED_PRIVATELY = "answered_privately"
MAX_FREE_TEXT = 3000
REF_PREFIX = {QUESTION: "q", APPROVAL: "a"}
_BASE36 = string.digits + string.ascii_lowercase
# Refs are decimal (`q7`, `a1043`) up to this seq, then `q0` and base 36 (`q05yc1s`): both fit 8
# characters below 36**6 asks, and neither reads like a word. Asks made before 0.4.0 keep the
# base-36 refs already posted (`qa` is ask 10), marked by the row's `ref_base36`.
_DECIMAL_BELOW = 10**7

# Why an answer was refused: the code (stable, in the API) and the words people see, the same
# words in the API's messages and on every surface.
REASONS = {
    "not_a_responder": "you are not one of the people this is for",
    "invalid_answer": "that answer does not fit the question",
    "answered": "it was already answered",
    "expired": "it has expired",
    "withdrawn": "it was withdrawn",
    "sensitive": "this answer is sensitive and cannot be given on a public page",
    "no_open_ask": "there is no open question here",
    "ambiguous": "several questions are open here: say which, with its ref",
    "already_approved": "you have already approved it; another person's approval is needed",
    "self_approval": "you opened this work, so someone else must approve it",
    "author_unknown": "aye could not check who opened this work, so it cannot take an approval "
                      "now; try again shortly",
    "sign_in_required": "this approval counts only from the web inbox, after a recent sign-in",
}


class AskFacts(Protocol):
    """What the rules read of an ask (a store row, or a test's stand-in)."""

    @property
    def seq(self) -> int | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def sensitive(self) -> bool: ...
    @property
    def erased(self) -> bool: ...
    @property
    def answer_value(self) -> str | None: ...
    @property
    def ref_base36(self) -> bool | None: ...


def ref_for(seq: int, kind: str, base36: bool = False) -> str:
    """A short reference people can type: `q7`, `a1043`; `base36` for an ask made before 0.4.0."""
    if base36:
        return REF_PREFIX[kind] + _base36(seq)
    if seq < _DECIMAL_BELOW:
        return REF_PREFIX[kind] + str(seq)
    return REF_PREFIX[kind] + "0" + _base36(seq)


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, rem = divmod(n, 36)
        digits = _BASE36[rem] + digits
        if n == 0:
            return digits


def ref(ask: AskFacts) -> str:
    """The ask's ref: a function of the ask alone."""
    return ref_for(ask.seq or 0, ask.kind, bool(ask.ref_base36))


class RefCandidate(NamedTuple):
    """An ask a ref may name: its seq, and whether its ref is the pre-0.4.0 base 36."""

    seq: int
    base36: bool


@dataclass(frozen=True, slots=True)
class ParsedRef:
    """What a typed ref names: its kind and the asks it may be (at most one of them has it)."""

    kind: str
    candidates: tuple[RefCandidate, ...]

    def names(self, ask: AskFacts) -> bool:
        return ask.kind == self.kind and any(
            ask.seq == c.seq and bool(ask.ref_base36) == c.base36 for c in self.candidates
        )


def parse_ref(text: str) -> ParsedRef | None:
    """The asks a ref may name, or None when the text is not one. A decimal ref (`q10`) and a
    pre-0.4.0 base-36 one (`q10` was ask 36) are told apart by the row, so both are candidates."""
    text = text.strip().lower()
    by_prefix = {prefix: kind for kind, prefix in REF_PREFIX.items()}
    kind, body = by_prefix.get(text[:1]), text[1:]
    if kind is None or not 1 <= len(body) <= 8 or any(c not in _BASE36 for c in body):
        return None
    if body[0] == "0" and len(body) > 1:  # `q0` and base 36, past the decimal refs
        seq = int(body[1:], 36)
        wide = body[1] != "0" and seq >= _DECIMAL_BELOW
        return ParsedRef(kind, (RefCandidate(seq, False),)) if wide else None
    if len(body) > 7:
        return None
    candidates = [RefCandidate(int(body, 36), True)]
    if body.isdigit() and int(body) < _DECIMAL_BELOW:
        candidates.append(RefCandidate(int(body), False))
    return ParsedRef(kind, tuple(candidates))


def canonical_json(value: Any) -> str:
    """Key order and whitespace do not matter: the same data gives the same text. For a
    question's body and an answer's text only: a call's identity, and the input an approval
    shows, are core.domain.identity's."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ShownInput:
    """An approval's input as a surface can show it: `text` (its canonical form, at most the
    surface's limit), whether that is all of it, and `sha256`, the input's `input_sha256`
    (core.domain.identity: the SHA-256 of exactly that canonical text), which every surface
    shows by that name, with where to read the input whole (`aye show REF`) when it cuts."""

    text: str
    whole: bool
    sha256: str


def input_shown(call_input: Any, limit: int) -> ShownInput:
    """As much of the input as fits in `limit` characters; never cut silently (see ShownInput)."""
    whole = identity.canonical(call_input)
    full, sha = whole.decode(), identity.sha256(whole)
    if len(full) <= limit:
        return ShownInput(full, True, sha)
    return ShownInput(full[:limit], False, sha)


def digest(value: Any) -> str:
    """For a question's body (its idempotency key's check); never a call's identity."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def closed_reason(status: str) -> str:
    """The refusal code for answering an ask that is no longer open."""
    return status if status in (ANSWERED, EXPIRED, WITHDRAWN) else "closed"


def ending(ask: AskFacts) -> str:
    """How the ask ended, the one place that decides it: `open`, `approved`,
    `approval_refused`, `approval_timed_out`, `answered`, `answered_privately` (sensitive,
    erased, or no value to show), `expired` or `withdrawn`. Renderers turn it into words."""
    if ask.status == OPEN:
        return OPEN
    if ask.kind == APPROVAL and ask.outcome in (APPROVED, APPROVAL_REFUSED, APPROVAL_TIMED_OUT):
        return ask.outcome
    if ask.status == ANSWERED:
        if ask.sensitive or ask.erased or ask.answer_value is None:
            return ANSWERED_PRIVATELY
        return ANSWERED
    return ask.status
