"""The environment, read once at start into one typed object (no os.environ reads elsewhere).

The process's own variables are read here; each surface reads its own from `env`, the same
snapshot (see bot.core.surface.SurfacePlugin.read_settings).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from store.urls import DEFAULT_URL


class SettingsError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    config_path: Path
    database_url: str
    host: str
    port: int
    operator_token: str | None = field(repr=False)
    agent_token: str | None = field(repr=False)
    # AYE_CONFIG named the file: then it must exist (a typo must not start aye without gates).
    config_named: bool = False
    # Where people reach aye from outside (AYE_PUBLIC_URL): https there makes cookies Secure.
    public_url: str | None = None
    log_format: str = "text"  # AYE_LOG_FORMAT: text or json
    log_level: str = "info"  # AYE_LOG_LEVEL: debug, info, warning or error
    # Everything the process was given, for the surfaces: it holds secrets, so never shown.
    env: Mapping[str, str] = field(repr=False, default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        log_format = (get("AYE_LOG_FORMAT") or "text").lower()
        if log_format not in ("text", "json"):
            raise SettingsError(f"AYE_LOG_FORMAT: {log_format!r} is not text or json")
        log_level = (get("AYE_LOG_LEVEL") or "info").lower()
        if log_level not in ("debug", "info", "warning", "error"):
            raise SettingsError(f"AYE_LOG_LEVEL: {log_level!r} is not debug, info, warning or error")
        port_text = get("AYE_PORT") or "8080"
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise SettingsError(f"AYE_PORT: {port_text!r} is not a port number")
        return cls(
            config_path=Path(get("AYE_CONFIG") or "./aye.toml"),
            config_named=get("AYE_CONFIG") is not None,
            database_url=get("AYE_DATABASE_URL") or DEFAULT_URL,
            host=get("AYE_HOST") or "127.0.0.1",
            port=int(port_text),
            operator_token=get("AYE_OPERATOR_TOKEN"),
            agent_token=get("AYE_AGENT_TOKEN"),
            public_url=get("AYE_PUBLIC_URL"),
            log_format=log_format, log_level=log_level,
            env=env,
        )
