"""The environment, read once at start into one typed object (no os.environ reads elsewhere)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from store.db import DEFAULT_URL

DEFAULT_SLACK_API = "https://slack.com/api/"
DEFAULT_GITHUB_API = "https://api.github.com"


class SettingsError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    config_path: Path
    database_url: str
    host: str
    port: int
    operator_token: str | None
    agent_token: str | None
    slack_bot_token: str | None
    slack_app_token: str | None
    slack_api_url: str
    github_webhook_secret: str | None
    github_app_id: str | None
    github_private_key: str | None
    github_token: str | None
    github_api_url: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        port_text = get("AYE_PORT") or "8080"
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise SettingsError(f"AYE_PORT: {port_text!r} is not a port number")
        private_key = get("GITHUB_PRIVATE_KEY")
        key_path = get("GITHUB_PRIVATE_KEY_PATH")
        if private_key is None and key_path is not None:
            try:
                private_key = Path(key_path).read_text()
            except OSError as exc:
                raise SettingsError(
                    f"GITHUB_PRIVATE_KEY_PATH: cannot read {key_path}: {exc.strerror}"
                ) from None
        slack_api = get("SLACK_API_URL") or DEFAULT_SLACK_API
        if not slack_api.endswith("/"):
            # slack-sdk joins method names with urljoin: without the slash they lose /api.
            slack_api += "/"
        return cls(
            config_path=Path(get("AYE_CONFIG") or "./aye.toml"),
            database_url=get("AYE_DATABASE_URL") or DEFAULT_URL,
            host=get("AYE_HOST") or "127.0.0.1",
            port=int(port_text),
            operator_token=get("AYE_OPERATOR_TOKEN"),
            agent_token=get("AYE_AGENT_TOKEN"),
            slack_bot_token=get("SLACK_BOT_TOKEN"),
            slack_app_token=get("SLACK_APP_TOKEN"),
            slack_api_url=slack_api,
            github_webhook_secret=get("GITHUB_WEBHOOK_SECRET"),
            github_app_id=get("GITHUB_APP_ID"),
            github_private_key=private_key,
            github_token=get("GITHUB_TOKEN"),
            github_api_url=(get("GITHUB_API_URL") or DEFAULT_GITHUB_API).rstrip("/"),
        )
