"""The Slack surface's settings, without building it: its name, its people, its work (a
thread), its environment and its config section, what the composition root and the config
need."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from core.app.ports import ConfigNames, SurfaceConfigError
from core.domain.kinds import SurfaceKind
from handlers.env import get
from handlers.slack.buttons import DEFAULT_INBOX

SURFACE = "slack"
DEFAULT_API = "https://slack.com/api/"
BOT_PREFIX, APP_PREFIX = "xoxb-", "xapp-"
# Slack member IDs: U… for users, W… for Enterprise Grid users.
MEMBER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
# A workspace's team id, as `auth.test` and every interaction payload give it.
TEAM_ID = r"^T[A-Z0-9]+$"


class SlackWork(BaseModel):
    """`work: {"slack": {...}}`: the thread an agent works in."""

    model_config = ConfigDict(extra="forbid")

    channel: Annotated[StrictStr, Field(pattern=r"^[CGD][A-Z0-9]{2,30}$")]
    thread_ts: Annotated[StrictStr, Field(pattern=r"^[0-9]{1,12}\.[0-9]{1,8}$")]


class SlackSection(BaseModel):
    """The config file's `[slack]`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    default_channel: str | None = Field(default=None, pattern=r"^[CGD][A-Z0-9]+$")
    # Other workspaces whose members may answer, besides aye's own (its bot token's team):
    # in a Slack Connect channel, anyone else is refused, even for a bare `slack` responder.
    teams: list[Annotated[str, Field(pattern=TEAM_ID)]] = Field(default_factory=list)


@dataclass(frozen=True, slots=True, repr=False)
class SlackSettings:
    bot_token: str
    app_token: str
    api_url: str = DEFAULT_API
    # The web inbox's address (AYE_PUBLIC_URL, else where aye listens): step-up links there.
    inbox_url: str = DEFAULT_INBOX

    def __repr__(self) -> str:
        return f"SlackSettings(api_url={self.api_url!r})"  # never the tokens


def thread_key(work: Mapping[str, Any]) -> str:
    return f"{work['channel']}:{work['thread_ts']}"


def read_settings(env: Mapping[str, str]) -> SlackSettings | None:
    bot, app = get(env, "SLACK_BOT_TOKEN"), get(env, "SLACK_APP_TOKEN")
    if bot is None and app is None:
        return None
    if bot is None or app is None:
        raise SurfaceConfigError("Slack needs both SLACK_BOT_TOKEN and SLACK_APP_TOKEN; only one is set")
    _check_kinds(bot, app)
    api = get(env, "SLACK_API_URL") or DEFAULT_API
    if not api.endswith("/"):
        # slack-sdk joins method names with urljoin: without the slash they lose /api.
        api += "/"
    return SlackSettings(bot, app, api, inbox_url(env))


def inbox_url(env: Mapping[str, str]) -> str:
    """Where people reach the web inbox: AYE_PUBLIC_URL's, else aye's own listening address."""
    public = (get(env, "AYE_PUBLIC_URL") or "").rstrip("/")
    if public:
        return f"{public}/inbox"
    host = get(env, "AYE_HOST") or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{get(env, 'AYE_PORT') or '8080'}/inbox"


def _check_kinds(bot: str, app: str) -> None:
    """Slack's tokens say what they are by their prefix: a swapped pair, or a user token where
    the bot's belongs, is one line at start, not a refusal later (never showing the tokens)."""
    if bot.startswith(APP_PREFIX) and app.startswith(BOT_PREFIX):
        raise SurfaceConfigError(
            "SLACK_BOT_TOKEN and SLACK_APP_TOKEN are swapped: the bot token starts with xoxb-, "
            "the app-level token with xapp-"
        )
    if not bot.startswith(BOT_PREFIX):
        raise SurfaceConfigError("SLACK_BOT_TOKEN is not a bot token: it starts with xoxb-")
    if not app.startswith(APP_PREFIX):
        raise SurfaceConfigError(
            "SLACK_APP_TOKEN is not an app-level token (connections:write): it starts with xapp-"
        )


def warnings(settings: SlackSettings | None, config: ConfigNames) -> list[str]:
    """A start-up line when Slack is on yet no responder anywhere in the config (defaults,
    agents, gates, their escalations, people) is of Slack: it would post nothing."""
    if settings is None or config.names_kind(SURFACE):
        return []
    return ["warning: Slack is on but no responder in the config is on Slack (slack:U… or a "
            "[[people]] id): Slack will show nothing"]


def kept_while_off(env: Mapping[str, str], section: BaseModel) -> bool:
    """`[slack]` holding only `teams` while the Slack bot is off is not unused: with "Sign in
    with Slack" set up, it names the workspaces whose members may sign in."""
    if get(env, "SLACK_CLIENT_ID") is None:
        return False
    return section.model_copy(update={"teams": []}) == SlackSection()


def describe(settings: SlackSettings | None) -> str:
    if settings is None:
        return "slack: off (set SLACK_BOT_TOKEN and SLACK_APP_TOKEN to turn it on)"
    return f"slack: on (Socket Mode, Web API {settings.api_url})"



KIND = SurfaceKind(
    SURFACE, MEMBER_ID, work_model=SlackWork, work_key=thread_key, config_model=SlackSection,
    work_kind=lambda work: "slack.thread",
)
