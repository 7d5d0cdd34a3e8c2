"""The surfaces this process runs, one line each: a new surface is a new folder under
handlers/ and one line here (part of the composition root, with bot/app.py)."""

from __future__ import annotations

from collections.abc import Iterable

from core.app.service import SurfacePlugin
from core.domain import kinds
from handlers.email import PLUGIN as EMAIL
from handlers.github import PLUGIN as GITHUB
from handlers.slack import PLUGIN as SLACK

PLUGINS: tuple[SurfacePlugin, ...] = (
    SLACK,
    GITHUB,
    EMAIL,
)


def register(plugins: Iterable[SurfacePlugin]) -> None:
    """Make the plug-ins' responder kinds and work variants known to the core."""
    for plugin in plugins:
        if plugin.kind.name not in kinds.CORE_KINDS:  # email: the core's own kind already
            kinds.register(plugin.kind)


register(PLUGINS)
