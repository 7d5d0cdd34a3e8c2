"""Which rule decides a gated call, in one order: a call no responder can reach is refused; a
remembered refusal of the same call answers it again; an unused approval of it lets it
through; an approval already pending is shared; else a new approval is asked for.

The use case (core/app/gating.py) fetches the facts and applies the decision; the order lives
here alone. A new rule (standing grants, between the remembered refusal and the single grant)
is one more field of `CallFacts` and one more clause of `decide_call`. `T` is however the use
case holds an ask: the decision hands back the one it names, untouched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

from core.domain.policy import Gate

T = TypeVar("T")


# Not slots: on Python 3.11 a frozen dataclass with slots cannot be built as `CallFacts[X](…)`.
@dataclass(frozen=True)
class CallFacts(Generic[T]):
    """What the use case found about one gated call (the same call: core.domain.identity)."""

    reachable: bool = True  # some responder of the gate can be reached for this work
    refusal: T | None = None  # its newest refusal within the gate's memory of refusals
    grant: T | None = None  # its newest approval not yet used, within the gate's timeout
    pending: T | None = None  # its approval still open


@dataclass(frozen=True, slots=True)
class Unreachable:
    """Refused: nobody who could answer it can be reached."""


@dataclass(frozen=True)
class Refuse(Generic[T]):
    """Refused again by a remembered refusal, so that asking again wears nobody down."""

    refusal: T


@dataclass(frozen=True)
class Allow(Generic[T]):
    """Let through by an approval, if this caller is the one to use it (the store decides)."""

    grant: T


@dataclass(frozen=True)
class Wait(Generic[T]):
    """The approval of this call is pending: share it."""

    pending: T


@dataclass(frozen=True, slots=True)
class Ask:
    """Nothing decides it yet: ask for a new approval."""


Decision: TypeAlias = Unreachable | Refuse[T] | Allow[T] | Wait[T] | Ask


def decide_call(gate: Gate, facts: CallFacts[T]) -> Decision[T]:
    """The first rule that decides the call, in the order above."""
    if not facts.reachable:
        return Unreachable()
    if facts.refusal is not None and gate.remembers > 0:
        return Refuse(facts.refusal)
    if facts.grant is not None:
        return Allow(facts.grant)
    if facts.pending is not None:
        return Wait(facts.pending)
    return Ask()
