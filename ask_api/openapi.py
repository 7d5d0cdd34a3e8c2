"""`GET /v1/openapi.json`: an OpenAPI 3.1 document of the `/v1` API.

Its schemas are generated from the pydantic models that validate the requests
(ask_api/schemas.py, with `work` made of the registered surfaces' variants) and from those that
describe the responses (ask_api/responses.py); nothing here restates a field. The query
parameters are built from the bounds the routes enforce (ask_api/bounds.py). The document is
built on its first request and kept for the life of the app.
"""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ask_api import bounds
from ask_api import responses as shown
from ask_api.openapi_audit import audit_paths
from ask_api.openapi_parts import (
    BODY,
    COMMON,
    JSON,
    KEYS,
    LIMITED,
    NOT_FOUND,
    OPENAPI,
    PATH,
    REF,
    WHOAMI,
    body,
    either_ask,
    error_schema,
    errors,
    json_content,
    ok,
    operation,
    ref,
)
from ask_api.schemas import AnswerBody, Bodies, OutcomeBody, WaitBody
from core.app.service import EVENT_NAMES
from core.domain import vocabulary


def parameters() -> dict[str, dict[str, Any]]:
    """The query and path parameters, bounded as the routes check them."""
    def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"name": name, "in": "query", "required": False, "schema": schema,
                "description": description}

    digits = "ASCII digits only (not `+5`, ` 5`, `1.5`)"
    return {
        "id": {"name": "id", "in": "path", "required": True,
               "schema": {"type": "string", "minLength": 1},
               "description": "the ask's id or its ref (`q7`, any case)"},
        "timeout": query("timeout", {"type": "integer", "minimum": 0,
                                     "maximum": bounds.MAX_WAIT_S,
                                     "default": bounds.DEFAULT_WAIT_S},
                         f"seconds to park at most; {digits}"),
        "status": query("status", {"type": "string", "enum": ["", *vocabulary.STATUSES]},
                        "only asks of this status; absent or empty: every status"),
        "limit": query("limit", {"type": "integer", "minimum": 1, "maximum": bounds.MAX_LIMIT,
                                 "default": bounds.DEFAULT_LIMIT}, f"asks a page; {digits}"),
        "cursor": query("cursor", {"type": "string", "pattern": "^[0-9]*$", "maxLength": 20},
                        "the previous page's `next_cursor`; absent or empty: the first page"),
        "last_event_id": query("last_event_id", {"type": "string"},
                               "resume after this event id (for clients that cannot set "
                               "Last-Event-ID); anything else starts with what comes next"),
        "ticket": {"name": "ticket", "in": "path", "required": True,
                   "schema": {"type": "string", "minLength": 1},
                   "description": "the ticket of an external ask's `answer_url`"},
        "Last-Event-ID": {"name": "Last-Event-ID", "in": "header", "required": False,
                          "schema": {"type": "string"},
                          "description": "resume after this event id, from the store"},
    }


def links(pointer: str) -> dict[str, Any]:
    """Where a new ask's id leads (OpenAPI links: what clients and fuzzers follow)."""
    param = {"id": f"$response.body#{pointer}"}
    return {name: {"operationId": op, "parameters": param} for name, op in (
        ("GetAsk", "getAsk"), ("WaitAsk", "waitAsk"), ("WithdrawAsk", "withdrawAsk"),
        ("AnswerAsk", "answerAsk"),
    )}


