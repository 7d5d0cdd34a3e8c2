"""How the Slack surface plugs in: its settings (settings.py) and a lazy build, so slack-bolt
is loaded only when Slack is on."""

from __future__ import annotations

from pydantic import BaseModel

from core.app.ports import Surface
from core.app.service import Service, SurfacePlugin
from handlers.slack.settings import (
    KIND,
    SlackSection,
    SlackSettings,
    describe,
    kept_while_off,
    read_settings,
    warnings,
)


def build(settings: SlackSettings, section: BaseModel | None, asks: Service) -> Surface:
    from handlers.slack.surface import SlackSurface  # slack-bolt is loaded only when Slack is on

    assert isinstance(section, SlackSection)
    return SlackSurface(settings, section, asks)


PLUGIN = SurfacePlugin(KIND, read_settings, describe, build, warnings, kept_while_off)
