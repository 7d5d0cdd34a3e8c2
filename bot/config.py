"""The operator's configuration: a TOML file validated once, at start, into typed objects.

The policy sections (`[defaults]`, `[[gates]]`) are the core's (bot.core.config); `[[agents]]`
is the process's; each surface brings its own section (`[slack]`, `[github]`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator

from bot.core.config import Defaults, Gate, ResponderField, Strict, gate_for, key_path
from bot.core.surface import SurfacePlugin
from bot.surfaces import PLUGINS


class ConfigError(Exception):
    """A config file that cannot be used; the message is one line for the operator."""


class Agent(Strict):
    name: str = Field(min_length=1, max_length=100)
    token_env: str = Field(min_length=1)
    responders: list[ResponderField] | None = Field(default=None, min_length=1)
    # Callbacks (ask_api/callbacks.py): the env var holding the secret that signs them, and
    # the URL prefixes they may go to.
    callback_secret_env: str | None = Field(default=None, min_length=1)
    callback_urls: list[str] = Field(default_factory=list)
    max_open: int = Field(default=500, ge=1, le=1_000_000)
    asks_per_minute: int = Field(default=120, ge=1, le=1_000_000)

    @field_validator("token_env")
    @classmethod
    def _token_set(cls, value: str) -> str:
        if not os.environ.get(value):
            raise ValueError(f"environment variable {value} is not set")
        return value

    @field_validator("callback_secret_env")
    @classmethod
    def _secret_set(cls, value: str | None) -> str | None:
        if value is not None and not os.environ.get(value):
            raise ValueError(f"environment variable {value} is not set")
        return value

    @field_validator("callback_urls")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        for prefix in value:
            parts = urlsplit(prefix)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{prefix!r} is not an http(s) URL prefix like https://host/path/")
        return value

    def callback_secret(self) -> bytes | None:
        return os.environ[self.callback_secret_env].encode() if self.callback_secret_env else None

    def token(self) -> str:
        return os.environ[self.token_env]


class AyeConfig(Strict):
    """The sections every aye has; `Config` adds the surfaces' own."""

    defaults: Defaults = Field(default_factory=Defaults)
    agents: list[Agent] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)

    @field_validator("agents")
    @classmethod
    def _unique_agents(cls, value: list[Agent]) -> list[Agent]:
        names = [a.name for a in value]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"agent names must be unique: {', '.join(sorted(dup))}")
        tokens = [a.token() for a in value]
        if len(set(tokens)) != len(tokens):
            raise ValueError("two agents share one token")
        return value

    def gate_for(self, operation: str) -> Gate | None:
        return gate_for(self.gates, operation)

    def section(self, name: str) -> BaseModel | None:
        """A surface's own section (`[slack]`), or None when the surface has none."""
        found = getattr(self, name, None)
        return found if isinstance(found, BaseModel) else None


def config_model(plugins: Iterable[SurfacePlugin]) -> type[AyeConfig]:
    """The config file's model: the core's sections and each surface's own."""
    sections: dict[str, Any] = {
        p.name: (p.kind.config_model, Field(default_factory=p.kind.config_model))
        for p in plugins
        if p.kind.config_model is not None
    }
    return create_model("Config", __base__=AyeConfig, **sections)


Config = config_model(PLUGINS)


def load_config(path: Path, named: bool = False) -> AyeConfig:
    """Read and validate the config file. A missing file means all defaults, unless it was
    `named` (AYE_CONFIG): a typo must not start aye with no gates."""
    if not path.exists():
        if named:
            raise ConfigError(f"{path}: no such file (AYE_CONFIG names it)")
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc.__class__.__name__}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raise ConfigError(f"{path}: {key_path(tuple(err['loc']), first=1) or '(file)'}: {msg}") from None
