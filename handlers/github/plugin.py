"""How the GitHub surface plugs in: its settings (settings.py) and a lazy build, so gidgethub
is loaded only when GitHub is on."""

from __future__ import annotations

from pydantic import BaseModel

from core.app.ports import Surface
from core.app.service import Service, SurfacePlugin
from handlers.github.settings import KIND, GitHubSection, GitHubSettings, describe, read_settings


def build(settings: GitHubSettings, section: BaseModel | None, asks: Service) -> Surface:
    from handlers.github.surface import GitHubSurface  # gidgethub is loaded only when on

    assert isinstance(section, GitHubSection)
    return GitHubSurface(settings, section, asks)


PLUGIN = SurfacePlugin(KIND, read_settings, describe, build)
