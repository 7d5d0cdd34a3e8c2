"""The HTTP plumbing of the `/v1` API: its error body, reading and validating JSON bodies and
query parameters, and the middleware that turns every failure into the contract's error."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import sqlalchemy.exc
from aiohttp import web
from pydantic import BaseModel, ValidationError

from ask_api.schemas import TooDeep, loads, unusable, words
from core.app.ports import StoreClosing
from core.domain.bodies import DuplicateKey, encoding_problem
from core.domain.limits import Limited
from core.domain.policy import key_path
from core.domain.types import CallbackRefused

log = logging.getLogger("aye.api")

MAX_BODY = 64 * 1024
# Query parameters are plain ASCII integers (not `²`, `١`, `1.5`, ` 1e1`), short enough to read.
PLAIN_INTEGER = re.compile(r"[0-9]{1,20}")
Model = TypeVar("Model", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.retry_after: int | None = None

    def response(self) -> web.Response:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        response = web.json_response(body, status=self.status)
        if self.retry_after is not None:
            response.headers["Retry-After"] = str(self.retry_after)
        return response


class DuplicateKeyError(ApiError):
    """400 `malformed_body` naming a key that one object of the body holds twice."""

    def __init__(self, exc: DuplicateKey) -> None:
        super().__init__(400, "malformed_body", f"{exc}: a key may appear only once")


def int_param(text: str, name: str, low: int, high: int, what: str) -> int:
    """The query parameter `name`'s text: a plain ASCII integer from `low` to `high`."""
    if not PLAIN_INTEGER.fullmatch(text) or not low <= int(text) <= high:
        raise ApiError(422, "invalid_field", f"{name}: {what}", name)
    return int(text)


def field_path(loc: tuple[int | str, ...]) -> str:
    """`field` for an error's location: `options[1]`, `work.slack.channel`; a key that is the
    empty string shows as `""`, so that it still names something."""
    return key_path(tuple('""' if part == "" else part for part in loc))


def _invalid(exc: ValidationError) -> ApiError:
    err = exc.errors(include_input=False)[0]
    loc = tuple(p for p in err["loc"] if p not in ("function-after",))
    msg = words(err)
    field = field_path(loc) or None
    return ApiError(422, "invalid_field", f"{field}: {msg}" if field else msg, field)


async def read_body(request: web.Request) -> bytes:
    """The body's exact bytes, refusing more than 64 KiB before reading it all."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "body_too_large", "the body is over 64 KiB")
    size, chunks = 0, []
    async for chunk in request.content.iter_chunked(16384):
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, "body_too_large", "the body is over 64 KiB")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: web.Request) -> Any:
    """The body as JSON, refusing more than 64 KiB before reading it all."""
    return json_of(await read_body(request))


def json_of(raw: bytes) -> Any:
    """`raw` as JSON in UTF-8 without a byte-order mark, no object holding a key twice (an
    empty body is null); 400 `malformed_body` otherwise."""
    problem = encoding_problem(raw)
    if problem is not None:
        raise ApiError(400, "malformed_body", problem)
    try:
        return loads(raw or b"null")
    except DuplicateKey as exc:
        raise DuplicateKeyError(exc) from None
    except TooDeep:
        raise ApiError(400, "malformed_body", "the body is nested deeper than 64 levels") from None
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "malformed_body", "the body is not valid JSON") from None


async def parse(request: web.Request, model: type[Model]) -> tuple[Model, dict[str, Any]]:
    data = await read_json(request)
    if not isinstance(data, dict):
        raise ApiError(400, "malformed_body", "the body must be a JSON object")
    bad = unusable(data)
    if bad is not None:
        field = field_path(bad.loc)
        raise ApiError(422, "invalid_field", f"{field}: {bad.problem}", field)
    try:
        return model.model_validate(data), data
    except ValidationError as exc:
        raise _invalid(exc) from None


def callback_refused(exc: CallbackRefused) -> ApiError:
    """A callback the operator did not allow this agent: 422 naming callback_url."""
    return ApiError(422, "invalid_field", f"callback_url: {exc}", "callback_url")


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return exc.response()
    except Limited as exc:
        limited = ApiError(429, exc.code, exc.message)
        limited.retry_after = exc.retry_after
        return limited.response()
    except CallbackRefused as exc:  # the core's check (core.domain.types.AgentInfo)
        return callback_refused(exc).response()
    except web.HTTPRequestEntityTooLarge:
        return ApiError(413, "body_too_large", "the body is over 64 KiB").response()
    except (sqlalchemy.exc.TimeoutError, sqlalchemy.exc.OperationalError, StoreClosing):
        # The store is overloaded or away: say so and when to come back, not a bare 500.
        # The route's pattern, never the path: a path can hold an external ask's ticket.
        resource = request.match_info.route.resource
        log.warning("store busy route=%s", resource.canonical if resource else "(no route)")
        response = ApiError(503, "busy", "the store is busy; try again shortly").response()
        response.headers["Retry-After"] = "1"
        return response
    except web.HTTPException as exc:
        if exc.status >= 400 and request.path.startswith("/v1"):
            response = ApiError(exc.status, exc.reason.lower().replace(" ", "_"), exc.reason).response()
            if "Allow" in exc.headers:  # a 405 says which methods the route takes (RFC 9110)
                response.headers["Allow"] = exc.headers["Allow"]
            return response
        raise
