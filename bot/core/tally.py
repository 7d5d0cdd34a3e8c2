"""What the core tells whoever counts (the process's metrics): each ask created and closed,
and how late the clock acted. Called after the change's commit, in this process only, so a
count is never of something rolled back. The default counts nothing."""

from __future__ import annotations

from store.models import AskRow


class Tally:
    def created(self, ask: AskRow) -> None:
        """`ask` was created by this process."""

    def closed(self, ask: AskRow, status: str, at: float) -> None:
        """This process closed `ask` with `status` (answered, expired, withdrawn) at `at`."""

    def fired(self, action: str, late_s: float) -> None:
        """The clock did `action` (expire, escalate, remind) `late_s` seconds after it was due."""
