"""Who may answer: `kind:id` responders, and whether a person matches a list of them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

KINDS = ("operator", "slack", "github")
OPERATOR_ID = "local"
ID_PATTERNS = {
    "operator": re.compile(r"^local$"),
    # Slack member IDs: U… for users, W… for Enterprise Grid users.
    "slack": re.compile(r"^[UW][A-Z0-9]{2,}$"),
    # GitHub logins: alphanumerics and single hyphens, at most 39 characters.
    "github": re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$"),
}


@dataclass(frozen=True, slots=True)
class Responder:
    """A person (`slack:U0123ABCD`) or anyone of a kind (`slack`, id None)."""

    kind: str
    id: str | None = None

    @classmethod
    def parse(cls, text: str) -> Responder:
        kind, sep, ident = text.strip().partition(":")
        if kind not in KINDS:
            raise ValueError(f"{text!r}: the kind must be one of {', '.join(KINDS)}")
        if not sep:
            if kind == "operator":
                return cls("operator", OPERATOR_ID)
            return cls(kind)
        if not ident:
            raise ValueError(f"{text!r}: the id after '{kind}:' is empty")
        if not ID_PATTERNS[kind].match(ident):
            raise ValueError(f"{text!r} is not a valid {kind} responder")
        return cls(kind, ident)

    def __str__(self) -> str:
        return self.kind if self.id is None else f"{self.kind}:{self.id}"

    def admits(self, person: Responder) -> bool:
        """True when `person` (always a concrete kind:id) is this responder or of its kind."""
        if self.kind != person.kind:
            return False
        if self.id is None:
            return True
        if self.kind == "github":  # GitHub logins are case-insensitive
            return self.id.lower() == (person.id or "").lower()
        return self.id == person.id


OPERATOR = Responder("operator", OPERATOR_ID)


def admitted(person: Responder, responders: Iterable[Responder]) -> bool:
    return any(r.admits(person) for r in responders)


def parse_all(texts: Iterable[str]) -> list[Responder]:
    return [Responder.parse(t) for t in texts]
