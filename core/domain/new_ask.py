"""Whether a new ask is one aye can take, whichever way it came (POST /v1/asks, MCP's ask
tool): its deadline within reach, its format going with its options, schema and bounds. Each
refusal names the field the agent must fix; the API words it as a 422."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from core.domain import formats, forms, payloads
from core.domain.policy import MAX_TIMEOUT_S


class AskSpec(Protocol):
    """What an agent's new ask says of its form (the API's request body has these fields)."""

    @property
    def format(self) -> str | None: ...
    @property
    def options(self) -> list[str] | None: ...
    @property
    def verifier(self) -> str | None: ...
    @property
    def form_schema(self) -> dict[str, Any] | None: ...
    @property
    def min(self) -> int | None: ...
    @property
    def max(self) -> int | None: ...
    @property
    def danger(self) -> bool: ...


def check_times(deadline: float | None, timeout_s: float | None, now: float) -> None:
    """A deadline in the future and at most a year ahead; a timeout of 1 s to a year."""
    if deadline is not None:
        if deadline <= now:
            raise FormatProblem("deadline", "must be in the future")
        if deadline > now + MAX_TIMEOUT_S:
            raise FormatProblem("deadline", "at most 8760h ahead")
    if timeout_s is not None and not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise FormatProblem("timeout_s", "must be 1 to 31536000 seconds")


class FormatProblem(ValueError):
    """The ask's format does not go with its other fields: `field` names which."""

    def __init__(self, field: str, words: str) -> None:
        super().__init__(f"{field}: {words}")
        self.field, self.words = field, words


def check_format(body: AskSpec) -> str:
    """The ask's format (the default when none is given), once it goes with its options,
    schema and bounds; FormatProblem naming the field otherwise."""
    fmt = body.format or (formats.CHOICE if body.options else formats.TEXT)
    picks = fmt in (formats.CHOICE, formats.MULTI)
    if picks and body.options is None:
        raise FormatProblem("options", f"a {fmt} ask needs 2 to 20 options")
    if not picks and body.options is not None:
        raise FormatProblem("options", f"a {fmt} ask takes no options")
    if fmt != formats.EXTERNAL and body.verifier is not None:
        raise FormatProblem("verifier", 'only an external ask (format "external") takes a verifier')
    if fmt == formats.EXTERNAL:
        _external(body)
        if body.danger:  # an outside system answers it: there is no control to mark
            raise FormatProblem("danger", "an external ask has no control a person presses")
    elif fmt == formats.FORM:
        _schema(body, forms.check, "a form needs a schema")
    elif body.form_schema is not None:
        raise FormatProblem("schema", 'only a form or an external ask takes a schema')
    if fmt != formats.MULTI:
        for name in ("min", "max"):
            if getattr(body, name) is not None:
                raise FormatProblem(name, f'only a multi (format "multi") takes {name}')
        return fmt
    count = len(body.options or [])
    low, high = body.min if body.min is not None else 1, body.max if body.max is not None else count
    if not 1 <= low <= count:
        raise FormatProblem("min", f"must be from 1 to {count} (the number of options)")
    if not 1 <= high <= count:
        raise FormatProblem("max", f"must be from 1 to {count} (the number of options)")
    if low > high:
        raise FormatProblem("min", "must not be above max")
    return fmt


def _external(body: AskSpec) -> None:
    """An external ask names its verifier (no door opens without one) and the payload's
    schema, which may be any JSON Schema."""
    if body.verifier is None:
        raise FormatProblem("verifier", "an external ask needs the verifier its door checks")
    _schema(body, payloads.check, "an external ask needs the schema of the payload it waits for")


def _schema(body: AskSpec, check: Callable[[Any], object], missing: str) -> None:
    """The ask's schema, present and passing `check` (the form subset, or any JSON Schema)."""
    if body.form_schema is None:
        raise FormatProblem("schema", missing)
    try:
        check(body.form_schema)
    except forms.SchemaProblem as problem:
        raise FormatProblem(problem.field, problem.words) from None
