"""What the use cases work with, built once by the composition root (bot/app.py) and never
written onto afterwards: the store (for reads), the unit of work (`change`, for every write),
the clock, the policy, the surfaces (`places`), what commits tell this process (`signals`), the
event stream, and the batchers of creates and of reads. Each use case (core/app/*.py) takes it
and reaches only what its docstring says; none holds state of its own but through here."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.app.batch import Batcher
from core.app.change import Changes
from core.app.keys import Keyring
from core.app.places import Places
from core.app.reads import Reads
from core.app.receipts import Sealer
from core.app.signals import Signals
from core.app.stream import EventHub
from core.app.tally import Tallies
from core.app.timing import Clock
from core.domain.people import NOBODY, People
from core.domain.policy import Defaults, Gate
from store.db import Store


@dataclass(frozen=True, eq=False)
class Parts:
    store: Store
    clock: Clock
    defaults: Defaults
    gates: list[Gate]
    places: Places
    signals: Signals
    tally: Tallies
    change: Changes
    stream: EventHub
    # Who is whom ([[people]]): quorum counts people, no-self-approval knows every identity.
    # The key receipts are signed with (core.app.keys), and its public keys.
    keys: Keyring
    people: People = NOBODY
    batcher: Batcher = field(init=False)
    reads: Reads = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "batcher", Batcher(self.store, self.change))
        object.__setattr__(self, "reads", self.change.reads)

    @classmethod
    def build(
        cls, store: Store, defaults: Defaults, gates: list[Gate] | None = None,
        clock: Clock | None = None, places: Places | None = None, signals: Signals | None = None,
        people: People = NOBODY, keys: Keyring | None = None,
    ) -> Parts:
        clock = clock or Clock()
        places = places if places is not None else Places()
        signals = signals or Signals()
        tally = Tallies()
        keys = keys or Keyring(store, now=clock.now)
        gates = list(gates or [])
        sealer = Sealer(keys, people, gates)  # decided approvals' receipts, signed as decided
        return cls(
            store=store, clock=clock, defaults=defaults, gates=gates, places=places,
            signals=signals, tally=tally,
            change=Changes(store, clock, signals, places, tally, sealer),
            stream=EventHub(store, clock, signals.events_poke), people=people, keys=keys,
        )
