"""`/v1` routes: agents ask, wait, withdraw and call gated operations; the operator answers."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ask_api.bounds import DEFAULT_LIMIT, DEFAULT_WAIT_S, MAX_LIMIT, MAX_WAIT_S
from ask_api.creating import create, new_ask
from ask_api.external import PREFIX as DOOR
from ask_api.http import ApiError, Handler, errors, int_param, parse
from ask_api.openapi import OpenApi
from ask_api.openapi_parts import AUDIT_HEAD
from ask_api.response_reached import send_whole
from ask_api.schemas import (
    SURROGATE,
    AnswerBody,
    OutcomeBody,
    WaitBody,
    bodies,
)
from ask_api.sse import stream
from ask_api.tokens import Caller, TokenBook
from ask_api.views import ask_view, decision_body, operator_view
from core.app.ports import AskRow, CallDecision
from core.app.service import NotReportable, NotYours, Service
from core.domain import external, formats, refs, vocabulary
from core.domain.answering import Attempt
from core.domain.ask import is_external
from core.domain.kinds import Kinds
from core.domain.responders import OPERATOR

log = logging.getLogger("aye.api")

MAX_SEQ = 2**63 - 1  # asks are numbered in a 64-bit column
CALLER = web.RequestKey("caller", Caller)
BY_SESSION = web.RequestKey("by_session", bool)  # the caller is the inbox's session, not a token
KEYS = "/v1/keys"  # the public keys that verify receipts: no token
# No token either: what anyone checking a receipt or the audit chain reads.
PUBLIC = frozenset((KEYS, AUDIT_HEAD))
__all__ = ["ApiError", "AskApi", "errors"]


def taken(ask: Any, now: Any) -> dict[str, Any]:
    """The answer route's 200: taken, and for an approval still short of its quorum, the
    count so far."""
    out: dict[str, Any] = {"outcome": "taken", "ref": refs.ref(ask)}
    needed = getattr(now, "approvals_needed", None) or 1
    if now is not None and needed > 1 and now.status == vocabulary.OPEN:
        out.update(approvals=len(now.approvers or []), needed=needed)
    return out


def _signed(view: dict[str, Any], receipts: dict[str, str]) -> dict[str, Any]:
    """The view with its approval's receipt, when it has one."""
    found = receipts.get(view["id"])
    if found is not None:
        view["receipt"] = found
    return view


def decided(decision: CallDecision, remembered_for: float | None = None) -> web.Response:
    """A gate's decision on a call or a start, as the contract words it."""
    body, status = decision_body(decision, remembered_for)
    return web.json_response(body, status=status)


# The operator's own clients say which they are; any other answer came through the API (curl).
CLIENT_HEADER = "X-Aye-Client"
CLIENTS = ("cli", "tui")


def answered_from(request: web.Request) -> str:
    said = request.headers.get(CLIENT_HEADER, "")
    return said if said in CLIENTS else "api"


