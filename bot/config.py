"""The operator's configuration: a TOML file validated once, at start, into typed objects."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.responders import Responder

DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
HOUR = 3600.0
MAX_TIMEOUT_S = 8760 * HOUR
MIN_GATE_TIMEOUT_S = 60.0
DEFAULT_TIMEOUT_S = 24 * HOUR
RESERVED_PREFIX = "human."


class ConfigError(Exception):
    """A config file that cannot be used; the message is one line for the operator."""


def parse_duration(text: str) -> float:
    """`90s`, `45m`, `2h`, `1h30m`, `7d` -> seconds. Raises ValueError with a readable reason."""
    match = DURATION_RE.match(text.strip()) if isinstance(text, str) else None
    if not text or match is None or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration like 90s, 45m, 2h, 1h30m or 7d")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return float(days * 86400 + hours * 3600 + minutes * 60 + seconds)


def format_duration(seconds: float) -> str:
    """The shortest readable form of a duration, for messages: 5400 -> `1h30m`."""
    rest = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts) or "0s"


def _duration(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError("must be a duration string like 90s, 45m, 2h, 1h30m or 7d")
    return parse_duration(value)


Duration = Annotated[float, BeforeValidator(_duration)]


def _responder(value: Any) -> Responder:
    if not isinstance(value, str):
        raise ValueError("a responder is a string like slack:U0123ABCD or github:octocat")
    return Responder.parse(value)


ResponderField = Annotated[Responder, BeforeValidator(_responder)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Defaults(Strict):
    responders: list[ResponderField] = Field(
        default_factory=lambda: [Responder.parse("operator:local")], min_length=1
    )
    question_timeout: Duration = DEFAULT_TIMEOUT_S

    @field_validator("question_timeout")
    @classmethod
    def _in_range(cls, value: float) -> float:
        if not 0 < value <= MAX_TIMEOUT_S:
            raise ValueError("must be more than 0s and at most 8760h")
        return value


class Agent(Strict):
    name: str = Field(min_length=1, max_length=100)
    token_env: str = Field(min_length=1)
    responders: list[ResponderField] | None = Field(default=None, min_length=1)

    @field_validator("token_env")
    @classmethod
    def _token_set(cls, value: str) -> str:
        if not os.environ.get(value):
            raise ValueError(f"environment variable {value} is not set")
        return value

    def token(self) -> str:
        return os.environ[self.token_env]


class Slack(Strict):
    default_channel: str | None = Field(default=None, pattern=r"^[CGD][A-Z0-9]+$")


class GitHub(Strict):
    post_questions: bool = False


class Escalation(Strict):
    responders: list[ResponderField] = Field(min_length=1)
    timeout: Duration = DEFAULT_TIMEOUT_S

    @field_validator("timeout")
    @classmethod
    def _in_range(cls, value: float) -> float:
        return _gate_timeout(value)


def _gate_timeout(value: float) -> float:
    if not MIN_GATE_TIMEOUT_S <= value <= MAX_TIMEOUT_S:
        raise ValueError("must be between 1m and 8760h")
    return value


def _operation_pattern(pattern: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*(\.|\.\*)?", pattern):
        raise ValueError(
            f"{pattern!r} is not an operation name or a prefix ending in '.' or '.*'"
        )
    name = pattern.removesuffix("*")
    if name == "human" or name.startswith(RESERVED_PREFIX):
        raise ValueError(f"{pattern!r}: operations under 'human.' are aye's own and cannot be gated")
    return pattern


class Gate(Strict):
    operations: list[str] = Field(min_length=1)
    responders: list[ResponderField] | None = Field(default=None, min_length=1)
    timeout: Duration = DEFAULT_TIMEOUT_S
    escalate: Escalation | None = None

    @field_validator("operations")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        return [_operation_pattern(p) for p in value]

    @field_validator("timeout")
    @classmethod
    def _in_range(cls, value: float) -> float:
        return _gate_timeout(value)

    @model_validator(mode="after")
    def _total(self) -> Gate:
        if self.escalate and self.timeout + self.escalate.timeout > MAX_TIMEOUT_S:
            raise ValueError("timeout and escalate.timeout together must be at most 8760h")
        return self

    def specificity(self, operation: str) -> int:
        """How closely this gate names the operation: -1 when it does not match at all.

        An exact name beats any prefix; a longer prefix beats a shorter one.
        """
        best = -1
        for pattern in self.operations:
            prefix = pattern.removesuffix("*")
            if prefix.endswith("."):
                if operation.startswith(prefix) and len(operation) > len(prefix):
                    best = max(best, len(prefix))
            elif operation == pattern:
                best = max(best, 10_000 + len(pattern))
        return best


class Config(Strict):
    defaults: Defaults = Field(default_factory=Defaults)
    agents: list[Agent] = Field(default_factory=list)
    slack: Slack = Field(default_factory=Slack)
    github: GitHub = Field(default_factory=GitHub)
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
        """The most specific gate matching `operation` (see Gate.specificity), or None."""
        best: tuple[int, Gate] | None = None
        for gate in self.gates:
            score = gate.specificity(operation)
            if score >= 0 and (best is None or score > best[0]):
                best = (score, gate)
        return best[1] if best else None


def key_path(loc: tuple[int | str, ...], first: int = 0) -> str:
    """pydantic's error location as people write it: `gates[0].timeout`, or with `first=1`,
    `gates[1].timeout` for the first gate, as people count the `[[gates]]` of a TOML file."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part + first}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def load_config(path: Path) -> Config:
    """Read and validate the config file; a missing file means all defaults."""
    if not path.exists():
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
