"""Pure rules about asks: how an ask ended, and which refusal answering a closed one meets.

The vocabulary they speak is core/domain/vocabulary.py, refs are core/domain/refs.py, and the
hashing of a question's body and of an input as shown is core/domain/identity.py's. Their names
are re-exported here for the tests that still read them as `rules.X`; product code imports them
from where they live.
"""

from __future__ import annotations

from typing import Protocol

from core.domain.identity import ShownInput as ShownInput
from core.domain.identity import canonical_json as canonical_json
from core.domain.identity import digest as digest
from core.domain.identity import input_shown as input_shown
from core.domain.identity import work_key as work_key
from core.domain.identity import work_kind as work_kind
from core.domain.refs import REF_PREFIX as REF_PREFIX
from core.domain.refs import ParsedRef as ParsedRef
from core.domain.refs import RefCandidate as RefCandidate
from core.domain.refs import parse_ref as parse_ref
from core.domain.refs import ref as ref
from core.domain.refs import ref_for as ref_for
from core.domain.vocabulary import (
    ANSWERED,
    APPROVAL,
    APPROVAL_REFUSED,
    APPROVAL_TIMED_OUT,
    APPROVED,
    EXPIRED,
    OPEN,
    WITHDRAWN,
)
from core.domain.vocabulary import ANSWERED_PRIVATELY as ANSWERED_PRIVATELY
from core.domain.vocabulary import APPROVAL_OPTIONS as APPROVAL_OPTIONS
from core.domain.vocabulary import APPROVE as APPROVE
from core.domain.vocabulary import MAX_FREE_TEXT as MAX_FREE_TEXT
from core.domain.vocabulary import QUESTION as QUESTION
from core.domain.vocabulary import REASONS as REASONS
from core.domain.vocabulary import REFUSE as REFUSE
from core.domain.vocabulary import STATUSES as STATUSES

__all__ = [
    "ANSWERED",
    "ANSWERED_PRIVATELY",
    "APPROVAL",
    "APPROVAL_OPTIONS",
    "APPROVAL_REFUSED",
    "APPROVAL_TIMED_OUT",
    "APPROVE",
    "APPROVED",
    "EXPIRED",
    "MAX_FREE_TEXT",
    "OPEN",
    "QUESTION",
    "REASONS",
    "REFUSE",
    "REF_PREFIX",
    "STATUSES",
    "WITHDRAWN",
    "AskFacts",
    "ParsedRef",
    "RefCandidate",
    "ShownInput",
    "canonical_json",
    "closed_reason",
    "digest",
    "ending",
    "input_shown",
    "parse_ref",
    "ref",
    "ref_for",
    "work_key",
    "work_kind",
]


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
