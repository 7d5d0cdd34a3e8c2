"""Pure rules about asks: refs, works, what counts as an answer. No I/O here."""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from typing import Any

QUESTION = "question"
APPROVAL = "approval"
OPEN, ANSWERED, EXPIRED, WITHDRAWN = "open", "answered", "expired", "withdrawn"
STATUSES = (OPEN, ANSWERED, EXPIRED, WITHDRAWN)
APPROVE, REFUSE = "approve", "refuse"
APPROVAL_OPTIONS = [APPROVE, REFUSE]
APPROVED, APPROVAL_REFUSED, APPROVAL_TIMED_OUT = "approved", "approval_refused", "approval_timed_out"
MAX_FREE_TEXT = 3000
REF_PREFIX = {QUESTION: "q", APPROVAL: "a"}
_BASE36 = string.digits + string.ascii_lowercase

# Why an answer was refused: the code (stable, in the API) and the words people see.
REASONS = {
    "not_a_responder": "you are not one of the people this is for",
    "invalid_answer": "that is not one of the options",
    "answered": "it was already answered",
    "expired": "it has expired",
    "withdrawn": "it was withdrawn",
    "sensitive": "this answer is sensitive and cannot be given on a public page",
    "no_open_ask": "there is no open question here",
    "ambiguous": "several questions are open here: say which, with its ref",
}


class InvalidAnswer(ValueError):
    """The text is not an answer to this ask."""


@dataclass(frozen=True, slots=True)
class Answer:
    value: str
    option: int | None  # 1-based, None for free text


def ref_for(seq: int, kind: str) -> str:
    """A short reference people can type: `q7`, `a1z`. At most 8 characters below 36**7 asks."""
    digits = ""
    n = seq
    while True:
        n, rem = divmod(n, 36)
        digits = _BASE36[rem] + digits
        if n == 0:
            break
    return REF_PREFIX[kind] + digits


def parse_ref(ref: str) -> tuple[str, int] | None:
    """(kind, seq) for a ref, or None when the text is not one."""
    ref = ref.strip().lower()
    if len(ref) < 2 or len(ref) > 8:
        return None
    kinds = {prefix: kind for kind, prefix in REF_PREFIX.items()}
    kind = kinds.get(ref[0])
    if kind is None or any(c not in _BASE36 for c in ref[1:]):
        return None
    return kind, int(ref[1:], 36)


def work_key(work: dict[str, Any] | None) -> str | None:
    """One string per conversation, so the open asks of a thread or issue are one index probe."""
    if not work:
        return None
    if "slack" in work:
        slack = work["slack"]
        return f"slack:{slack['channel']}:{slack['thread_ts']}"
    if "github" in work:
        gh = work["github"]
        return f"github:{gh['repo'].lower()}#{gh['number']}"
    return None


def canonical_json(value: Any) -> str:
    """Key order and whitespace do not matter: the same data gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def match_answer(options: list[str] | None, text: str) -> Answer:
    """An option's 1-based number or its text (case and surrounding space ignored), or free text."""
    cleaned = text.strip()
    if not cleaned:
        raise InvalidAnswer("the answer is empty")
    if options is None:
        if len(cleaned) > MAX_FREE_TEXT:
            raise InvalidAnswer(f"the answer is longer than {MAX_FREE_TEXT} characters")
        return Answer(cleaned, None)
    # An option's own text first: with options like "1", "3", "5", "3" means the option "3".
    folded = cleaned.casefold()
    for index, option in enumerate(options, start=1):
        if option.strip().casefold() == folded:
            return Answer(option, index)
    if cleaned.isdigit():
        number = int(cleaned)
        if 1 <= number <= len(options):
            return Answer(options[number - 1], number)
    raise InvalidAnswer("that is not one of the options")


def closed_reason(status: str) -> str:
    """The refusal code for answering an ask that is no longer open."""
    return status if status in (ANSWERED, EXPIRED, WITHDRAWN) else "closed"
