"""The kinds of responder a surface brings (`slack:U…`, `github:login`), and the core's own.

The core names no surface: each surface's plug-in declares its kind, the id pattern of its
people, its work variant (where a conversation happens there) and its config section; the
composition root (bot.surfaces) makes one `Kinds` value of them and hands it down, and the
core looks them up in it. `operator` is the core's own kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

OPERATOR_KIND = "operator"
OPERATOR_ID = "local"
# An outside system answering an external ask through its signed door, by verifier name
# (`external:docsign`): the core's own, never a responder the config may list.
EXTERNAL_KIND = "external"
VERIFIER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# A person of the config's [[people]] (`person:ada`), and an email address (`email:ada@…`,
# lowercased: from a sign-in through the organisation's OpenID Connect provider, or a link
# mailed to it): the core's own kinds. Neither may stand bare as a responder: anyone with an
# address, or anyone at all, is nobody in particular.
PERSON_KIND = "person"
PERSON_NAME = re.compile(r"^[a-z0-9_-]{1,64}$")
EMAIL_KIND = "email"
EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
# Kinds that only ever name someone: a bare one is refused.
SPECIFIC_ONLY = (PERSON_KIND, EMAIL_KIND)


@dataclass(frozen=True, slots=True)
class SurfaceKind:
    """What the core needs to know of a surface, without knowing the surface."""

    name: str
    id_pattern: re.Pattern[str]
    # GitHub logins are case-insensitive; Slack member ids are not.
    ids_fold_case: bool = False
    # The `work` variant, e.g. {"github": {"repo": …, "number": …}}: its body's model, and the
    # part of the conversation key after "<name>:" (one index probe finds a work's open asks).
    work_model: type[BaseModel] | None = None
    work_key: Callable[[Mapping[str, Any]], str] | None = None
    # The work's kind for start gates (`github.issue`, `slack.thread`).
    work_kind: Callable[[Mapping[str, Any]], str] | None = None
    # The surface's section of the config file (`[slack]`), if it has one.
    config_model: type[BaseModel] | None = None


class Kinds(Mapping[str, SurfaceKind]):
    """The kinds one process knows, by name: the core's own and those its surfaces bring, in
    the order they were added. A value: built once in the composition root (bot.surfaces) and
    never changed; `adding` makes another. Equal (and hashable) by its kinds, so what is built
    from it (the API's request models) can be cached per Kinds."""

    __slots__ = ("_by_name",)

    def __init__(self, kinds: Iterable[SurfaceKind] = ()) -> None:
        by_name: dict[str, SurfaceKind] = {}
        for kind in kinds:
            by_name[kind.name] = kind  # the same name again replaces it, keeping its place
        self._by_name = by_name

    def __getitem__(self, name: str) -> SurfaceKind:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Kinds) and tuple(self.values()) == tuple(other.values())

    def __hash__(self) -> int:
        return hash(tuple(self.values()))

    def __repr__(self) -> str:
        return f"Kinds({', '.join(self)})"

    def adding(self, kinds: Iterable[SurfaceKind]) -> Kinds:
        """These kinds and the surfaces' `kinds`; a surface may not bring a core kind."""
        more = list(kinds)
        for kind in more:
            if kind.name in CORE_KINDS:
                raise ValueError(f"the {kind.name} kind is the core's own")
        return Kinds([*self.values(), *more])

    def known(self, name: str) -> SurfaceKind | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return list(self._by_name)

    def with_work(self) -> list[SurfaceKind]:
        """The kinds that have a work variant, in the order they were added."""
        return [k for k in self._by_name.values() if k.work_model is not None]


CORE_KINDS = (OPERATOR_KIND, EXTERNAL_KIND, PERSON_KIND, EMAIL_KIND)
CORE = Kinds([
    SurfaceKind(OPERATOR_KIND, re.compile(rf"^{OPERATOR_ID}$")),
    SurfaceKind(EXTERNAL_KIND, VERIFIER_NAME),
    SurfaceKind(PERSON_KIND, PERSON_NAME),
    SurfaceKind(EMAIL_KIND, EMAIL, ids_fold_case=True),
])
# The kinds in use, for what parses a responder or a work where no Kinds can be handed to it
# (pydantic's validators of the config and of requests, rows read back): the core's alone until
# the composition root hands the process's over (`use`, from bot.surfaces). Nothing fills it
# on import.
_KINDS: Mapping[str, SurfaceKind] = CORE


def use(kinds: Kinds) -> None:
    """Make `kinds` the ones in use: the composition root's, at start, before anything parses."""
    global _KINDS
    _KINDS = kinds


def in_use() -> Kinds:
    return _KINDS if isinstance(_KINDS, Kinds) else Kinds(_KINDS.values())


def known(name: str) -> SurfaceKind | None:
    return _KINDS.get(name)


def names() -> list[str]:
    return list(_KINDS)


def with_work() -> list[SurfaceKind]:
    """The kinds in use that have a work variant, in the order they were added."""
    return [k for k in _KINDS.values() if k.work_model is not None]
