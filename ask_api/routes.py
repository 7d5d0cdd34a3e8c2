"""`/v1` routes: agents ask, wait, withdraw and call gated operations; the operator answers."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import sqlalchemy.exc
from aiohttp import web
from pydantic import BaseModel, ValidationError

from ask_api.events import stream
from ask_api.schemas import (
    SURROGATE,
    AnswerBody,
    FormatProblem,
    TooDeep,
    bodies,
    check_format,
    loads,
    parse_time,
    unusable,
    words,
)
from ask_api.tokens import Caller, TokenBook
from ask_api.views import ask_view, operator_view
from bot.core import rules
from bot.core.asks import Asks
from bot.core.config import MAX_TIMEOUT_S, gate_for, key_path
from bot.core.gates import Gates
from bot.core.responders import OPERATOR
from bot.core.types import KeyReused, NewAsk, NoReachableResponder

log = logging.getLogger("aye.api")

MAX_BODY = 64 * 1024
MAX_WAIT_S = 300
DEFAULT_WAIT_S = 30
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_SEQ = 2**63 - 1  # asks are numbered in a 64-bit column
# Query parameters are plain ASCII integers (not `²`, `١`, `1.5`, ` 1e1`), short enough to read.
PLAIN_INTEGER = re.compile(r"[0-9]{1,20}")
CALLER = web.RequestKey("caller", Caller)
Model = TypeVar("Model", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field

    def response(self) -> web.Response:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return web.json_response(body, status=self.status)


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


async def read_json(request: web.Request) -> Any:
    """The body as JSON, refusing more than 64 KiB before reading it all."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "body_too_large", "the body is over 64 KiB")
    size, chunks = 0, []
    async for chunk in request.content.iter_chunked(16384):
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, "body_too_large", "the body is over 64 KiB")
        chunks.append(chunk)
    try:
        return loads(b"".join(chunks) or b"null")
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


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return exc.response()
    except web.HTTPRequestEntityTooLarge:
        return ApiError(413, "body_too_large", "the body is over 64 KiB").response()
    except (sqlalchemy.exc.TimeoutError, sqlalchemy.exc.OperationalError):
        # The store is overloaded or away: say so and when to come back, not a bare 500.
        log.warning("store busy path=%s", request.path)
        response = ApiError(503, "busy", "the store is busy; try again shortly").response()
        response.headers["Retry-After"] = "1"
        return response
    except web.HTTPException as exc:
        if exc.status >= 400 and request.path.startswith("/v1"):
            return ApiError(exc.status, exc.reason.lower().replace(" ", "_"), exc.reason).response()
        raise


def taken(ask: Any, now: Any) -> dict[str, Any]:
    """The answer route's 200: taken, and for an approval still short of its quorum, the
    count so far."""
    out: dict[str, Any] = {"outcome": "taken", "ref": rules.ref(ask)}
    needed = getattr(now, "approvals_needed", None) or 1
    if now is not None and needed > 1 and now.status == rules.OPEN:
        out.update(approvals=len(now.approvers or []), needed=needed)
    return out


