"""Request bodies of the ask API, validated by pydantic; errors name the field."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
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

from bot.core import kinds

MAX_TEXT = 3000
MAX_OPTION = 75
MAX_DEPTH = 64  # a body nested deeper is malformed: the contract's limit, far above any real ask
# A lone surrogate: a JSON `\ud800` escape, or a header's non-UTF-8 byte (surrogateescape).
SURROGATE = re.compile("[\ud800-\udfff]")

class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkBase(Body):
    """`work`: exactly one variant, named by its surface (`{"slack": {…}}`, `{"github": {…}}`);
    the variants come from the surfaces that are registered (bot.core.kinds)."""

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


class AskBodyBase(Body):
    question: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT)]
    options: list[Annotated[StrictStr, Field(min_length=1, max_length=MAX_OPTION)]] | None = Field(
        default=None, min_length=2, max_length=20
    )
    context: Annotated[StrictStr, Field(max_length=MAX_TEXT)] | None = None
    deadline: AwareDatetime | None = None
    timeout_s: StrictInt | None = None
    work: WorkBase | None = None  # the registered variants: see bodies()
    key: Annotated[StrictStr, Field(min_length=1, max_length=200)] | None = None
    sensitive: StrictBool = False

    _question = field_validator("question")(_not_blank)

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
    answer: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT)]
    note: Annotated[StrictStr, Field(max_length=MAX_TEXT)] | None = None


OPERATION_RE = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")


class CallBodyBase(Body):
    operation: Annotated[StrictStr, Field(min_length=1, max_length=200, pattern=OPERATION_RE.pattern)]
    input: Any = None
    work: WorkBase | None = None  # the registered variants: see bodies()


@dataclass(frozen=True, slots=True)
class Bodies:
    """The request models, with `work` made of the registered surfaces' variants."""

    ask: type[AskBodyBase]
    call: type[CallBodyBase]


def bodies() -> Bodies:
    variants: dict[str, Any] = {
        kind.name: (kind.work_model | None, None)  # type: ignore[operator]  # with_work: set
        for kind in kinds.with_work()
    }
    work = create_model("Work", __base__=WorkBase, **variants)
    optional_work: Any = (work | None, None)
    return Bodies(
        ask=create_model("AskBody", __base__=AskBodyBase, work=optional_work),
        call=create_model("CallBody", __base__=CallBodyBase, work=optional_work),
    )


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
    """The body as JSON (ValueError when it is not JSON); TooDeep past MAX_DEPTH levels."""
    try:
        data = json.loads(raw)
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
