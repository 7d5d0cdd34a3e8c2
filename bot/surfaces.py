"""The surfaces this process runs, one line each: a new surface is a new folder under
handlers/ and one line here (part of the composition root, with bot/app.py)."""

from __future__ import annotations

from collections.abc import Iterable

from core.app.service import SurfacePlugin
from core.domain import kinds
from core.domain.kinds import CORE, CORE_KINDS, Kinds
from handlers.email import PLUGIN as EMAIL
from handlers.github import PLUGIN as GITHUB
from handlers.slack import PLUGIN as SLACK

PLUGINS: tuple[SurfacePlugin, ...] = (
    SLACK,
    GITHUB,
    EMAIL,
)


def kinds_of(plugins: Iterable[SurfacePlugin]) -> Kinds:
    """The core's kinds and the plug-ins' responder kinds and work variants, as one value."""
    # email's kind is the core's own already (an address is an identity without the surface).
    return CORE.adding(p.kind for p in plugins if p.kind.name not in CORE_KINDS)


# What this process knows: a value, handed to what needs it (the API's request models).
KINDS = kinds_of(PLUGINS)


def register(plugins: Iterable[SurfacePlugin]) -> Kinds:
    """Hand the plug-ins' kinds to the core, with those already in use, for what parses a
    responder or a work where no Kinds is handed (the config's and requests' validators): the
    composition root does it once at start (create_app, the CLI, `aye mcp`); the Kinds now in
    use."""
    made = kinds.in_use().adding(p.kind for p in plugins if p.kind.name not in CORE_KINDS)
    kinds.use(made)
    return made
