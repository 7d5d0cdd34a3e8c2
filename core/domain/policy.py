"""The operator's policy, typed: defaults, gates and escalation, durations and responders.

Validated once at start (bot/config.py reads the file); the core decides with these objects.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from core.domain.kinds import EXTERNAL_KIND
from core.domain.responders import Responder

DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
HOUR = 3600.0
MAX_TIMEOUT_S = 8760 * HOUR
MIN_GATE_TIMEOUT_S = 60.0
DEFAULT_TIMEOUT_S = 24 * HOUR
RESERVED_PREFIX = "human."


def parse_duration(text: str) -> float:
    """`90s`, `45m`, `2h`, `1h30m`, `7d` -> seconds. Raises ValueError with a readable reason."""
    match = DURATION_RE.match(text.strip()) if isinstance(text, str) else None
    if not text or match is None or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration like 90s, 45m, 2h, 1h30m or 7d")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return float(days * 86400 + hours * 3600 + minutes * 60 + seconds)


def _duration(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError("must be a duration string like 90s, 45m, 2h, 1h30m or 7d")
    return parse_duration(value)


Duration = Annotated[float, BeforeValidator(_duration)]


def _responder(value: Any) -> Responder:
    if not isinstance(value, str):
        raise ValueError("a responder is a string like slack:U0123ABCD or github:octocat")
    responder = Responder.parse(value)
    if responder.kind == EXTERNAL_KIND:
        raise ValueError(f"{value!r}: an outside system answers only an external ask, through "
                         "its signed door; it cannot be a responder")
    return responder


ResponderField = Annotated[Responder, BeforeValidator(_responder)]


class Strict(BaseModel):
    """Config sections: unknown keys are errors, and no value is coerced (a string is not a
    boolean, nor a number)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Defaults(Strict):
    responders: list[ResponderField] = Field(
        default_factory=lambda: [Responder.parse("operator:local")], min_length=1
    )
    question_timeout: Duration = DEFAULT_TIMEOUT_S
    # Remind an unanswered question's Slack responders once, this long after it was asked.
    question_remind_after: Duration | None = None

    @field_validator("question_timeout")
    @classmethod
    def _in_range(cls, value: float) -> float:
        if not 0 < value <= MAX_TIMEOUT_S:
            raise ValueError("must be more than 0s and at most 8760h")
        return value

    @field_validator("question_remind_after")
    @classmethod
    def _remind_in_range(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value <= MAX_TIMEOUT_S:
            raise ValueError("must be more than 0s and at most 8760h")
        return value


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


KIND_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.?$")
START = "human.start"  # the operation an approved start is recorded as (aye's own)
START_REFUSED = "start_refused"  # a start's refusal, for good


class Gate(Strict):
    # What it gates: named operations (calls), work kinds (starts), and/or agents (narrowing
    # both; alone, every start of those agents).
    operations: list[str] = Field(default_factory=list)
    kinds: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)
    responders: list[ResponderField] | None = Field(default=None, min_length=1)
    timeout: Duration = DEFAULT_TIMEOUT_S
    escalate: Escalation | None = None
    # Approval policy (see core.app.gating): distinct approvers needed; whether the work's
    # author may approve; how long a refusal answers an identical call (None: the timeout);
    # when to remind the Slack responders of an approval still open.
    approvals: int = Field(default=1, ge=1, le=5)
    prevent_self_approval: bool = False
    remember_refusal: Duration | None = None
    remind_after: Duration | None = None
    # Step-up: its approvals count only from the inbox, from a sign-in no older than this.
    sign_in_within: Duration | None = None
    # Destructive: its approvals' Approve is a danger-styled control with a confirmation step.
    danger: bool = False

    @field_validator("operations")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        return [_operation_pattern(p) for p in value]

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, value: list[str]) -> list[str]:
        for kind in value:
            if not KIND_RE.match(kind):
                raise ValueError(f"{kind!r} is not a work kind like github.issue or a prefix like github.")
        return value

    @field_validator("timeout")
    @classmethod
    def _in_range(cls, value: float) -> float:
        return _gate_timeout(value)

    @field_validator("remember_refusal")
    @classmethod
    def _remember_in_range(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value <= MAX_TIMEOUT_S:
            raise ValueError("must be from 0s to 8760h")
        return value

    @field_validator("sign_in_within")
    @classmethod
    def _step_up_in_range(cls, value: float | None) -> float | None:
        if value is not None and not 60 <= value <= 86400:
            raise ValueError("must be from 1m to 24h")
        return value

    @field_validator("remind_after")
    @classmethod
    def _remind_positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be more than 0s")
        return value

    @model_validator(mode="after")
    def _total(self) -> Gate:
        if self.escalate and self.timeout + self.escalate.timeout > MAX_TIMEOUT_S:
            raise ValueError("timeout and escalate.timeout together must be at most 8760h")
        if self.remind_after is not None and self.remind_after >= self.timeout:
            raise ValueError("remind_after must be shorter than timeout")
        if not (self.operations or self.kinds or self.agents):
            raise ValueError("a gate needs operations, kinds or agents")
        return self

    def start_specificity(self, kind: str | None, agent: str) -> int:
        """How closely this gate names a start of `kind` work by `agent`: -1 when it does
        not gate it. An exact kind beats a prefix, a longer prefix a shorter one, and any kind
        a gate of agents alone."""
        if self.agents and agent not in self.agents:
            return -1
        if not self.kinds:
            return 0 if (self.agents and not self.operations) else -1
        best = -1
        for pattern in self.kinds:
            if pattern.endswith("."):
                if kind is not None and kind.startswith(pattern):
                    best = max(best, len(pattern))
            elif kind == pattern:
                best = max(best, 10_000)
        return best

    def names_kinds_within(self, surface: str, agent: str) -> bool:
        """Whether this gate tells one kind of `surface`'s works from another for `agent`
        (`github.pull`, not all of `github.`): then a start's kind must be read, not taken."""
        if self.agents and agent not in self.agents:
            return False
        prefix = f"{surface}."
        return any(p.startswith(prefix) and p != prefix for p in self.kinds)

    def any_kind_specificity(self, surface: str, agent: str) -> int:
        """As start_specificity, for a work of `surface` whose kind is not known: the best
        score over every kind it could be (a kind of that surface), -1 when none is gated."""
        if self.agents and agent not in self.agents:
            return -1
        if not self.kinds:
            return 0 if (self.agents and not self.operations) else -1
        prefix, best = f"{surface}.", -1
        for pattern in self.kinds:
            if pattern.endswith(".") and (prefix.startswith(pattern) or pattern.startswith(prefix)):
                best = max(best, len(pattern))
            elif pattern.startswith(prefix):
                best = max(best, 10_000)
        return best

    @property
    def remembers(self) -> float:
        """How long a refusal answers an identical call at once: remember_refusal, by
        default the gate's timeout; 0 turns it off."""
        return self.timeout if self.remember_refusal is None else self.remember_refusal

    def specificity(self, operation: str, agent: str | None = None) -> int:
        """How closely this gate names the operation: -1 when it does not match at all.

        An exact name beats any prefix; a longer prefix beats a shorter one. Case does not
        matter: `DEPLOY.prod` must not slip past a `deploy.` gate.
        """
        best = -1
        operation = operation.lower()
        if agent is not None and self.agents and agent not in self.agents:
            return -1
        for pattern in self.operations:
            pattern = pattern.lower()
            prefix = pattern.removesuffix("*")
            if prefix.endswith("."):
                if operation.startswith(prefix) and len(operation) > len(prefix):
                    best = max(best, len(prefix))
            elif operation == pattern:
                best = max(best, 10_000 + len(pattern))
        return best


def start_gate_for(gates: list[Gate], kind: str | None, agent: str) -> Gate | None:
    """The most specific gate of a start (see Gate.start_specificity), or None."""
    best: tuple[int, Gate] | None = None
    for gate in gates:
        score = gate.start_specificity(kind, agent)
        if score >= 0 and (best is None or score > best[0]):
            best = (score, gate)
    return best[1] if best else None


def any_kind_gate_for(gates: list[Gate], surface: str, agent: str) -> Gate | None:
    """The most specific gate of a start on `surface` whose kind is not known, or None."""
    best: tuple[int, Gate] | None = None
    for gate in gates:
        score = gate.any_kind_specificity(surface, agent)
        if score >= 0 and (best is None or score > best[0]):
            best = (score, gate)
    return best[1] if best else None


def gate_for(gates: list[Gate], operation: str, agent: str | None = None) -> Gate | None:
    """The most specific gate matching `operation` (see Gate.specificity), or None; a gate
    narrowed to `agents` matches only their calls."""
    best: tuple[int, Gate] | None = None
    for gate in gates:
        score = gate.specificity(operation, agent)
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
