"""The pieces of the OpenAPI document that its parts share: the paths named in more than one
module, the error responses and their codes, and the small builders (a `$ref`, a JSON body, an
operation). Imports nothing of the API, so the routes' modules that describe themselves
(ask_api/openapi_audit.py) and the document (ask_api/openapi.py) both build on it."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

OPENAPI = "3.1.0"
PATH = "/v1/openapi.json"
WHOAMI = "/v1/whoami"  # ask_api/whoami.py
AUDIT = "/v1/audit"  # ask_api/audit.py
AUDIT_HEAD = "/v1/audit/head"  # ask_api/audit.py: no token
KEYS = "/v1/keys"  # ask_api/routes.py: no token
REF = "#/components/schemas/{model}"
JSON = "application/json"
# Errors that say when to come back (a Retry-After header, in seconds).
RETRY_CODES = frozenset({"busy", "too_many_open_asks", "rate_limited"})
Codes = Mapping[int, tuple[str, ...]]  # each status, and the `error` codes it carries
COMMON: Codes = {401: ("unauthorized",), 503: ("busy",)}
# Every route that reads a JSON body can refuse it these ways.
BODY: Codes = {
    400: ("malformed_body",), 408: ("body_timeout",), 413: ("body_too_large",),
    422: ("invalid_field",),
}
LIMITED = ("too_many_open_asks", "rate_limited")
NOT_FOUND: Codes = {404: ("not_found",)}


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def json_content(schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"content": {JSON: {"schema": schema, **extra}}}


def error_schema(codes: tuple[str, ...]) -> dict[str, Any]:
    """The error body, with `error` one of `codes`."""
    return {"allOf": [ref("Error"), {"properties": {"error": {"enum": list(codes)}}}]}


def errors(codes: Codes) -> dict[str, Any]:
    """The error responses: for each status, the `error` codes it carries."""
    out: dict[str, Any] = {}
    for status, names in sorted(codes.items()):
        said = ", ".join(f"`{name}`" for name in names)
        response: dict[str, Any] = {
            "description": f"{HTTPStatus(status).phrase}: {said}",
            **json_content(error_schema(names)),
        }
        if RETRY_CODES.intersection(names):
            response["headers"] = {"Retry-After": {
                "description": "seconds to wait before trying again",
                "required": RETRY_CODES.issuperset(names),
                "schema": {"type": "integer", "minimum": 1},
            }}
        out[str(status)] = response
    return out


def ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": description, **json_content(schema)}}


def either_ask() -> dict[str, Any]:
    """The ask in the caller's view: an agent's (its own), or the operator's (any)."""
    return {"anyOf": [ref("AgentAsk"), ref("OperatorAsk")]}


def body(model: str, examples: dict[str, Any]) -> dict[str, Any]:
    named = {name: {"value": value} for name, value in examples.items()}
    return {"required": True, **json_content(ref(model), examples=named)}


def operation(
    op_id: str, summary: str, description: str, responses: dict[str, Any], **more: Any
) -> dict[str, Any]:
    return {"operationId": op_id, "summary": summary, "description": description,
            "responses": responses, **more}
