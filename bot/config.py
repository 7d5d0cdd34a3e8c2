"""The operator's configuration: a TOML file validated once, at start, into typed objects.

The policy sections (`[defaults]`, `[[gates]]`) are the core's (core.domain.policy); `[[agents]]`
is the process's; each surface brings its own section (`[slack]`, `[github]`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    Field,
    PlainValidator,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from aye_client.verifiers import DEFAULT_TOLERANCE_S, SCHEMES, Verifier
from bot.near_miss import did_you_mean
from bot.surfaces import PLUGINS, register
from core.app.service import SurfacePlugin
from core.domain.callback_urls import BadUrl, parse_prefix
from core.domain.kinds import (
    EXTERNAL_KIND,
    OPERATOR_KIND,
    PERSON_KIND,
    PERSON_NAME,
    VERIFIER_NAME,
)
from core.domain.people import People, identity_key
from core.domain.policy import (
    Defaults,
    Duration,
    Gate,
    ResponderField,
    Strict,
    gate_for,
    key_path,
)
from core.domain.responders import Responder
from handlers.web.providers import ORDER as SIGN_INS

HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$"


class ConfigError(Exception):
    """A config file that cannot be used; the message is one line for the operator."""


class EntryError(ValueError):
    """One bad entry of a list of values, which the key then names by its index from 0, as
    the contract writes it (`agents[1].callback_urls[0]`: the first agent's first prefix)."""

    def __init__(self, index: int, why: str, rest: str = "") -> None:
        super().__init__(why)
        self.index, self.rest = index, rest


class AtKey(ValueError):
    """A value wrong because of another part of the file: the key it is at, in full."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(why)
        self.key = key


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
    # The [[verifiers]] its external asks may name (none by default).
    verifiers: list[str] = Field(default_factory=list)

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
        for index, prefix in enumerate(value):
            try:
                parse_prefix(prefix)
            except BadUrl as exc:
                raise EntryError(index, f"{prefix!r} {exc}") from None
        return value

    def callback_secret(self) -> bytes | None:
        return os.environ[self.callback_secret_env].encode() if self.callback_secret_env else None

    def token(self) -> str:
        return os.environ[self.token_env]


def _secret_env(value: str) -> str:
    if not os.environ.get(value):
        raise ValueError(f"environment variable {value} is not set")
    return value


class VerifierConfig(Strict):
    """An outside system that answers external asks: its shared secret (from the environment),
    the header its signature comes in, the scheme (aye_client/verifiers.py), and optionally a
    signed timestamp header and how old a delivery may be."""

    name: str = Field(pattern=VERIFIER_NAME.pattern)
    secret_env: str = Field(min_length=1)
    header: str = Field(pattern=HEADER_NAME)
    scheme: str
    tolerance: Duration | None = None
    timestamp_header: str | None = Field(default=None, pattern=HEADER_NAME)

    _secret = field_validator("secret_env")(_secret_env)

    @field_validator("scheme")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in SCHEMES:
            raise ValueError(f"{value!r} is not a known scheme: {', '.join(sorted(SCHEMES))}")
        return value

    @model_validator(mode="after")
    def _tolerance_needs_a_timestamp(self) -> VerifierConfig:
        if self.tolerance is not None and self.timestamp_header is None:
            raise ValueError("tolerance needs timestamp_header (the header the signed time is in)")
        if self.tolerance is not None and not 0 < self.tolerance <= 86400:
            raise ValueError("tolerance must be more than 0s and at most 24h")
        return self

    def build(self) -> Verifier:
        return Verifier(
            self.name, os.environ[self.secret_env].encode(), self.header, SCHEMES[self.scheme],
            self.timestamp_header, self.tolerance or DEFAULT_TOLERANCE_S,
        )


class PersonConfig(Strict):
    """One human and their identities (`[[people]]`): quorum counts them once, and they are
    known as the author of a work by every one of them."""

    name: str = Field(pattern=PERSON_NAME.pattern)
    ids: list[ResponderField] = Field(min_length=1)

    @field_validator("ids")
    @classmethod
    def _specific(cls, value: list[Responder]) -> list[Responder]:
        for index, who in enumerate(value):
            if who.id is None or who.kind in (OPERATOR_KIND, PERSON_KIND, EXTERNAL_KIND):
                raise EntryError(index, f"{str(who)!r} is not one person's identity "
                                        "(like slack:U0123ABCD, github:login, email:address)")
        return value


class OidcConfig(Strict):
    """The organisation's OpenID Connect provider (`[web.oidc]`): "Sign in with <its host>"."""

    issuer: str = Field(min_length=1)
    client_id: str = Field(min_length=1)
    client_secret_env: str = Field(min_length=1)

    _secret = field_validator("client_secret_env")(_secret_env)

    @field_validator("issuer")
    @classmethod
    def _https(cls, value: str) -> str:
        parts = urlsplit(value)
        loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
        if not parts.hostname or parts.query or parts.fragment or not (
            parts.scheme == "https" or (parts.scheme == "http" and loopback)
        ):
            raise ValueError("must be an https:// URL (http:// only on a loopback host)")
        return value.rstrip("/")

    def client_secret(self) -> str:
        return os.environ[self.client_secret_env]


def _sign_in(value: Any) -> str:
    """A sign-in's name: one the inbox offers (handlers/web/providers.py names them), refused in
    the words pydantic gives a Literal of those names."""
    if isinstance(value, str) and value in SIGN_INS:
        return value
    names = [repr(name) for name in SIGN_INS]
    expected = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


SignIn = Annotated[str, PlainValidator(_sign_in)]


class WebConfig(Strict):
    """The inbox (`[web]`): which sign-ins /login offers besides the operator token (None:
    every one that is set up), and the organisation's OpenID Connect provider."""

    sign_in: list[SignIn] | None = None
    oidc: OidcConfig | None = None

    @field_validator("sign_in")
    @classmethod
    def _once_each(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("names a sign-in twice")
        return value


class AyeConfig(Strict):
    """The sections every aye has; `Config` adds the surfaces' own."""

    defaults: Defaults = Field(default_factory=Defaults)
    agents: list[Agent] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)
    verifiers: list[VerifierConfig] = Field(default_factory=list)
    people: list[PersonConfig] = Field(default_factory=list)
    web: WebConfig = Field(default_factory=WebConfig)

    @field_validator("people")
    @classmethod
    def _one_person_each(cls, value: list[PersonConfig]) -> list[PersonConfig]:
        names = [p.name for p in value]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"person names must be unique: {', '.join(dup)}")
        whose: dict[str, str] = {}
        for number, person in enumerate(value):
            for index, who in enumerate(person.ids):
                key = identity_key(who)
                if key in whose:
                    raise EntryError(number + 1, f"{key} is also {whose[key]}'s: an identity "
                                                 "is one person's", f".ids[{index}]")
                whose[key] = person.name
        return value

    @model_validator(mode="after")
    def _persons_known(self) -> AyeConfig:
        known = {p.name for p in self.people}
        for where, responders in self._responder_lists():
            for who in responders:
                if who.kind == PERSON_KIND and who.id not in known:
                    raise AtKey(where, f"{who} names no [[people]] entry")
        return self

    def first_naming(self, kind: str) -> str | None:
        """The first key (`gates[1].responders`) that names a responder of `kind`, or None."""
        return next((key for key, responders in self._responder_lists()
                     if any(who.kind == kind for who in responders)), None)

    def _responder_lists(self) -> list[tuple[str, list[Responder]]]:
        found: list[tuple[str, list[Responder]]] = [("defaults.responders", self.defaults.responders)]
        found += [(f"agents[{i}].responders", a.responders or [])
                  for i, a in enumerate(self.agents, start=1)]
        for i, gate in enumerate(self.gates, start=1):
            found.append((f"gates[{i}].responders", gate.responders or []))
            if gate.escalate is not None:
                found.append((f"gates[{i}].escalate.responders", gate.escalate.responders))
        return found

    @model_validator(mode="after")
    def _quorum_possible(self) -> AyeConfig:
        """A gate asking more approvals than the people who could ever give them would wait
        for nothing and time out every call: exit 2 naming the gate."""
        people = self.directory()
        for i, gate in enumerate(self.gates, start=1):
            if gate.approvals <= 1:
                continue
            who = list(gate.responders or self.defaults.responders)
            who += gate.escalate.responders if gate.escalate is not None else []
            if any(r.id is None for r in who):  # a bare kind: anyone of it, no fixed count
                continue
            count = len({_person_key(r, people) for r in who})
            if count < gate.approvals:
                raise AtKey(f"gates[{i}].approvals", f"needs {gate.approvals} distinct approvers, "
                            f"but its responders (escalation included) are {count} "
                            f"{'person' if count == 1 else 'people'}: lower approvals or add "
                            "responders")
        return self

    def names_kind(self, kind: str) -> bool:
        return any(who.kind == kind for who in self.every_responder())

    def every_responder(self) -> list[Responder]:
        """Each responder the file names anywhere, with every identity of its people."""
        found = [who for _, responders in self._responder_lists() for who in responders]
        return found + [who for person in self.people for who in person.ids]

    def directory(self) -> People:
        """The config's people, for the decisions (core.domain.people)."""
        return People.of((p.name, p.ids) for p in self.people)

    @model_validator(mode="after")
    def _verifiers_known(self) -> AyeConfig:
        names = [v.name for v in self.verifiers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"verifier names must be unique: {', '.join(dup)}")
        for agent in self.agents:
            unknown = [n for n in agent.verifiers if n not in names]
            if unknown:
                raise ValueError(f"agent {agent.name}: verifiers names {unknown[0]!r}, "
                                 "which no [[verifiers]] entry defines")
        return self

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


def _person_key(who: Responder, people: People) -> str:
    """Whom a specific responder is, counted as people: `person:ada` and each of her
    identities are ada; the operator is one person."""
    if who.kind == PERSON_KIND:
        return f"person:{who.id}"
    name = people.person_of(who)
    return f"person:{name}" if name is not None else identity_key(who)


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
    register(PLUGINS)  # its responders and people name the surfaces' kinds
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
            msg = "unknown key" + did_you_mean(Config, tuple(err["loc"]))
        key = key_path(tuple(err["loc"]), first=1)
        if isinstance(entry := err.get("ctx", {}).get("error"), EntryError):
            key += f"[{entry.index}]{entry.rest}"
        elif isinstance(entry, AtKey):
            key = entry.key
        raise ConfigError(f"{path}: {key or '(file)'}: {msg}") from None

