"""People: one human may have several identities (`slack:U0123ABCD`, `github:ada-l`,
`email:ada@example.com`), named once in the config's `[[people]]`. Quorum counts people, not
identities; `person:ada` among an ask's responders admits each of her identities; and the
author of a work is known by every identity of their person (no self-approval from another
surface). Pure: the directory is built from the config at start and handed to the decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core.domain import kinds
from core.domain.kinds import PERSON_KIND
from core.domain.responders import Responder

# A person's name, as `person:<name>`.
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"


@dataclass(frozen=True, slots=True)
class People:
    """Who is whom: each person's identities, and the person of each identity."""

    ids: Mapping[str, tuple[Responder, ...]] = field(default_factory=dict)
    _of: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, people: Iterable[tuple[str, Sequence[Responder]]]) -> People:
        """From `(name, identities)` pairs, already checked by the config (one person per
        identity, each specific)."""
        ids = {name: tuple(found) for name, found in people}
        return cls(ids, {identity_key(r): name for name, found in ids.items() for r in found})

    def person_of(self, who: Responder) -> str | None:
        """The name of the person `who` (a specific identity) is, if any."""
        if who.kind == PERSON_KIND:
            return who.id if who.id in self.ids else None
        return self._of.get(identity_key(who))

    def same(self, one: Responder, other: Responder) -> bool:
        """Whether two specific identities are one human: the same identity, or two of the
        same person's."""
        if identity_key(one) == identity_key(other):
            return True
        person = self.person_of(one)
        return person is not None and person == self.person_of(other)

    def expand(self, responders: Iterable[Responder]) -> list[Responder]:
        """`responders` with each `person:<name>` replaced by that person's identities (an
        unknown person admits nobody)."""
        out: list[Responder] = []
        for responder in responders:
            if responder.kind == PERSON_KIND:
                out += self.ids.get(responder.id or "", ())
            else:
                out.append(responder)
        return out


NOBODY = People()


def identity_key(who: Responder) -> str:
    """An identity as compared: folded where its kind's ids are case-insensitive (GitHub
    logins, email addresses)."""
    found = kinds.known(who.kind)
    if found is not None and found.ids_fold_case:
        return f"{who.kind}:{(who.id or '').lower()}"
    return str(who)