class AskApi:
    def __init__(
        self, asks: Service, tokens: TokenBook, kinds: Kinds,
        session_ok: Callable[[web.Request], bool] | None = None, public_url: str | None = None,
        session_alive: Callable[[web.Request], Awaitable[bool]] | None = None,
    ) -> None:
        """`session_ok` says whether a request carries the web inbox's operator session,
        which `GET /v1/events` takes as the operator (the inbox's page subscribes with it), and
        `session_alive` whether it still does, asked again while such a stream is open (a
        Sign out elsewhere ends it). `public_url` (AYE_PUBLIC_URL): where outside systems
        reach external asks' doors. `kinds`: the process's, whose work variants the request
        models take."""
        self.session_ok = session_ok
        self.session_alive = session_alive
        self.public_url = public_url.rstrip("/") if public_url else None
        self.asks = asks
        self.tokens = tokens
        self.bodies = bodies(kinds)
        self.openapi = OpenApi(self.bodies)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/asks", self.create),
            web.post("/v1/asks/wait", self.wait_many),
            web.get("/v1/asks", self.list),
            web.get("/v1/asks/{id}", self.get),
            web.get("/v1/asks/{id}/wait", self.wait),
            web.delete("/v1/asks/{id}", self.withdraw),
            web.post("/v1/asks/{id}/answer", self.answer),
            web.post("/v1/calls", self.call),
            web.post("/v1/calls/outcome", self.outcome),
            web.get(KEYS, self.keys),
            web.post("/v1/starts", self.start),
            web.get("/v1/events", self.events),
            web.get("/v1/openapi.json", self.openapi.serve),
        ]

    @web.middleware
    def auth(self, request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        """A plain function handing back the handler's awaitable: no coroutine of its own on
        every request (CPU, and the memory a parked `wait` holds: bench/)."""
        if not request.path.startswith("/v1/") or request.path.startswith(DOOR):
            return handler(request)  # an external ask's door: signed, not a bearer
        if request.path in PUBLIC:
            return handler(request)  # public keys and the signed head, for anyone checking
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        # Bytes that are not UTF-8 arrive as lone surrogates (surrogateescape): no token has them.
        usable = scheme.lower() == "bearer" and not SURROGATE.search(token)
        caller = self.tokens.caller(token.strip()) if usable else None
        if caller is None and request.path == "/v1/events" and self._in_session(request):
            caller = Caller(None)
            request[BY_SESSION] = True
        if caller is None:
            raise ApiError(401, "unauthorized", "a valid bearer token is required")
        request[CALLER] = caller
        return handler(request)

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

    def _door(self, caller: Caller, verifier: str) -> tuple[str, str]:
        """A new ticket for an external ask's door (and its hash), once the agent may name
        `verifier` and outside systems can reach aye: 422 otherwise."""
        if caller.agent is None or verifier not in caller.agent.verifiers:
            raise ApiError(422, "invalid_field",
                           f"verifier: {verifier!r} is not one of this agent's verifiers",
                           "verifier")
        if not (self.public_url or "").startswith("https://"):
            raise ApiError(422, "no_public_url",
                           "external asks need AYE_PUBLIC_URL, the https:// origin outside "
                           "systems reach aye at")
        return external.new_ticket()

    def _remembers(self, ask: Any) -> float | None:
        """How long the gate of an approval's operation remembers its refusal, now."""
        gate = self.asks.gate_for(ask.operation, ask.agent) if ask.operation else None
        return gate.remembers if gate else None

    async def _reply(
        self, request: web.Request, caller: Caller, rows: list[AskRow],
        shape: Callable[[list[dict[str, Any]]], Any] = lambda views: views[0],
        record: bool = True, receipts: bool = True,
    ) -> web.StreamResponse:
        """The response showing `rows` as `caller` sees them (`shape` puts the views in the
        body). For their agent it is a read (core.app.reading), which counts only once the
        response was written in full to a connection still open: a sensitive answer is erased
        then, and not when the client had already gone (its next read gets the value). A
        decided approval carries its receipt (not in a list's pages: `receipts` False)."""
        signed = {a.id: r for a in rows if receipts and (r := await self.asks.receipt(a))}
        if caller.is_operator:
            views = [_signed(operator_view(a, await self.asks.history(a.seq or 0),
                                           self._remembers(a)), signed) for a in rows]
            return web.json_response(shape(views))
        read = await self.asks.read_as_agent(rows, record)
        try:
            response = web.json_response(shape([_signed(ask_view(a), signed) for a in read.rows]))
            sent = await send_whole(request, response)
        except BaseException:
            read.lost()
            raise
        if sent:
            await read.delivered()
        else:
            read.lost()
        return response

    # -- routes ------------------------------------------------------------------------------

    async def create(self, request: web.Request) -> web.StreamResponse:
        caller = self._agent(request)
        body, raw = await parse(request, self.bodies.ask)
        assert caller.agent is not None
        new = new_ask(caller.agent, body, raw, self.asks.clock.now())
        ticket = None
        if new.format == formats.EXTERNAL:
            ticket, new.ticket_hash = self._door(caller, body.verifier or "")
        ask, created = await create(self.asks, caller.agent, new)
        if created:
            view = ask_view(ask)
            if ticket is not None:  # the only time the ticket is shown: the store has its hash
                view["answer_url"] = f"{self.public_url}{DOOR}{ticket}"
            return web.json_response(view, status=201)
        # The earlier ask, as it stands: a read like any other (a sensitive answer is erased).
        return await self._reply(request, caller, [ask])

    async def events(self, request: web.Request) -> web.StreamResponse:
        alive: Callable[[], Awaitable[bool]] | None = None
        check = self.session_alive
        if request.get(BY_SESSION) and check is not None:
            async def alive() -> bool:
                return await check(request)
        return await stream(request, self.asks, request[CALLER], alive)

    async def get(self, request: web.Request) -> web.StreamResponse:
        caller, ask = await self._ask(request)
        return await self._reply(request, caller, [ask])

    async def wait(self, request: web.Request) -> web.StreamResponse:
        text = request.query.get("timeout", str(DEFAULT_WAIT_S))
        timeout = int_param(text, "timeout", 0, MAX_WAIT_S, "whole seconds from 0 to 300")
        caller, ask = await self._ask(request)
        parked = self.asks.wait(ask, timeout)
        del ask  # parked, the wait holds the ask's id and seq, not its row (core/app/waiting.py)
        return await self._reply(request, caller, [await parked])

    async def wait_many(self, request: web.Request) -> web.StreamResponse:
        """Park on up to 100 asks: once all (or any) are closed, or after `timeout`; each in
        the order asked, as the caller sees it (a read, as for one ask)."""
        caller = request[CALLER]
        body, _ = await parse(request, WaitBody)
        agent = caller.agent.name if caller.agent else None
        rows = []
        for index, ident in enumerate(body.ids):
            plausible = ident.isascii() and ident.isprintable()
            ask = await self.asks.find(ident, agent) if plausible else None
            if ask is None:
                raise ApiError(404, "not_found", f"ids[{index}]: no such ask", f"ids[{index}]")
            rows.append(ask)
        parked = self.asks.wait_many(rows, body.timeout, body.until == "all")
        del rows, ask  # parked, the wait holds the asks' ids and seqs, not their rows
        return await self._reply(request, caller, await parked, lambda views: {"asks": views})

    async def withdraw(self, request: web.Request) -> web.StreamResponse:
        caller, ask = await self._ask(request)
        by = "operator:local" if caller.is_operator else f"agent:{ask.agent}"
        done = await self.asks.withdraw(ask, by)
        if done is None:
            raise ApiError(409, "closed", f"the ask is already {ask.status}")
        return await self._reply(request, caller, [done])

    async def list(self, request: web.Request) -> web.StreamResponse:
        caller = request[CALLER]
        status = request.query.get("status") or None
        if status is not None and status not in vocabulary.STATUSES:
            raise ApiError(
                422, "invalid_field", f"status: one of {', '.join(vocabulary.STATUSES)}", "status"
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
        cursor_out = str(more) if more is not None else None
        if caller.is_operator:
            histories = await self.asks.histories([a.seq for a in asks if a.seq is not None])
            views = [operator_view(a, histories.get(a.seq or 0, []), self._remembers(a))
                     for a in asks]
            return web.json_response({"asks": views, "next_cursor": cursor_out})
        # Listing is a read of each sensitive answer it shows (erased once the page reached
        # the agent), not of the other asks.
        return await self._reply(request, caller, asks,
                                 lambda views: {"asks": views, "next_cursor": cursor_out},
                                 record=False, receipts=False)

    async def answer(self, request: web.Request) -> web.Response:
        caller = request[CALLER]
        if not caller.is_operator:
            raise ApiError(403, "operator_only", "only the operator token answers here")
        body, _ = await parse(request, AnswerBody)
        _, ask = await self._ask(request)
        attempt = Attempt(OPERATOR, answered_from(request))
        result = await self.asks.answer(ask, attempt, body.answer, body.note)
        if not result.taken and is_external(ask) and result.reason == "not_a_responder":
            raise ApiError(403, "not_a_responder", f"refused: only {ask.verifier} answers this "
                           "ask, through its signed door; withdraw it instead")
        if result.taken:
            return web.json_response(taken(ask, result.ask))
        reason = result.reason or "closed"
        said = vocabulary.REASONS.get(reason, reason)
        if reason in ("not_a_responder", "self_approval", "sign_in_required"):
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

    async def start(self, request: web.Request) -> web.Response:
        """May this agent start on this work? Asked once per work (see core.app.starting)."""
        caller = self._agent(request)
        body, _ = await parse(request, self.bodies.start)
        assert caller.agent is not None
        what = body.model_dump(include={"title", "links", "trigger"}, exclude_none=True)
        decision = await self.asks.start(
            caller.agent, body.work.as_dict(), what, body.callback_url
        )
        return decided(decision)

    async def call(self, request: web.Request) -> web.Response:
        caller = self._agent(request)
        body, _ = await parse(request, self.bodies.call)
        assert caller.agent is not None
        work = body.work.as_dict() if body.work else None
        decision = await self.asks.call(
            caller.agent, body.operation, body.input, work, body.timeout_s, body.callback_url
        )
        remembered = self._remembers(decision.ask) if decision.repeat and decision.ask else None
        return decided(decision, remembered)

    async def outcome(self, request: web.Request) -> web.Response:
        """What ran after this agent used an approval: once per use (core.app.outcomes)."""
        caller = self._agent(request)
        body, _ = await parse(request, OutcomeBody)
        assert caller.agent is not None
        try:
            done = await self.asks.report_outcome(caller.agent, body.approval, body.outcome,
                                                  body.detail, body.use)
        except NotYours:
            raise ApiError(404, "not_found", "approval: no approval of this agent has that id",
                           "approval") from None
        except NotReportable as refused:
            raise ApiError(409, refused.code, str(refused), refused.field) from None
        return web.json_response({"approval": done.ask.id, "outcome": body.outcome,
                                  "usable_again": done.usable_again})

    async def keys(self, request: web.Request) -> web.Response:
        """The public keys that verify receipts (a JWKS), for anyone: no token."""
        return web.json_response(await self.asks.jwks())
