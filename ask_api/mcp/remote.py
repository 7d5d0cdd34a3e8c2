"""The MCP tools' way into aye from `aye mcp` (stdio): the `/v1` HTTP API at AYE_URL, as the
agent whose token it holds. aye itself checks each body again; what it refuses comes back as
the API's error code (`unauthorized` for a wrong token), and an aye that cannot be reached is
`unreachable`, so a tool never pretends to have asked.

Only as an agent: before a tool first acts, aye is asked whose token this is (`GET
/v1/whoami`). The operator token would let `wait` read every agent's asks, so with it (or a
token aye does not know, or an aye that cannot say) every call is `unauthorized` and nothing is
sent; once aye has said "agent", that is trusted until it answers 401."""

from __future__ import annotations

import asyncio
import random
from typing import Any
from urllib.parse import quote

import aiohttp

from ask_api.http import ApiError
from ask_api.schemas import AskBodyBase, CallBodyBase

# A parked wait is held by the server for its whole length; the connection may take this long
# beyond it.
SLACK_S = 30.0
# While aye restarts, a wait (safe to repeat, unlike a create or a call) is tried again after a
# jittered, growing pause, for as long as the caller would have waited anyway.
RETRY_FIRST_S, RETRY_MAX_S = 0.2, 5.0
RETRY_STATUSES = (502, 503, 504)
WHOAMI = "/v1/whoami"
CHECK_S = 10.0


class RemoteAgent:
    """An AgentPort (ask_api/mcp/tools.py) over aye's HTTP API."""

    def __init__(self, url: str, token: str, session: aiohttp.ClientSession) -> None:
        self.url = url.rstrip("/")
        self.session = session
        self._headers = {"Authorization": f"Bearer {token}"}
        self.agent: str | None = None  # the agent's name, once aye has said the token is one

    async def create(self, body: AskBodyBase, raw: dict[str, Any]) -> dict[str, Any]:
        return await self._request("POST", "/v1/asks", raw)

    async def wait(self, ref: str, seconds: int) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        end, pause = loop.time() + seconds, RETRY_FIRST_S
        while True:
            left = max(0, round(end - loop.time()))
            path = f"/v1/asks/{quote(ref, safe='')}/wait?timeout={left}"
            try:
                return await self._request("GET", path, timeout=left + SLACK_S)
            except ApiError as error:
                if error.code != "unreachable" and error.status not in RETRY_STATUSES:
                    raise
                if loop.time() + pause >= end:
                    raise
            await asyncio.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, RETRY_MAX_S)

    async def call(self, body: CallBodyBase, raw: dict[str, Any]) -> dict[str, Any]:
        # A refusal is a 403 whose body is a decision: a result, not an error.
        return await self._request("POST", "/v1/calls", raw, decisions=True)

    async def _request(
        self, method: str, path: str, body: Any = None, timeout: float = SLACK_S,
        decisions: bool = False,
    ) -> dict[str, Any]:
        if self.agent is None:
            await self._as_agent()
        status, data, retry_after = await self._send(method, path, body, timeout)
        if status < 400 or (decisions and status == 403 and "decision" in data):
            return data
        if status == 401:
            self.agent = None  # the server no longer knows the token: ask again next time
        message = str(data.get("message") or f"aye answered HTTP {status}")
        if retry_after:  # a limit: say when to come back, as the in-process tools do
            message += f"; try again in {retry_after} s"
        raise ApiError(status, str(data.get("error") or "http_error"), message, data.get("field"))

    async def _as_agent(self) -> None:
        """`self.agent` from aye's word that the token is an agent's; ApiError otherwise
        (`unauthorized`, or `unreachable` for an aye that cannot be reached, like any call)."""
        status, data, _ = await self._send("GET", WHOAMI, None, CHECK_S)
        said = data.get("as")
        if status == 200 and said == "agent":
            self.agent = str(data.get("agent") or "")
            return
        if status == 200 and said == "operator":
            why = "it is the operator token, and aye mcp acts only as an agent: give it an agent's"
        elif status == 401:
            why = f"the aye at {self.url} does not know it"
        else:
            why = (f"it could not be checked ({self.url} answered HTTP {status} to GET {WHOAMI}; "
                   "is AYE_URL an aye as new as this one?)")
        raise ApiError(401, "unauthorized", f"AYE_AGENT_TOKEN is not an agent's token: {why}")

    async def _send(
        self, method: str, path: str, body: Any, timeout: float
    ) -> tuple[int, dict[str, Any], str | None]:
        try:
            async with self.session.request(
                method, self.url + path, json=body, headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                try:
                    data = await resp.json(content_type=None)
                except ValueError:
                    data = None
                status = resp.status
                retry_after = resp.headers.get("Retry-After") if status == 429 else None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(503, "unreachable",
                           f"cannot reach aye at {self.url} (AYE_URL): {_why(exc)}") from None
        if not isinstance(data, dict):
            raise ApiError(502, "unreachable", f"{self.url} answered HTTP {status}, not aye's JSON")
        return status, data, retry_after


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    cause = getattr(exc, "os_error", None) or exc
    return str(getattr(cause, "strerror", None) or cause or type(exc).__name__).lower()
