"""Reading a surface's variables from the environment the process was given (pure)."""

from __future__ import annotations

from collections.abc import Mapping


def get(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value, stripped; None when unset or blank."""
    value = env.get(name, "").strip()
    return value or None
