"""The Slack surface: questions posted in threads, answered with buttons and a modal."""

from handlers.slack.plugin import PLUGIN

__all__ = ["PLUGIN"]
