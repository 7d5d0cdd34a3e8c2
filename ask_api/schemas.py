"""Request bodies of the ask API, validated by pydantic; errors name the field."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from core.domain.bodies import STRICT
from core.domain.kinds import VERIFIER_NAME, Kinds

MAX_TEXT = 3000
MAX_OPTION = 75
MAX_DEPTH = 64  # a body nested deeper is malformed: the contract's limit, far above any real ask
# A lone surrogate: a JSON `\ud800` escape, or a header's non-UTF-8 byte (surrogateescape).
SURROGATE = re.compile("[\ud800-\udfff]")

class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkBase(Body):
    """`work`: exactly one variant, named by its surface (`{"slack": {…}}`, `{"github": {…}}`);
    the variants come from the process's surfaces (a core.domain.kinds.Kinds, see bodies())."""

    @model_validator(mode="after")
    def _one(self) -> WorkBase:
        given = [name for name in type(self).model_fields if getattr(self, name) is not None]
        if len(given) != 1:
            shapes = " or ".join(f'{{"{name}": {{…}}}}' for name in type(self).model_fields)
            raise ValueError(f"work is either {shapes}")
        return self

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _https(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("must be an absolute https:// URL")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError("must not contain spaces or control characters")
    return value


# An absolute https:// URL without spaces: a medium's, a start's links.
Link = Annotated[StrictStr, Field(min_length=9, max_length=2000), AfterValidator(_https)]


class Media(Body):
    """A picture or a link shown beside the question."""

    kind: Literal["image", "link"]
    url: Link
    caption: Annotated[StrictStr, Field(max_length=200)] | None = None


def _callback_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http(s) URL")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError("must not contain spaces or control characters")
    return value


CallbackUrl = Annotated[StrictStr, Field(min_length=8, max_length=2000)]


def _time_text(value: Any) -> Any:
    """A deadline is ISO 8601 text: pydantic would also read a number (or digits) as Unix
    seconds, which the API does not promise."""
    if not isinstance(value, str) or value.strip().lstrip("+-").replace(".", "").isdigit():
        raise ValueError("must be a time like 2026-12-01T09:00:00Z")
    return value


class AskBodyBase(Body):
    question: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT)]
    options: list[Annotated[StrictStr, Field(min_length=1, max_length=MAX_OPTION)]] | None = Field(
        default=None, min_length=2, max_length=20
    )
    context: Annotated[StrictStr, Field(max_length=MAX_TEXT)] | None = None
    deadline: Annotated[AwareDatetime, BeforeValidator(_time_text)] | None = None
    timeout_s: Annotated[StrictInt, Field(ge=1, le=31536000)] | None = None
    work: WorkBase | None = None  # the registered variants: see bodies()
    key: Annotated[StrictStr, Field(min_length=1, max_length=200)] | None = None
    sensitive: StrictBool = False
    # Destructive: the affirmative answer is a danger-styled control with a confirmation step.
    danger: StrictBool = False
    format: Literal["text", "choice", "multi", "confirm", "ack", "form", "external"] | None = None
    form_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    min: StrictInt | None = None
    max: StrictInt | None = None
    media: list[Media] | None = Field(default=None, max_length=5)
    callback_url: CallbackUrl | None = None
    # An external ask's verifier: one of the operator's [[verifiers]] this agent may name.
    verifier: Annotated[StrictStr, Field(pattern=VERIFIER_NAME.pattern)] | None = None

    _question = field_validator("question")(_not_blank)
    _callback = field_validator("callback_url")(_callback_url)

    @field_validator("options")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        seen: set[str] = set()
        for option in value:
            if not option.strip():
                raise ValueError("options must not be blank")
            folded = option.strip().casefold()
            if folded in seen:
                raise ValueError(f"options must be distinct (ignoring case): {option!r} repeats")
            seen.add(folded)
        return value

    @field_validator("timeout_s")
    @classmethod
    def _not_with_deadline(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and info.data.get("deadline") is not None:
            raise ValueError("give deadline or timeout_s, not both")
        return value


class AnswerBody(Body):
    # A string from a person, or JSON for a typed format: a list, a bool, a number, an object.
    answer: Any  # core.domain.formats reads it, and says what does not fit
    note: Annotated[StrictStr, Field(max_length=MAX_TEXT)] | None = None


class OutcomeBody(Body):
    """`POST /v1/calls/outcome`: what ran after the agent used an approval."""

    approval: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    outcome: Literal["ran", "failed", "not_run"]
    detail: Annotated[StrictStr, Field(max_length=500)] | None = None
    # Which use of the approval (1, 2, …); the latest when left out. Bounded, so that it fits
    # the store's integer.
    use: Annotated[StrictInt, Field(ge=1, le=1_000_000)] | None = None


class WaitBody(Body):
    """`POST /v1/asks/wait`: park on several asks at once."""

    ids: list[Annotated[StrictStr, Field(min_length=1, max_length=64)]] = Field(
        min_length=1, max_length=100
    )
    until: Literal["all", "any"] = "all"
    timeout: Annotated[StrictInt, Field(ge=0, le=300)] = 30


OPERATION_RE = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")


class CallBodyBase(Body):
    operation: Annotated[StrictStr, Field(min_length=1, max_length=200, pattern=OPERATION_RE.pattern)]
    input: Any = None
    work: WorkBase | None = None  # the registered variants: see bodies()
    # The caller's own bound on a new approval's wait (see core.app.gating.approval_values).
    timeout_s: Annotated[StrictInt, Field(ge=1, le=31536000)] | None = None
    callback_url: CallbackUrl | None = None

    _callback = field_validator("callback_url")(_callback_url)


class StartBodyBase(Body):
    """`POST /v1/starts`: may this agent start on this work? `work` is required."""

    work: WorkBase  # the registered variants: see bodies()
    title: Annotated[StrictStr, Field(max_length=200)] | None = None
    links: list[Link] | None = Field(default=None, max_length=5)
    trigger: Annotated[StrictStr, Field(max_length=200)] | None = None
    callback_url: CallbackUrl | None = None

    _callback = field_validator("callback_url")(_callback_url)


@dataclass(frozen=True, slots=True)
class Bodies:
    """The request models, with `work` made of the process's surfaces' variants."""

    ask: type[AskBodyBase]
    call: type[CallBodyBase]
    start: type[StartBodyBase]


@functools.cache
def bodies(kinds: Kinds) -> Bodies:
    """The request models of a process that knows `kinds`: built at app build, once per
    Kinds value (pydantic models are costly to build, and one Kinds gives the same ones)."""
    variants: dict[str, Any] = {
        kind.name: (kind.work_model | None, None)  # type: ignore[operator]  # with_work: set
        for kind in kinds.with_work()
    }
    work = create_model("Work", __base__=WorkBase, **variants)
    optional_work: Any = (work | None, None)
    return Bodies(
        ask=create_model("AskBody", __base__=AskBodyBase, work=optional_work),
        call=create_model("CallBody", __base__=CallBodyBase, work=optional_work),
        start=create_model("StartBody", __base__=StartBodyBase, work=(work, ...)),
    )


ONE = {"options": "option", "media": "media item", "ids": "id", "links": "link", "items": "item"}


def _agree(noun: str, count: Any) -> str:
    """`1 item`, `2 items`: the noun as many as the number."""
    return ONE.get(noun, noun) if count == 1 else noun


def words(error: Any) -> str:
    """A pydantic error (its `type`, `ctx`, `loc`) in words a person reads: `needs at least 2
    options`, `must be at most 3000 characters`, `is required`."""
    kind, ctx = str(error["type"]), error.get("ctx") or {}
    loc = [p for p in error["loc"] if isinstance(p, str)]
    noun = loc[-1] if loc and loc[-1] in ("options", "media", "ids", "links") else "items"
    fixed = {
        "missing": "is required", "extra_forbidden": "is not a field aye knows",
        "string_type": "must be text", "int_type": "must be a whole number",
        "int_parsing": "must be a whole number", "bool_type": "must be true or false",
        "list_type": "must be a list", "dict_type": "must be an object",
        "model_type": "must be an object", "model_attributes_type": "must be an object",
        "timezone_aware": "needs a time zone, like 2026-12-01T09:00:00Z",
        "datetime_type": "must be a time like 2026-12-01T09:00:00Z",
        "datetime_from_date_parsing": "must be a time like 2026-12-01T09:00:00Z",
        "datetime_parsing": "must be a time like 2026-12-01T09:00:00Z",
        "string_pattern_mismatch": "may hold letters, digits, _ and -, in parts joined by dots",
    }
    if kind in fixed:
        return fixed[kind]
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} {_agree(noun, ctx.get('min_length'))}"
    if kind == "too_long":
        return f"takes at most {ctx.get('max_length')} {_agree(noun, ctx.get('max_length'))}"
    if kind == "string_too_short":
        low = ctx.get("min_length")
        return "must not be empty" if low == 1 else f"must be at least {low} characters"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind in ("greater_than_equal", "greater_than"):
        return f"must be at least {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"must be at most {ctx.get('le', ctx.get('lt'))}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    return str(error["msg"]).removeprefix("Value error, ")


