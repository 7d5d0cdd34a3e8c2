"""Refs: the short names people type for an ask (`q7`, `a1043`), made and read back."""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from core.domain.vocabulary import APPROVAL, QUESTION

REF_PREFIX = {QUESTION: "q", APPROVAL: "a"}
_BASE36 = string.digits + string.ascii_lowercase
# Refs are decimal (`q7`, `a1043`) up to this seq, then `q0` and base 36 (`q05yc1s`): both fit 8
# characters below 36**6 asks, and neither reads like a word. Asks made before 0.4.0 keep the
# base-36 refs already posted (`qa` is ask 10), marked by the row's `ref_base36`.
_DECIMAL_BELOW = 10**7


class RefFacts(Protocol):
    """What a ref is made of: a store row, a domain view or a test's stand-in."""

    @property
    def seq(self) -> int | None: ...
    @property
    def kind(self) -> str: ...
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


def ref(ask: RefFacts) -> str:
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

    def names(self, ask: RefFacts) -> bool:
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
