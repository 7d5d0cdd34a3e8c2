"""The environment, read once at start into one typed object (no os.environ reads elsewhere).

The process's own variables are read here; each surface reads its own from `env`, the same
snapshot (see core.app.ports.SurfacePlugin.read_settings).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from store.database_url import POSTGRES, UnsupportedUrl, canonical
from store.urls import DEFAULT_URL

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", "8080"
# A client cannot connect to "every address": where aye serve listens on all, it is reached here.
EVERY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "::1"}
AUDIT_HEAD_EVERY_S = 3600.0  # AYE_AUDIT_HEAD_EVERY's default, 1h


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
    # An Ed25519 private key (PEM) to sign receipts with; None: one kept in the store.
    signing_key_path: str | None = None
    # How often a signed head of the audit chain goes to the log (AYE_AUDIT_HEAD_EVERY).
    audit_head_every: float = 3600.0  # AUDIT_HEAD_EVERY_S
    # A direct PostgreSQL URL for LISTEN alone (AYE_LISTEN_URL), where database_url is a
    # transaction pooler; None: LISTEN on database_url.
    listen_url: str | None = None
    # Everything the process was given, for the surfaces: it holds secrets, so never shown.
    env: Mapping[str, str] = field(repr=False, default_factory=dict)

    @property
    def origin(self) -> str:
        """Where browsers reach aye (the inbox's sign-in redirect URIs start with it):
        AYE_PUBLIC_URL when set, else the address aye serve listens on."""
        if self.public_url:
            return self.public_url.rstrip("/")
        return reach(self.host, self.port)

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
        return cls(
            config_path=Path(get("AYE_CONFIG") or "./aye.toml"),
            config_named=get("AYE_CONFIG") is not None,
            database_url=store_url(env),
            listen_url=listen_store_url(env),
            host=get("AYE_HOST") or DEFAULT_HOST,
            port=listen_port(env),
            operator_token=get("AYE_OPERATOR_TOKEN"),
            agent_token=get("AYE_AGENT_TOKEN"),
            public_url=get("AYE_PUBLIC_URL"),
            log_format=log_format, log_level=log_level,
            signing_key_path=signing_key(get("AYE_SIGNING_KEY_PATH")),
            audit_head_every=every("AYE_AUDIT_HEAD_EVERY", get("AYE_AUDIT_HEAD_EVERY"),
                                   AUDIT_HEAD_EVERY_S),
            env=env,
        )


def every(name: str, text: str | None, default: float) -> float:
    """A positive duration (`90s`, `45m`, `1h`, `1h30m`, `7d`) in seconds, as aye.toml's are
    read (`default` when unset); SettingsError naming the variable otherwise."""
    if text is None:
        return default
    from core.domain.policy import parse_duration  # pydantic: not for every CLI command

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise SettingsError(f"{name}: {exc}") from None
    if seconds <= 0:
        raise SettingsError(f"{name}: {text!r} is not a duration above zero")
    return seconds


def signing_key(path: str | None) -> str | None:
    """AYE_SIGNING_KEY_PATH, once its key is known to be usable (SettingsError saying why not):
    a receipt is never signed with a key that could not be read."""
    if path is None:
        return None
    from core.app.keys import SigningKeyError, from_file  # cryptography: serve's only

    try:
        from_file(path)
    except SigningKeyError as exc:
        raise SettingsError(str(exc)) from None
    return path


def store_url(env: Mapping[str, str]) -> str:
    """AYE_DATABASE_URL in the form the store opens (the default when unset); SettingsError
    naming the forms taken otherwise. Set but empty is refused too: `AYE_DATABASE_URL=$DB` with
    `DB` unset must not start aye on a fresh SQLite file beside it instead of the real store."""
    given = env.get("AYE_DATABASE_URL")
    try:
        return canonical(DEFAULT_URL if given is None else given)
    except UnsupportedUrl as exc:
        raise SettingsError(f"AYE_DATABASE_URL: {exc}") from None


def listen_store_url(env: Mapping[str, str]) -> str | None:
    """AYE_LISTEN_URL, in the form the store opens, when set: PostgreSQL only, and only with a
    PostgreSQL AYE_DATABASE_URL (a listen URL beside SQLite is a mistake worth a line)."""
    given = env.get("AYE_LISTEN_URL", "").strip()
    if not given:
        return None
    try:
        url = canonical(given)
    except UnsupportedUrl as exc:
        raise SettingsError(f"AYE_LISTEN_URL: {exc}") from None
    if not url.startswith(POSTGRES) or not store_url(env).startswith(POSTGRES):
        raise SettingsError("AYE_LISTEN_URL: a PostgreSQL URL (postgresql+asyncpg://…, "
                            "postgresql://…, postgres://…), beside a PostgreSQL AYE_DATABASE_URL")
    return url


def listen_port(env: Mapping[str, str]) -> int:
    """AYE_PORT (8080 when unset); SettingsError when it is not a port number."""
    text = env.get("AYE_PORT", "").strip() or DEFAULT_PORT
    if not (text.isascii() and text.isdigit()) or not 0 <= int(text) <= 65535:
        raise SettingsError(f"AYE_PORT: {text!r} is not a port number")
    return int(text)


def server_url(env: Mapping[str, str]) -> str:
    """Where the CLI and `aye mcp` find aye: AYE_URL, or where `aye serve` started with these
    same variables listens (`http://{AYE_HOST}:{AYE_PORT}`), so that `AYE_PORT=18080 aye asks`
    reaches it. SettingsError when AYE_URL is not an http(s) URL or AYE_PORT not a port."""
    given = env.get("AYE_URL", "").strip()
    if given:
        parsed = urllib.parse.urlsplit(given)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SettingsError(f"AYE_URL is not an http(s) URL: {given!r}")
        return given.rstrip("/")
    return reach(env.get("AYE_HOST", "").strip() or DEFAULT_HOST, listen_port(env))


def reach(host: str, port: int) -> str:
    """The http:// origin at which aye serve, listening on `host`:`port`, is reached."""
    host = EVERY_ADDRESS.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address, as a URL writes one
    return f"http://{host}:{port}"