def parse_time(value: datetime) -> float:
    return value.timestamp()


# -- JSON that every store can hold -----------------------------------------------------------


class TooDeep(ValueError):
    """The JSON nests deeper than MAX_DEPTH levels."""


@dataclass(frozen=True, slots=True)
class Unusable:
    """A value no store can hold, where it is (`loc`, as pydantic's) and what is wrong."""

    loc: tuple[int | str, ...]
    problem: str


def loads(raw: bytes) -> Any:
    """The body as JSON (ValueError when it is not JSON, DuplicateKey when an object holds a
    key twice); TooDeep past MAX_DEPTH levels."""
    try:
        data = STRICT.decode(raw.decode("utf-8", "surrogatepass"))
    except RecursionError:  # nested deeper than the interpreter's stack: far past MAX_DEPTH
        raise TooDeep from None
    if _deeper_than(data, MAX_DEPTH):
        raise TooDeep
    return data


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels (the outermost is level 1)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if level > limit:
                return True
            stack.extend((child, level + 1) for child in item)
    return False


def unusable(value: Any, loc: tuple[int | str, ...] = ()) -> Unusable | None:
    """The first string with NUL or a lone surrogate (PostgreSQL and UTF-8 cannot hold them),
    or number that is not finite, in document order; None when all is well. At most
    MAX_DEPTH levels deep (loads saw to it), so the recursion is bounded."""
    if isinstance(value, str):
        problem = _text_problem(value)
        return Unusable(loc, problem) if problem else None
    if isinstance(value, float):
        return None if math.isfinite(value) else Unusable(loc, "numbers must be finite")
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = unusable(item, (*loc, index))
            if found:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = _text_problem(key)
            if problem:
                return Unusable((*loc, shown(key)), f"field name {problem}")
            found = unusable(item, (*loc, key))
            if found:
                return found
    return None


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL (\\u0000)"
    if SURROGATE.search(text):
        return "must not contain a lone surrogate (\\ud800 to \\udfff)"
    return None


def shown(text: str) -> str:
    """`text` with NUL and lone surrogates written as `\\uXXXX`, so an error can name it."""
    return SURROGATE.sub(_escape, text.replace("\x00", "\\u0000"))


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"
