"""How the email surface plugs in: its settings (settings.py) and a lazy build, so
aiosmtplib is loaded only when email is on."""

from __future__ import annotations

from pydantic import BaseModel

from core.app.ports import Surface
from core.app.service import Service, SurfacePlugin
from handlers.email.settings import KIND, EmailSettings, describe, read_settings, warnings


def build(settings: EmailSettings, section: BaseModel | None, asks: Service) -> Surface:
    from handlers.email.surface import EmailSurface  # aiosmtplib is loaded only when on

    return EmailSurface(settings, asks)


PLUGIN = SurfacePlugin(KIND, read_settings, describe, build, warnings)
