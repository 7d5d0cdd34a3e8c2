"""Which sign-ins the inbox offers besides the operator token, from the environment and
`[web]`: checked at start (a `sign_in` entry not set up is one line naming its key, and exit 2)
and handed to the inbox with the teams whose members may sign in with Slack."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.config import AyeConfig
from bot.settings import Settings
from core.app.ports import SurfaceConfigError
from core.app.service import SurfacePlugin
from handlers.web import providers
from handlers.web.providers import SLACK, OrgProvider, Provider

Teams = Callable[[], frozenset[str]]


def configured_teams(config: AyeConfig) -> frozenset[str]:
    """`[slack] teams`: the other workspaces whose members may answer and sign in."""
    teams = getattr(config.section(SLACK), "teams", None)
    return frozenset(teams) if isinstance(teams, list) else frozenset()


def slack_bot_on(settings: Settings, plugins: Sequence[SurfacePlugin]) -> bool:
    return any(p.name == SLACK and p.read_settings(settings.env) is not None for p in plugins)


def sign_in_providers(
    settings: Settings, config: AyeConfig, plugins: Sequence[SurfacePlugin],
    teams: Teams | None = None,
) -> list[Provider]:
    """The person's sign-ins /login offers, in order. `teams`: the Slack surface's own (its bot
    token's team and `[slack] teams`); without the Slack bot, `[slack] teams` alone.
    SurfaceConfigError naming the key when one asked for cannot work."""
    oidc = config.web.oidc
    org = None if oidc is None else OrgProvider(oidc.issuer, oidc.client_id, oidc.client_secret())
    fixed = configured_teams(config)
    try:
        found = providers.set_up(settings.env, org, teams or (lambda: fixed))
        chosen = providers.offered(found, config.web.sign_in)
    except providers.NotSetUp as exc:
        raise SurfaceConfigError(str(exc) if exc.key is None else f"{settings.config_path}: {exc}") from None
    if any(p.name == SLACK for p in chosen) and not fixed and not slack_bot_on(settings, plugins):
        raise SurfaceConfigError(
            f'{settings.config_path}: slack.teams: "Sign in with Slack" needs the workspaces whose '
            "members may sign in while the Slack bot is off (SLACK_BOT_TOKEN and SLACK_APP_TOKEN "
            "unset): list their team ids"
        )
    return chosen
