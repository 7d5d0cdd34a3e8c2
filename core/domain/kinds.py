"""The kinds of responder a surface brings (`slack:U…`, `github:login`), registered by the surfaces.

The core names no surface: each surface registers its kind, the id pattern of its people, its
work variant (where a conversation happens there) and its config section, and the core looks
them up here. `operator` is the core's own kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
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


_KINDS: dict[str, SurfaceKind] = {
    OPERATOR_KIND: SurfaceKind(OPERATOR_KIND, re.compile(rf"^{OPERATOR_ID}$")),
    EXTERNAL_KIND: SurfaceKind(EXTERNAL_KIND, VERIFIER_NAME),
    PERSON_KIND: SurfaceKind(PERSON_KIND, PERSON_NAME),
    EMAIL_KIND: SurfaceKind(EMAIL_KIND, EMAIL, ids_fold_case=True),
}
CORE_KINDS = (OPERATOR_KIND, EXTERNAL_KIND, PERSON_KIND, EMAIL_KIND)


def register(kind: SurfaceKind) -> None:
    """Make a surface's kind known; registering the same name again replaces it."""
    if kind.name in CORE_KINDS:
        raise ValueError(f"the {kind.name} kind is the core's own")
    _KINDS[kind.name] = kind


def known(name: str) -> SurfaceKind | None:
    return _KINDS.get(name)


def names() -> list[str]:
    return list(_KINDS)


def with_work() -> list[SurfaceKind]:
    """The kinds that have a work variant, in registration order."""
    return [k for k in _KINDS.values() if k.work_model is not None]
