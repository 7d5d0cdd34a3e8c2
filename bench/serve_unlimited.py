"""`aye serve` with the per-agent limits taken out: the "limits off" side of bench_ops.py.

aye has no setting that turns its limits off (every agent has `max_open` and `asks_per_minute`,
500 and 120 by default), so this replaces the calls the core makes into core.app.counting with
ones that do nothing, then runs what `python -m bot serve` runs. Never a way to run aye.
"""

from __future__ import annotations

import sys

from core.app import counting

PATCHED = ("count", "opened", "closed", "counted_and_opened")


async def _nothing(*args: object, **kwargs: object) -> None:
    return None


def main() -> int:
    for name in PATCHED:
        if not hasattr(counting, name):
            print(f"core.app.counting.{name} is gone: update {__file__}", file=sys.stderr)
            return 2
        setattr(counting, name, _nothing)
    from bot.cli import main as aye

    return aye(["serve"])


if __name__ == "__main__":
    sys.exit(main())
