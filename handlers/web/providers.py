"""Who people may sign in with besides the operator token: Slack (OpenID Connect), GitHub (its
OAuth web flow) and the organisation's OpenID Connect provider (`[web.oidc]`), read once at
start from the environment and the config's values.

A sign-in is "set up" when its client id and secret are there (for `oidc`, `[web.oidc]`);
`[web] sign_in` then picks among those (None: every one set up). Asking for one that is not
set up, or a half-set pair, is NotSetUp: the process stops with one line naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from handlers.env import get

SLACK, GITHUB, OIDC = "slack", "github", "oidc"
ORDER = (SLACK, GITHUB, OIDC)
# The kind of identity each sign-in gives (Slack's member id, a GitHub login, a verified email).
SIGNS_IN_AS = {SLACK: "slack", GITHUB: "github", OIDC: "email"}
DEFAULT_SLACK_ISSUER = "https://slack.com"
DEFAULT_GITHUB_WEB = "https://github.com"
DEFAULT_GITHUB_API = "https://api.github.com"
# What a person's sign-in asks of the provider: who they are, nothing else. GitHub's OAuth
# App reads a user's public profile (GET /user) with no scope at all.
OIDC_SCOPES = ("openid", "email", "profile")
SLACK_USER_CLAIM = "https://slack.com/user_id"
SLACK_TEAM_CLAIM = "https://slack.com/team_id"


class NotSetUp(Exception):
    """A sign-in asked for but not usable: `key` is the config file's key to name (None: the
    environment is at fault, and `why` names the variable)."""

    def __init__(self, key: str | None, why: str) -> None:
        super().__init__(why if key is None else f"{key}: {why}")
        self.key, self.why = key, why


@dataclass(frozen=True, slots=True)
class Client:
    """aye's registration at a provider: never shown (repr) or logged."""

    id: str
    secret: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Provider:
    """One sign-in: `name` is its route (`/login/<name>`) and the session's method; `label`
    what the button says after "Sign in with"."""

    name: str
    label: str
    client: Client
    issuer: str | None = None  # OpenID Connect: discovery at <issuer>/.well-known/...
    web_url: str | None = None  # GitHub: where /login/oauth/* are
    api_url: str | None = None  # GitHub: where GET /user is
    # Slack: the workspaces whose members may sign in, asked at each sign-in (aye's own team
    # is known once the Slack surface's auth.test came back).
    teams: Callable[[], frozenset[str]] | None = field(default=None, compare=False)

    @property
    def is_oidc(self) -> bool:
        return self.issuer is not None


@dataclass(frozen=True, slots=True)
class OrgProvider:
    """`[web.oidc]` as the config gives it (the secret already read from its variable)."""

    issuer: str
    client_id: str
    client_secret: str = field(repr=False)


def host_of(issuer: str) -> str:
    return urlsplit(issuer).hostname or issuer


def _pair(env: Mapping[str, str], prefix: str, what: str) -> Client | None:
    """`<prefix>_CLIENT_ID` and `<prefix>_CLIENT_SECRET`: both, or neither (None)."""
    ident, secret = get(env, f"{prefix}_CLIENT_ID"), get(env, f"{prefix}_CLIENT_SECRET")
    if ident is None and secret is None:
        return None
    if ident is None or secret is None:
        lack = f"{prefix}_CLIENT_SECRET" if secret is None else f"{prefix}_CLIENT_ID"
        raise NotSetUp(None, f'"Sign in with {what}" needs both {prefix}_CLIENT_ID and '
                             f"{prefix}_CLIENT_SECRET; {lack} is not set")
    return Client(ident, secret)


def set_up(
    env: Mapping[str, str], org: OrgProvider | None, slack_teams: Callable[[], frozenset[str]],
) -> dict[str, Provider]:
    """Every sign-in whose client is in the environment (or the config, for `oidc`)."""
    found: dict[str, Provider] = {}
    if (slack := _pair(env, "SLACK", "Slack")) is not None:
        issuer = (get(env, "SLACK_OIDC_ISSUER") or DEFAULT_SLACK_ISSUER).rstrip("/")
        found[SLACK] = Provider(SLACK, "Slack", slack, issuer=issuer, teams=slack_teams)
    if (github := _pair(env, "GITHUB", "GitHub")) is not None:
        found[GITHUB] = Provider(
            GITHUB, "GitHub", github,
            web_url=(get(env, "GITHUB_WEB_URL") or DEFAULT_GITHUB_WEB).rstrip("/"),
            api_url=(get(env, "GITHUB_API_URL") or DEFAULT_GITHUB_API).rstrip("/"),
        )
    if org is not None:
        found[OIDC] = Provider(OIDC, host_of(org.issuer), Client(org.client_id, org.client_secret),
                               issuer=org.issuer.rstrip("/"))
    return found


def offered(found: Mapping[str, Provider], wanted: Sequence[str] | None) -> list[Provider]:
    """What /login offers: `wanted` (`[web] sign_in`) in its order, or every one set up.
    NotSetUp naming `web.sign_in[n]` (counted from 1, as the config's keys are) otherwise."""
    if wanted is None:
        return [found[name] for name in ORDER if name in found]
    for number, name in enumerate(wanted, start=1):
        if name not in found:
            raise NotSetUp(f"web.sign_in[{number}]", f'"{name}" is not set up: {_how(name)}')
    return [found[name] for name in wanted]


def _how(name: str) -> str:
    if name == OIDC:
        return "add [web.oidc] with issuer, client_id and client_secret_env"
    prefix = name.upper()
    return f"set {prefix}_CLIENT_ID and {prefix}_CLIENT_SECRET"


def describe(providers: Sequence[Provider]) -> str:
    """The start-up line: `web inbox: sign in with the operator token, Slack, GitHub, …`."""
    return "web inbox: sign in with " + ", ".join(["the operator token", *(p.label for p in providers)])
