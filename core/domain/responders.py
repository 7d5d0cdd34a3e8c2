"""Who may answer: `kind:id` responders, and whether a person matches a list of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.domain import kinds
from core.domain.kinds import EMAIL_KIND, OPERATOR_ID, OPERATOR_KIND, SPECIFIC_ONLY, SurfaceKind


@dataclass(frozen=True, slots=True)
class Responder:
    """A person (`slack:U0123ABCD`) or anyone of a kind (`slack`, id None)."""

    kind: str
    id: str | None = None

    @classmethod
    def parse(cls, text: str, known: Mapping[str, SurfaceKind] | None = None) -> Responder:
        """`kind:id` (or a bare kind) of the `known` kinds; without them, of the kinds in use
        (core.domain.kinds.use: where a validator or a row cannot be handed a Kinds)."""
        known = kinds.in_use() if known is None else known
        kind, sep, ident = text.strip().partition(":")
        found = known.get(kind)
        if found is None:
            raise ValueError(f"{text!r}: the kind must be one of {', '.join(known)}")
        if not sep:
            if kind == OPERATOR_KIND:
                return cls(OPERATOR_KIND, OPERATOR_ID)
            if kind in SPECIFIC_ONLY:
                raise ValueError(f"{text!r} alone is nobody in particular: name one, like {kind}:…")
            return cls(kind)
        if not ident:
            raise ValueError(f"{text!r}: the id after '{kind}:' is empty")
        if not found.id_pattern.match(ident):
            raise ValueError(f"{text!r} is not a valid {kind} responder")
        if kind == EMAIL_KIND:  # an address is one identity whatever its case
            ident = ident.lower()
        return cls(kind, ident)

    def __str__(self) -> str:
        return self.kind if self.id is None else f"{self.kind}:{self.id}"

    def admits(self, person: Responder) -> bool:
        """True when `person` (always a concrete kind:id) is this responder or of its kind."""
        if self.kind != person.kind:
            return False
        if self.id is None:
            return True
        found = kinds.known(self.kind)
        if found is not None and found.ids_fold_case:
            return self.id.lower() == (person.id or "").lower()
        return self.id == person.id


OPERATOR = Responder(OPERATOR_KIND, OPERATOR_ID)


def admitted(person: Responder, responders: Iterable[Responder]) -> bool:
    return any(r.admits(person) for r in responders)
