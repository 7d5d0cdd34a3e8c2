"""The GitHub surface's settings, without building it: its name, its people, its work (an
issue or pull request), its environment and its config section."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from core.app.ports import SurfaceConfigError
from core.domain.kinds import SurfaceKind
from handlers.env import get

SURFACE = "github"
DEFAULT_API = "https://api.github.com"
# GitHub logins: alphanumerics and single hyphens, at most 39 characters; case-insensitive.
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")


class GitHubWork(BaseModel):
    """`work: {"github": {...}}`: the issue or pull request an agent works on."""

    model_config = ConfigDict(extra="forbid")

    repo: Annotated[
        StrictStr, Field(pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
    ]
    number: Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]
    # An issue (the default) or a pull request: the work's kind for start gates.
    type: Literal["issue", "pull"] | None = None

    @field_validator("repo")
    @classmethod
    def _no_dot_name(cls, repo: str) -> str:
        # `a/..` or `a/.` would be resolved as a path by the HTTP client: another endpoint.
        if repo.partition("/")[2] in (".", ".."):
            raise ValueError("the repository name cannot be . or ..")
        return repo


class GitHubSection(BaseModel):
    """The config file's `[github]`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    post_questions: bool = False


@dataclass(frozen=True, slots=True, repr=False)
class GitHubSettings:
    webhook_secret: str
    app_id: str | None
    private_key: str | None
    token: str | None
    api_url: str = DEFAULT_API

    def __repr__(self) -> str:
        return f"GitHubSettings(app_id={self.app_id!r}, api_url={self.api_url!r})"  # no secrets


def issue_key(work: Mapping[str, Any]) -> str:
    return f"{str(work['repo']).lower()}#{work['number']}"


def _private_key(env: Mapping[str, str]) -> str | None:
    key, path = get(env, "GITHUB_PRIVATE_KEY"), get(env, "GITHUB_PRIVATE_KEY_PATH")
    if key is None and path is not None:
        try:
            key = Path(path).read_text()
        except OSError as exc:
            raise SurfaceConfigError(
                f"GITHUB_PRIVATE_KEY_PATH: cannot read {path}: {exc.strerror}"
            ) from None
    return key


def read_settings(env: Mapping[str, str]) -> GitHubSettings | None:
    secret, app_id, token = get(env, "GITHUB_WEBHOOK_SECRET"), get(env, "GITHUB_APP_ID"), get(
        env, "GITHUB_TOKEN"
    )
    private_key = _private_key(env)
    if secret is None:
        return None
    if app_id is not None and private_key is None:
        raise SurfaceConfigError(
            "GITHUB_APP_ID is set without GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH"
        )
    if app_id is None and token is None:
        raise SurfaceConfigError(
            "GITHUB_WEBHOOK_SECRET is set, but neither GITHUB_APP_ID with a private key "
            "nor GITHUB_TOKEN is: aye could not react to comments"
        )
    api = (get(env, "GITHUB_API_URL") or DEFAULT_API).rstrip("/")
    return GitHubSettings(secret, app_id, private_key, token, api)


def describe(settings: GitHubSettings | None) -> str:
    if settings is None:
        return "github: off (set GITHUB_WEBHOOK_SECRET and App or token auth to turn it on)"
    how = "GitHub App" if settings.app_id else "GITHUB_TOKEN"
    return f"github: on (POST /github/webhook, {how}, API {settings.api_url})"



KIND = SurfaceKind(
    SURFACE, LOGIN, ids_fold_case=True, work_model=GitHubWork, work_key=issue_key,
    work_kind=lambda work: f"github.{work.get('type') or 'issue'}",
    config_model=GitHubSection,
)
