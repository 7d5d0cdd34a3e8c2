"""`GET /v1/whoami`: whose token this is, so that a client can refuse to act with the wrong
one before it reads anything (a read as an agent erases that agent's sensitive answers; `aye
mcp` with the operator token would see every agent's asks). Any valid token; 401 otherwise,
from the API's own bearer check (AskApi.auth)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ask_api.openapi_parts import WHOAMI as PATH
from ask_api.routes import CALLER

OPERATOR, AGENT = "operator", "agent"


async def whoami(request: web.Request) -> web.Response:
    caller = request[CALLER]
    body: dict[str, Any] = (
        {"as": OPERATOR} if caller.agent is None else {"as": AGENT, "agent": caller.agent.name}
    )
    return web.json_response(body)


def routes() -> list[web.RouteDef]:
    return [web.get(PATH, whoami)]
