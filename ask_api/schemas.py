"""Request bodies of the ask API, validated by pydantic; errors name the field."""

from __future__ import annotations

import re
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
    field_validator,
    model_validator,
)

MAX_TEXT = 3000
MAX_OPTION = 75

NonBlank = Annotated[StrictStr, Field(min_length=1)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SlackWork(Body):
    channel: Annotated[StrictStr, Field(pattern=r"^[CGD][A-Z0-9]{2,30}$")]
    thread_ts: Annotated[StrictStr, Field(pattern=r"^\d{1,12}\.\d{1,8}$")]


class GitHubWork(Body):
    repo: Annotated[
        StrictStr, Field(pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
    ]
    number: Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]


class Work(Body):
    slack: SlackWork | None = None
    github: GitHubWork | None = None

    @model_validator(mode="after")
    def _one(self) -> Work:
        if (self.slack is None) == (self.github is None):
            raise ValueError("work is either {\"slack\": {…}} or {\"github\": {…}}")
        return self

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class AskBody(Body):
    question: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT)]
    options: list[Annotated[StrictStr, Field(min_length=1, max_length=MAX_OPTION)]] | None = Field(
        default=None, min_length=2, max_length=20
    )
    context: Annotated[StrictStr, Field(max_length=MAX_TEXT)] | None = None
    deadline: AwareDatetime | None = None
    timeout_s: StrictInt | None = None
    work: Work | None = None
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


class CallBody(Body):
    operation: Annotated[StrictStr, Field(min_length=1, max_length=200, pattern=OPERATION_RE.pattern)]
    input: Any = None
    work: Work | None = None


def parse_time(value: datetime) -> float:
    return value.timestamp()
