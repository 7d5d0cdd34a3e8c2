"""The Slack surface: questions posted in threads, answered with buttons and a modal."""

from handlers.slack.surface import SlackSurface

__all__ = ["SlackSurface"]
