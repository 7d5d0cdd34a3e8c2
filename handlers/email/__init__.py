"""Email: anyone with an address answers from the links mailed to them (handlers/email/plugin.py
plugs it in; surface.py sends through the outbox; page.py serves the links' pages)."""

from handlers.email.plugin import PLUGIN as PLUGIN
