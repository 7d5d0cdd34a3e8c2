"""What the MCP tools take: the API's own request models (`bodies()`, with the registered
surfaces' work variants) plus `wait_s`, their JSON Schemas as a model reads them, and the same
checks a `/v1` body gets (size, depth, unusable values, then the model), failing with the API's
error code and field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, StrictInt, StrictStr, ValidationError, create_model

from ask_api.http import MAX_BODY, ApiError, field_path
from ask_api.schemas import AskBodyBase, Body, CallBodyBase, TooDeep, bodies, loads, unusable, words
from core.domain.kinds import Kinds

WAIT_DEFAULT_S = 50
WAIT_MAX_S = 300
WaitSeconds = Annotated[StrictInt, Field(ge=0, le=WAIT_MAX_S)]
M = TypeVar("M", bound=BaseModel)
PERSON_FORMATS = ("text", "choice", "multi", "confirm", "ack", "form")


class WaitArguments(Body):
    ref: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    wait_s: WaitSeconds = WAIT_DEFAULT_S


@dataclass(frozen=True, slots=True)
class Arguments:
    """The tools' argument models: the API's request models, plus `wait_s`."""

    ask: type[AskBodyBase]
    call: type[CallBodyBase]
    wait: type[WaitArguments] = WaitArguments

    @classmethod
    def build(cls, kinds: Kinds) -> Arguments:
        api = bodies(kinds)  # `work` made of the process's surfaces' variants, as the API's
        waiting: Any = (WaitSeconds, WAIT_DEFAULT_S)
        # The ask tool asks and waits: an external ask must hand its answer URL to the outside
        # system first, so it is made over the HTTP API (POST /v1/asks), not here.
        formats: Any = (Literal[PERSON_FORMATS] | None, None)
        return cls(
            ask=create_model("AskArguments", __base__=api.ask, wait_s=waiting, format=formats,
                             verifier=(None, Field(default=None, exclude=True))),
            call=create_model("RequestApprovalArguments", __base__=api.call, wait_s=waiting),
        )


def input_schema(model: type[BaseModel], help: Mapping[str, str]) -> dict[str, Any]:
    """The model's JSON Schema for a model to fill in: references inlined (some clients cannot
    follow `$ref`), optional fields shown by their type alone, pydantic's generated titles
    dropped, and each argument described."""
    generated = model.model_json_schema(by_alias=True)
    schema: dict[str, Any] = _plain(generated, generated.pop("$defs", {}))
    for name, spec in model.model_fields.items():
        if spec.exclude:  # not an argument of this tool (see Arguments.build)
            schema["properties"].pop(spec.alias or name, None)
    for name, text in help.items():
        if name in schema["properties"]:
            schema["properties"][name]["description"] = text
    return schema


def _plain(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_plain(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    shown = dict(node)
    options = shown.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        del shown["anyOf"]
        shown.update(next(o for o in options if o != {"type": "null"}))
        if "default" in shown and shown["default"] is None:
            del shown["default"]
    if "$ref" in shown:
        shown = {**defs[shown.pop("$ref").rsplit("/", 1)[-1]], **shown}
    out: dict[str, Any] = {}
    for key, value in shown.items():
        if key == "properties":
            out[key] = {name: _plain(sub, defs) for name, sub in value.items()}
        elif key != "title":
            out[key] = _plain(value, defs)
    return out


def checked(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments as the HTTP API would take them as a body: at most 64 KiB of JSON, at
    most 64 levels deep, with no NUL, lone surrogate or number that is not finite."""
    raw = dict(arguments or {})
    try:
        text = json.dumps(raw, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        raise ApiError(400, "malformed_body", "the arguments are not JSON") from None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BODY:
        raise ApiError(413, "body_too_large", "the arguments are over 64 KiB")
    try:
        loads(text.encode("utf-8", "surrogatepass"))
    except TooDeep:
        raise ApiError(400, "malformed_body", "the arguments nest deeper than 64 levels") from None
    except ValueError:
        pass  # NaN or a lone surrogate: unusable() names where
    bad = unusable(raw)
    if bad is not None:
        field = field_path(bad.loc)
        raise ApiError(422, "invalid_field", f"{field}: {bad.problem}", field)
    return raw


def validated(model: type[M], raw: dict[str, Any]) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors(include_input=False)[0]
        field = field_path(tuple(p for p in error["loc"] if p != "function-after")) or None
        said = words(error)
        raise ApiError(422, "invalid_field", f"{field}: {said}" if field else said, field) from None


def waiting_of(raw: dict[str, Any]) -> int:
    """`wait_s` of arguments that validated: a whole number from 0 to 300, or the default."""
    return int(raw.get("wait_s", WAIT_DEFAULT_S))


def body_of(raw: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the `/v1` body they stand for: without `wait_s` (so that a `key` used
    over HTTP and over MCP with the same body is the same ask)."""
    return {k: v for k, v in raw.items() if k != "wait_s"}
