"""The surfaces this process runs, by name: whom they reach, which outbox rows a change
writes for them, and what they can read of a work (its author, its kind) for a decision to
come. The core never calls a surface's service while deciding: the author and the kind are
read through these ports before the decision's transaction opens."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from core.app.ports import AuthorUnknown, KindUnknown, Surface
from core.domain import identity
from core.domain.responders import OPERATOR, Responder
from store.models import AskRow


class Places:
    def __init__(self) -> None:
        self._surfaces: dict[str, Surface] = {}
        # The kinds of identity people sign in to the web inbox as (slack, github, email):
        # someone of such a kind can answer there, whether or not their surface runs.
        self._signed_in: frozenset[str] = frozenset()

    def add(self, surface: Surface) -> None:
        self._surfaces[surface.name] = surface

    def get(self, name: str) -> Surface | None:
        return self._surfaces.get(name)

    def __getitem__(self, name: str) -> Surface:
        return self._surfaces[name]

    def remove(self, name: str) -> None:
        """The surface is off in this process from now on (its rows wait for one running it)."""
        del self._surfaces[name]

    def __contains__(self, name: object) -> bool:
        return name in self._surfaces

    def __iter__(self) -> Iterator[str]:
        return iter(self._surfaces)

    def __len__(self) -> int:
        return len(self._surfaces)

    def items(self) -> list[tuple[str, Surface]]:
        return list(self._surfaces.items())

    def values(self) -> list[Surface]:
        return list(self._surfaces.values())

    def signing_in(self, kinds: frozenset[str]) -> None:
        """People sign in to the web inbox as identities of these kinds."""
        self._signed_in = kinds

    def reachable(self, responders: Sequence[Responder], work: dict[str, Any] | None) -> bool:
        """Can any of `responders` be asked on a running surface, or answer in the web inbox
        signed in as themselves (the operator always can)?"""
        for responder in responders:
            if responder.kind == OPERATOR.kind or responder.kind in self._signed_in:
                return True
            if any(s.reaches(responder, work) for s in self._surfaces.values()):
                return True
        return False

    def outbox_rows(self, ask: AskRow, action: str, now: float) -> list[dict[str, Any]]:
        """An outbox row for each surface that wants `action` on `ask`."""
        return [{"ask_seq": ask.seq, "surface": name, "action": action, "payload": None,
                 "created_at": now, "due_at": now}
                for name, surface in self._surfaces.items() if surface.wants(ask, action)]

    async def author_of(self, work: dict[str, Any] | None) -> str | None:
        """Who opened `work`, read from the surface it belongs to (never from the agent);
        None for no work. AuthorUnknown when that surface is off or cannot say."""
        if not work:
            return None
        name = next(iter(work))
        source = getattr(self._surfaces.get(name), "author", None)
        if source is None:
            raise AuthorUnknown(f"the {name} surface is off or cannot read who opened a work")
        author = await source(work)
        return str(author) if author is not None else None

    async def kind_of(self, work: dict[str, Any]) -> str:
        """The work's kind as its surface reads it (ports.KindSource); KindUnknown when that
        surface is off, cannot tell kinds apart, or cannot read it now."""
        name = identity.work_surface(work)
        source = getattr(self._surfaces.get(name or ""), "work_kind", None)
        if source is None:
            raise KindUnknown(f"the {name} surface is off or cannot read a work's kind")
        kind = await source(work)
        if not isinstance(kind, str):
            raise KindUnknown(f"the {name} surface gave no kind")
        return kind
