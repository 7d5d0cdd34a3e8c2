"""`GET /v1/audit?after=SEQ&limit=N` (the operator's token): the audit chain, a page at a
time: every history entry of every ask, each with its `seq`, `prev` and `hash` (a change,
removal or reordering of any entry breaks every hash or link after it). What each entry holds
and how its hash is made: store/chain.py. `GET /v1/audit/head` (no token): the chain's newest
entry signed with the receipts' key, for anyone to keep outside aye (`aye audit verify --head`
then shows a tail deleted or rewritten since)."""

from __future__ import annotations

from aiohttp import web

from ask_api.http import ApiError, int_param
from ask_api.openapi_parts import AUDIT as PATH
from ask_api.openapi_parts import AUDIT_HEAD as HEAD
from ask_api.routes import CALLER
from core.app.service import Service

DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
MAX_SEQ = 2**63 - 1
JOSE = "application/jose"  # RFC 7515's media type of a compact JWS


def routes(service: Service) -> list[web.RouteDef]:
    async def audit(request: web.Request) -> web.Response:
        if not request[CALLER].is_operator:
            raise ApiError(403, "operator_only", "only the operator token reads the audit trail")
        after = int_param(request.query.get("after") or "0", "after", 0, MAX_SEQ,
                          "an entry's seq, from 0")
        limit = int_param(request.query.get("limit") or str(DEFAULT_LIMIT), "limit", 1,
                          MAX_LIMIT, f"an integer from 1 to {MAX_LIMIT}")
        entries, more = await service.audit(after, limit)
        return web.json_response({"entries": entries, "next": more})

    async def head(request: web.Request) -> web.Response:
        return web.Response(text=await service.audit_head(), content_type=JOSE,
                            headers={"Cache-Control": "no-store"})

    return [web.get(PATH, audit), web.get(HEAD, head)]