ASK_EXAMPLES = {
    "choice": {"question": "Ship the 1.4.2 release tonight?", "options": ["yes", "no", "wait for QA"],
               "context": "CI is green; QA signed off on 1.4.1 only.", "timeout_s": 7200,
               "key": "release-1.4.2"},
    "confirm": {"question": "Rotate the staging keys?", "format": "confirm",
                "work": {"github": {"repo": "octo/app", "number": 42}}},
    "form": {"question": "How many nodes?", "format": "form", "schema": {
        "type": "object", "properties": {"count": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["count"]}},
}
CALL_EXAMPLES = {"deploy": {
    "operation": "deploy.prod", "input": {"version": "1.4.2"},
    "work": {"slack": {"channel": "C0123ABCD", "thread_ts": "1700000000.000100"}}}}
START_EXAMPLES = {"issue": {
    "work": {"github": {"repo": "octo/app", "number": 7, "type": "issue"}},
    "title": "Fix the login bug", "links": ["https://github.com/octo/app/issues/7"],
    "trigger": "labelled agent:triage"}}
ANSWER_EXAMPLES = {"text": {"answer": "yes", "note": "cap it at $50"}, "option": {"answer": 2}}
WAIT_EXAMPLES = {"any": {"ids": ["q1", "a2"], "until": "any", "timeout": 0}}


def ask_paths(p: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`/v1/asks` and `/v1/asks/wait`: ask, list, park on several."""
    create = operation(
        "createAsk", "Ask a question", "Agent token only. A repeat of a `key` with the same "
        "body returns the ask as it stands (200), posted once.",
        {"201": {"description": "a new ask", **json_content(ref("AgentAsk")), "links": links("/id")},
         **ok("the ask made before with this `key` and body, as it stands", ref("AgentAsk")),
         **errors({**COMMON, **BODY, 403: ("agents_only",), 409: ("key_reused",),
                   422: ("invalid_field", "no_reachable_responder", "no_public_url"), 429: LIMITED})},
        requestBody=body("AskBody", ASK_EXAMPLES), tags=["asks"],
    )
    listed = operation(
        "listAsks", "List asks, newest first",
        "An agent sees its own asks (agent view), the operator all (operator view). A read.",
        {**ok("a page of asks", ref("AskPage")), **errors({**COMMON, 422: ("invalid_field",)})},
        parameters=[p["status"], p["limit"], p["cursor"]], tags=["asks"],
    )
    wait_many = operation(
        "waitAsks", "Park on several asks",
        "Returns once all (or any) are closed, or after `timeout`, in the order asked.",
        {**ok("the asks, in the order asked", ref("AskList")),
         **errors({**COMMON, **BODY, **NOT_FOUND})},
        requestBody=body("WaitBody", WAIT_EXAMPLES), tags=["asks"],
    )
    return {"/v1/asks": {"post": create, "get": listed}, "/v1/asks/wait": {"post": wait_many}}


def one_ask_paths(p: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`/v1/asks/{id}…`: read, park on, withdraw and answer one ask."""
    found = {**COMMON, **NOT_FOUND}
    read = ok("the ask in the caller's view", either_ask())
    get = operation("getAsk", "One ask", "A read: a sensitive answer shown is erased.",
                    {**read, **errors(found)}, tags=["asks"])
    wait = operation(
        "waitAsk", "Park until the ask closes",
        "Returns once the ask is no longer open, or after `timeout` with it still open.",
        {**read, **errors({**found, 422: ("invalid_field",)})},
        parameters=[p["timeout"]], tags=["asks"],
    )
    withdraw = operation("withdrawAsk", "Withdraw an open ask", "The agent that asked, or "
                         "the operator.", {**read, **errors({**found, 409: ("closed",)})},
                         tags=["asks"])
    answer = operation(
        "answerAsk", "The operator answers", "Operator token only; answers as `operator:local`. "
        "A refused answer is recorded in the ask's history.",
        {**ok("the answer was taken", ref("Taken")), **errors({
            **found, **BODY, 403: ("operator_only", "not_a_responder", "self_approval"),
            409: ("closed", "already_approved"), 422: ("invalid_field", "invalid_answer"),
            503: ("busy", "author_unknown")})},
        requestBody=body("AnswerBody", ANSWER_EXAMPLES), tags=["asks"],
    )
    return {
        "/v1/asks/{id}": {"parameters": [p["id"]], "get": get, "delete": withdraw},
        "/v1/asks/{id}/wait": {"parameters": [p["id"]], "get": wait},
        "/v1/asks/{id}/answer": {"parameters": [p["id"]], "post": answer},
    }


def decisions(op_id: str, summary: str, model: str, refusals: str, examples: dict[str, Any]
              ) -> dict[str, Any]:
    """`/v1/calls` and `/v1/starts`: a gate's decision (allow, pending or refuse)."""
    refused = {"description": f"Forbidden: a refusal ({refusals}), or the error `agents_only`",
               **json_content({"anyOf": [ref("Refusal"), error_schema(("agents_only",))]})}
    pending = {"description": "pending: the approval ask to wait on, then call again",
               **json_content(ref("Pending")), "links": links("/ask/id")}
    return operation(
        op_id, summary, "Agent token only.",
        {**ok("allowed", ref("Allow")), "202": pending, "403": refused,
         **errors({**COMMON, **BODY, 429: LIMITED})},
        requestBody=body(model, examples), tags=["gates"],
    )


def stream_paths(p: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`/v1/events` (Server-Sent Events), this document, and the audit chain's routes."""
    event = {
        "type": "object", "required": ["id", "event", "data"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$"},
            "event": {"enum": list(EVENT_NAMES)},
            "data": {"type": "string", "contentMediaType": JSON, "contentSchema": either_ask()},
            "retry": {"type": "integer"},
        },
    }
    stream = operation(
        "events", "The event stream",
        "Server-Sent Events of the caller's asks, each `data` the ask as the caller sees it "
        "(the operator's view without `history`; a sensitive value never). Starts with "
        "`retry: 2000`; a `: keep-alive` comment at least every 15 s. The schema is one event.",
        {"200": {"description": "the stream", "content": {"text/event-stream": {"schema": event}}},
         **errors(COMMON)},
        parameters=[p["last_event_id"], p["Last-Event-ID"]], tags=["events"],
    )
    document = operation(
        "openapi", "This document", "Any valid token.",
        {**ok("the OpenAPI document", {"type": "object"}), **errors({401: ("unauthorized",)})},
        tags=["meta"],
    )
    whoami = operation(
        "whoami", "Whose token this is",
        "Any valid token: the operator's, or an agent's with its name. Clients check it before "
        "they act (the CLI needs the operator's, `aye mcp` an agent's).",
        {**ok("whose token it is", ref("Whoami")), **errors({401: ("unauthorized",)})},
        tags=["meta"],
    )
    return {"/v1/events": {"get": stream}, PATH: {"get": document}, WHOAMI: {"get": whoami},
            **audit_paths()}


def outcome_operation() -> dict[str, Any]:
    """`POST /v1/calls/outcome`: what ran after the agent used an approval."""
    return operation(
        "callOutcome", "Report what ran after an approval was used", "Agent token only: the "
        "agent that used the approval, once per use. `not_run` within the grant's window makes "
        "the approval usable once more.",
        {**ok("recorded", ref("Reported")), **errors({**COMMON, **BODY, 403: ("agents_only",),
         404: ("not_found",), 409: ("not_approved", "not_used", "already_reported")})},
        requestBody=body("OutcomeBody", {"ran": {"approval": "0" * 32, "outcome": "ran"}}),
        tags=["gates"])


def keys_operation() -> dict[str, Any]:
    """`GET /v1/keys`: the JWKS that verifies receipts."""
    return operation(
        "keys", "The keys that verify receipts", "No token. A JWKS of every Ed25519 public key "
        "aye has signed receipts with, the current one first.",
        {**ok("the public keys", ref("Keys")), **errors({503: ("busy",)})},
        security=[], tags=["gates"])


def door_paths(p: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`/v1/external/{ticket}`: an outside system answers an external ask."""
    deliver = operation(
        "deliverExternal", "An outside system answers an external ask",
        "No bearer token: the verifier's signature header (and timestamp header, where it has "
        "one) over the exact body. The body is the payload, checked against the ask's schema.",
        {**ok("taken, or the accepted delivery again", ref("Delivered")), **errors({
            400: ("malformed_body", "invalid_payload"), 401: ("bad_signature",),
            404: ("not_found",), 408: ("body_timeout",), 413: ("body_too_large",),
            429: ("rate_limited",), 503: ("busy",)})},
        parameters=[p["ticket"]], security=[], tags=["external"],
        requestBody={"required": True, **json_content({})},
    )
    return {"/v1/external/{ticket}": {"post": deliver}}


def document(bodies: Bodies) -> dict[str, Any]:
    """The OpenAPI document of the `/v1` API with these request models."""
    work = bodies.start.model_fields["work"].annotation  # the Work of the registered surfaces
    views = shown.responses(work)
    requests: list[type[BaseModel]] = [bodies.ask, bodies.call, bodies.start, AnswerBody, WaitBody,
                                       OutcomeBody]
    _, schemas = models_json_schema(
        [(model, "validation") for model in [*requests, *views.models()]], ref_template=REF
    )
    p = parameters()
    return {
        "openapi": OPENAPI,
        "info": {"title": "aye", "version": version(),
                 "description": "Agents ask people for decisions and approvals; people answer "
                                "where they already work. See docs/api.md."},
        "security": [{"bearer": []}],
        "paths": {
            **ask_paths(p), **one_ask_paths(p),
            "/v1/calls": {"post": decisions(
                "call", "May this gated operation run now?", "CallBody",
                "`approval_unavailable`, or `approval_refused` repeated", CALL_EXAMPLES)},
            "/v1/starts": {"post": decisions(
                "start", "May this agent start on this work?", "StartBody",
                "`start_refused`, `approval_timed_out`, `approval_unavailable`", START_EXAMPLES)},
            "/v1/calls/outcome": {"post": outcome_operation()},
            KEYS: {"get": keys_operation()},
            **stream_paths(p), **door_paths(p),
        },
        "components": {
            "schemas": schemas["$defs"],
            "securitySchemes": {"bearer": {
                "type": "http", "scheme": "bearer",
                "description": "an agent's token, or the operator token (AYE_OPERATOR_TOKEN)"}},
        },
    }


def version() -> str:
    try:
        return importlib.metadata.version("aye")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class OpenApi:
    """Serves the document, built on the first request and kept for the life of the app."""

    def __init__(self, bodies: Bodies) -> None:
        self.bodies = bodies
        self._built: bytes | None = None

    def built(self) -> bytes:
        if self._built is None:
            self._built = json.dumps(document(self.bodies), ensure_ascii=False).encode()
        return self._built

    async def serve(self, request: web.Request) -> web.Response:
        return web.Response(body=self.built(), content_type=JSON)
