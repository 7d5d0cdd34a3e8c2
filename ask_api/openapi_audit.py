"""The audit chain's routes (ask_api/audit.py) in the OpenAPI document: `GET /v1/audit` and
`GET /v1/audit/head`."""

from __future__ import annotations

from typing import Any

from ask_api.openapi_parts import AUDIT as PATH
from ask_api.openapi_parts import AUDIT_HEAD as HEAD
from ask_api.openapi_parts import errors, ok, operation


def audit_paths() -> dict[str, Any]:
    """These routes in the OpenAPI document (ask_api/openapi.py)."""
    return {PATH: {"get": audit_operation()}, HEAD: {"get": head_operation()}}


def audit_operation() -> dict[str, Any]:
    """`GET /v1/audit`: the audit chain (ask_api/audit.py)."""
    entry = {"type": "object", "required": ["seq", "at", "ask", "event", "prev", "hash"],
             "properties": {"seq": {"type": "integer", "minimum": 1}, "at": {"type": "number"},
                            "ask": {"type": "string"}, "event": {"type": "string"},
                            "prev": {"type": "string"}, "hash": {"type": "string"}},
             "additionalProperties": True}
    page = {"type": "object", "required": ["entries", "next"],
            "properties": {"entries": {"type": "array", "items": entry},
                           "next": {"type": ["integer", "null"]}}}
    seq = {"type": "string", "pattern": "^[0-9]+$", "maxLength": 20}
    return operation(
        "audit", "The audit chain",
        "The operator's token. Every history entry of every ask, oldest first, each with its "
        "`seq`, the `hash` of the one before (`prev`) and its own `hash` (SHA-256 of its RFC "
        "8785 canonical JSON without `hash`). `next`: the `after` of the next page; null at "
        "the end.",
        {**ok("a page of the chain", page),
         **errors({401: ("unauthorized",), 403: ("operator_only",),
                   422: ("invalid_field",), 503: ("busy",)})},
        parameters=[
            {"name": "after", "in": "query", "required": False, "schema": seq,
             "description": "entries after this seq (default 0: from the first)"},
            {"name": "limit", "in": "query", "required": False, "schema": seq,
             "description": "entries a page, 1 to 1000 (default 100)"},
        ],
        tags=["meta"],
    )


def head_operation() -> dict[str, Any]:
    """`GET /v1/audit/head`: the chain's newest entry, signed (ask_api/audit.py)."""
    jws = {"type": "string", "pattern": "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$"}
    return operation(
        "auditHead", "The audit chain's head, signed",
        "No token. A compact JWS (`typ` `aye-audit-head+jwt`, signed with the receipts' key: "
        "`kid` in `GET /v1/keys`) of `{\"iss\", \"seq\", \"hash\", \"iat\"}` for the chain's "
        "newest entry (seq 0 and 64 zeros while it is empty). Keep it outside aye: `aye audit "
        "verify --head FILE` later exits 1 when the chain no longer holds that entry.",
        {"200": {"description": "the signed head", "content": {"application/jose": {
            "schema": jws}}}, **errors({503: ("busy",)})},
        security=[], tags=["meta"])
