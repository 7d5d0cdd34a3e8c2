"""Request bodies of the ask API, validated by pydantic; errors name the field."""

from __future__ import annotations

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
