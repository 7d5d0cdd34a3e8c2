"""The GitHub surface: `/answer` comments and reviews answer asks; aye reacts and may post."""

from handlers.github.surface import GitHubSurface

__all__ = ["GitHubSurface"]