class AskApi:
    def __init__(
        self, asks: Asks, gates: Gates, tokens: TokenBook,
        session_ok: Callable[[web.Request], bool] | None = None,
    ) -> None:
        """`session_ok` says whether a request carries the web inbox's operator session,
        which `GET /v1/events` takes as the operator (the inbox's page subscribes with it)."""
        self.session_ok = session_ok
        self.asks = asks
        self.gates = gates
        self.tokens = tokens
        self.bodies = bodies()

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/asks", self.create),
            web.get("/v1/asks", self.list),
            web.get("/v1/asks/{id}", self.get),
            web.get("/v1/asks/{id}/wait", self.wait),
            web.delete("/v1/asks/{id}", self.withdraw),
            web.post("/v1/asks/{id}/answer", self.answer),
            web.post("/v1/calls", self.call),
            web.get("/v1/events", self.events),
        ]

    @web.middleware
    async def auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/v1/"):
            return await handler(request)
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        # Bytes that are not UTF-8 arrive as lone surrogates (surrogateescape): no token has them.
        usable = scheme.lower() == "bearer" and not SURROGATE.search(token)
        caller = self.tokens.caller(token.strip()) if usable else None
        if caller is None and request.path == "/v1/events" and self._in_session(request):
            caller = Caller(None)
        if caller is None:
            raise ApiError(401, "unauthorized", "a valid bearer token is required")
        request[CALLER] = caller
        return await handler(request)

    # -- helpers ---------------------------------------------------------------------------

    def _in_session(self, request: web.Request) -> bool:
        return self.session_ok is not None and self.session_ok(request)

    @staticmethod
    def _agent(request: web.Request) -> Caller:
        caller = request[CALLER]
        if caller.is_operator:
            raise ApiError(403, "agents_only", "this route takes an agent's token")
        return caller

    async def _ask(self, request: web.Request) -> tuple[Caller, Any]:
        caller = request[CALLER]
        agent = caller.agent.name if caller.agent else None
        ident = request.match_info["id"]
        # Ids and refs are printable ASCII: anything else (NUL, `%ED%A0%80`, `é`) names no ask,
        # and must not reach a store that refuses it.
        plausible = ident.isascii() and ident.isprintable()
        ask = await self.asks.find(ident, agent) if plausible else None
        if ask is None:
            raise ApiError(404, "not_found", "no such ask")
        return caller, ask

    def _remembers(self, ask: Any) -> float | None:
        """How long the gate of an approval's operation remembers its refusal, now."""
        gate = gate_for(self.gates.gates, ask.operation) if ask.operation else None
        return gate.remembers if gate else None

    async def _view(self, caller: Caller, ask: Any) -> dict[str, Any]:
        if caller.is_operator:
            return operator_view(ask, await self.asks.history(ask.seq), self._remembers(ask))
        if ask.sensitive:
            if not await self.asks.mark_read(ask):
                # Another read took the answer first (and erased it): show it as it is now.
                ask = await self.asks.by_seq(ask.seq) or ask
            return ask_view(ask)
        self.asks.read_later(ask)
        return ask_view(ask)

    # -- routes ------------------------------------------------------------------------------

    async def create(self, request: web.Request) -> web.Response:
        caller = self._agent(request)
        body, raw = await parse(request, self.bodies.ask)
        now = self.asks.clock.now()
        deadline = None
        if body.deadline is not None:
            deadline = parse_time(body.deadline)
            if deadline <= now:
                raise ApiError(422, "invalid_field", "deadline: must be in the future", "deadline")
            if deadline > now + MAX_TIMEOUT_S:
                raise ApiError(
                    422, "invalid_field", "deadline: at most 8760h ahead", "deadline"
                )
        if body.timeout_s is not None and not 0 < body.timeout_s <= MAX_TIMEOUT_S:
            raise ApiError(
                422, "invalid_field", "timeout_s: must be 1 to 31536000 seconds", "timeout_s"
            )
        try:
            fmt = check_format(body)
        except FormatProblem as problem:
            raise ApiError(422, "invalid_field", str(problem), problem.field) from None
        new = NewAsk(
            question=body.question, options=body.options, context=body.context,
            deadline=deadline, timeout_s=body.timeout_s,
            work=body.work.as_dict() if body.work else None, key=body.key,
            sensitive=body.sensitive, body=raw, format=fmt, form_schema=body.form_schema,
            pick_min=body.min, pick_max=body.max,
            media=[m.model_dump(exclude_none=True) for m in body.media] if body.media else None,
        )
        assert caller.agent is not None
        try:
            ask, created = await self.asks.create_question(caller.agent, new)
        except KeyReused:
            raise ApiError(
                409, "key_reused", "this key was used before with a different body", "key"
            ) from None
        except NoReachableResponder:
            raise ApiError(
                422, "no_reachable_responder",
                "none of this question's responders can be reached on a running surface",
            ) from None
        if created:
            return web.json_response(ask_view(ask), status=201)
        # The earlier ask, as it stands: a read like any other (a sensitive answer is erased).
        return web.json_response(await self._view(caller, ask))

    async def events(self, request: web.Request) -> web.StreamResponse:
        return await stream(request, self.asks, request[CALLER])

    async def get(self, request: web.Request) -> web.Response:
        caller, ask = await self._ask(request)
        return web.json_response(await self._view(caller, ask))

    async def wait(self, request: web.Request) -> web.Response:
        text = request.query.get("timeout", str(DEFAULT_WAIT_S))
        timeout = int_param(text, "timeout", 0, MAX_WAIT_S, "whole seconds from 0 to 300")
        caller, ask = await self._ask(request)
        ask = await self.asks.wait(ask, timeout)
        return web.json_response(await self._view(caller, ask))

    async def withdraw(self, request: web.Request) -> web.Response:
        caller, ask = await self._ask(request)
        by = "operator:local" if caller.is_operator else f"agent:{ask.agent}"
        done = await self.asks.withdraw(ask, by)
        if done is None:
            raise ApiError(409, "closed", f"the ask is already {ask.status}")
        return web.json_response(await self._view(caller, done))

    async def list(self, request: web.Request) -> web.Response:
        caller = request[CALLER]
        status = request.query.get("status") or None
        if status is not None and status not in rules.STATUSES:
            raise ApiError(
                422, "invalid_field", f"status: one of {', '.join(rules.STATUSES)}", "status"
            )
        limit = int_param(
            request.query.get("limit", str(DEFAULT_LIMIT)), "limit", 1, MAX_LIMIT,
            f"an integer from 1 to {MAX_LIMIT}",
        )
        cursor = None
        if cursor_text := request.query.get("cursor"):  # absent or empty: the first page
            cursor = int_param(cursor_text, "cursor", 1, MAX_SEQ, "not a cursor from this API")
        agent = caller.agent.name if caller.agent else None
        asks, more = await self.asks.list_asks(agent, status, limit, cursor)
        if caller.is_operator:
            histories = await self.asks.histories([a.seq for a in asks if a.seq is not None])
            views = [operator_view(a, histories.get(a.seq or 0, []), self._remembers(a))
                     for a in asks]
        else:
            # Listing reads: each sensitive answer shown here is erased, and shown only by the
            # read that erased it.
            views = [await self._view(caller, a) if a.sensitive else ask_view(a) for a in asks]
        return web.json_response(
            {"asks": views, "next_cursor": str(more) if more is not None else None}
        )

    async def answer(self, request: web.Request) -> web.Response:
        caller = request[CALLER]
        if not caller.is_operator:
            raise ApiError(403, "operator_only", "only the operator token answers here")
        body, _ = await parse(request, AnswerBody)
        _, ask = await self._ask(request)
        result = await self.asks.answer(ask, OPERATOR, body.answer, body.note, surface="cli")
        if result.taken:
            return web.json_response(taken(ask, result.ask))
        reason = result.reason or "closed"
        said = rules.REASONS.get(reason, reason)
        if reason in ("not_a_responder", "self_approval"):
            raise ApiError(403, reason, f"refused: {said}")
        if reason == "already_approved":
            raise ApiError(409, reason, f"refused: {said}")
        if reason == "author_unknown":
            raise ApiError(503, reason, f"refused: {said}")
        if reason == "invalid_answer":
            misfit = result.misfit
            message = misfit.message if misfit else said
            raise ApiError(422, "invalid_answer", f"refused: {message}",
                           misfit.field if misfit else "answer")
        raise ApiError(409, "closed", f"refused: {said}")

    async def call(self, request: web.Request) -> web.Response:
        caller = self._agent(request)
        body, _ = await parse(request, self.bodies.call)
        assert caller.agent is not None
        work = body.work.as_dict() if body.work else None
        decision = await self.gates.call(
            caller.agent, body.operation, body.input, work, body.timeout_s
        )
        if decision.decision == "allow":
            out: dict[str, Any] = {"decision": "allow"}
            if decision.approval:
                out["approval"] = decision.approval
            return web.json_response(out)
        if decision.decision == "pending" and decision.ask is not None:
            return web.json_response(
                {"decision": "pending", "ask": ask_view(decision.ask)}, status=202
            )
        if decision.repeat and decision.ask is not None:
            refused = decision.ask
            return web.json_response({
                "decision": "refuse", "error": "approval_refused",
                "message": "this exact call was refused; it is not asked again until "
                           "the refusal is forgotten",
                "by": refused.answered_by, "note": refused.answer_note, "repeat": True,
                "approval": refused.id,
            }, status=403)
        return web.json_response(
            {
                "decision": "refuse",
                "error": "approval_unavailable",
                "message": "no responder of this operation's gate can be reached for this work",
            },
            status=403,
        )
