"""The GitHub surface: `/answer` comments and reviews answer asks; aye reacts and may post."""

from handlers.github.plugin import PLUGIN

__all__ = ["PLUGIN"]
