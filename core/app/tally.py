"""What the core and the delivery loop tell whoever counts (the process's metrics): each ask
created and closed, how late the clock acted, how each delivery to a surface ended. Called
after the change's commit, in this process only, so a count is never of something rolled back
nor of another process's work. The default counts nothing."""

from __future__ import annotations

from store.models import AskRow

# How one delivery of an outbox row to a surface ended (`Tally.delivered`).
OK = "ok"
RATE_LIMITED = "rate_limited"  # the far side's rate limit (a 429): back to the outbox until then
PACED = "paced"  # aye's own pacing (Slack: a post a second per channel): back to the outbox
ERROR = "error"  # failed: tried again with backoff
GAVE_UP = "gave_up"  # refused for good, or failing too long: a dead letter
NOT_RUNNING = "not_running"  # the surface is off in this process: left for one where it is on
RESULTS = (OK, RATE_LIMITED, PACED, ERROR, GAVE_UP, NOT_RUNNING)
# What the clock does (`Tally.fired`).
ACTIONS = ("expire", "escalate", "remind")


class Tally:
    def created(self, ask: AskRow) -> None:
        """`ask` was created by this process."""

    def closed(self, ask: AskRow, status: str, at: float) -> None:
        """This process closed `ask` with `status` (answered, expired, withdrawn) at `at`."""

    def fired(self, action: str, late_s: float) -> None:
        """The clock did `action` (expire, escalate, remind) `late_s` seconds after it was due."""

    def delivered(self, surface: str, result: str) -> None:
        """This process's delivery of an outbox row to `surface` ended with `result` (RESULTS)."""


class Tallies(Tally):
    """Tells every tally it was given (the process's metrics subscribe with `add`)."""

    def __init__(self) -> None:
        self._tallies: list[Tally] = []

    def add(self, tally: Tally) -> None:
        self._tallies.append(tally)

    def __contains__(self, tally: object) -> bool:
        return any(t is tally for t in self._tallies)

    def created(self, ask: AskRow) -> None:
        for t in self._tallies:
            t.created(ask)

    def closed(self, ask: AskRow, status: str, at: float) -> None:
        for t in self._tallies:
            t.closed(ask, status, at)

    def fired(self, action: str, late_s: float) -> None:
        for t in self._tallies:
            t.fired(action, late_s)

    def delivered(self, surface: str, result: str) -> None:
        for t in self._tallies:
            t.delivered(surface, result)
