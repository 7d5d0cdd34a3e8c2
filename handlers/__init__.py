"""The surfaces where people answer: Slack and GitHub. Each is on when its secrets are set."""

from __future__ import annotations

from bot.broker import Broker
from bot.config import Config
from bot.settings import Settings
from bot.surfaces import Surface


class SurfaceConfigError(Exception):
    """A surface is half-configured; the message names what is missing."""


def slack_on(settings: Settings) -> bool:
    both = settings.slack_bot_token is not None and settings.slack_app_token is not None
    if not both and (settings.slack_bot_token or settings.slack_app_token):
        raise SurfaceConfigError(
            "Slack needs both SLACK_BOT_TOKEN and SLACK_APP_TOKEN; only one is set"
        )
    return both


def github_on(settings: Settings) -> bool:
    if settings.github_webhook_secret is None:
        return False
    app_auth = settings.github_app_id is not None and settings.github_private_key is not None
    if settings.github_app_id is not None and settings.github_private_key is None:
        raise SurfaceConfigError(
            "GITHUB_APP_ID is set without GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH"
        )
    if not app_auth and settings.github_token is None:
        raise SurfaceConfigError(
            "GITHUB_WEBHOOK_SECRET is set, but neither GITHUB_APP_ID with a private key "
            "nor GITHUB_TOKEN is: aye could not react to comments"
        )
    return True


def describe(settings: Settings) -> list[str]:
    """One line per surface for the start-up banner."""
    lines = []
    if slack_on(settings):
        lines.append(f"slack: on (Socket Mode, Web API {settings.slack_api_url})")
    else:
        lines.append("slack: off (set SLACK_BOT_TOKEN and SLACK_APP_TOKEN to turn it on)")
    if github_on(settings):
        how = "GitHub App" if settings.github_app_id else "GITHUB_TOKEN"
        lines.append(f"github: on (POST /github/webhook, {how}, API {settings.github_api_url})")
    else:
        lines.append("github: off (set GITHUB_WEBHOOK_SECRET and App or token auth to turn it on)")
    return lines


def build_surfaces(settings: Settings, config: Config, broker: Broker) -> list[Surface]:
    surfaces: list[Surface] = []
    if slack_on(settings):
        from handlers.slack import SlackSurface

        surfaces.append(SlackSurface(settings, config, broker))
    if github_on(settings):
        from handlers.github import GitHubSurface

        surfaces.append(GitHubSurface(settings, config, broker))
    return surfaces
