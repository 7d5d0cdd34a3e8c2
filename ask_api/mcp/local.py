"""The MCP tools' way into aye inside its own process (`/mcp`): the core's service itself,
with the same checks, errors and views as the `/v1` routes, as the agent whose bearer token the
request carried. No request goes back over HTTP to the process it is already in."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy.exc

from ask_api.creating import create, new_ask
from ask_api.http import ApiError, callback_refused
from ask_api.mcp.sent import AfterSent
from ask_api.schemas import AskBodyBase, CallBodyBase
from ask_api.views import ask_view, decision_body
from core.app.ports import AskRow, CallDecision
from core.app.service import Service
from core.domain.limits import Limited
from core.domain.types import AgentInfo, CallbackRefused


class LocalAgent:
    """An AgentPort (ask_api/mcp/tools.py) on the core, for one agent and one tool call,
    whose reads count once its result has reached the client (`after_sent`)."""

    def __init__(
        self, asks: Service, agent: AgentInfo, after_sent: AfterSent | None = None
    ) -> None:
        self.asks, self.agent = asks, agent
        self.after_sent = after_sent or AfterSent(None, None)

    async def create(self, body: AskBodyBase, raw: dict[str, Any]) -> dict[str, Any]:
        new = new_ask(self.agent, body, raw, self.asks.clock.now())
        with _store_errors():
            ask, created = await create(self.asks, self.agent, new)
            # A repeated key gives the earlier ask as it stands: a read like any other.
            return ask_view(ask) if created else await self._read(ask)

    async def wait(self, ref: str, seconds: int) -> dict[str, Any]:
        with _store_errors():
            ask = await self._find(ref)
            return await self._read(await self.asks.wait(ask, seconds))

    async def call(self, body: CallBodyBase, raw: dict[str, Any]) -> dict[str, Any]:
        work = body.work.as_dict() if body.work else None
        with _store_errors():  # the callback checked and the hit counted, as POST /v1/calls
            decision = await self.asks.call(
                self.agent, body.operation, body.input, work, body.timeout_s, body.callback_url
            )
        return call_reply(decision)

    async def _find(self, ref: str) -> AskRow:
        # Ids and refs are printable ASCII: anything else names no ask (as in the routes).
        plausible = ref.isascii() and ref.isprintable()
        ask = await self.asks.find(ref, self.agent.name) if plausible else None
        if ask is None:
            raise ApiError(404, "not_found", "no such ask")
        return ask

    async def _read(self, ask: AskRow) -> dict[str, Any]:
        """The agent reads its ask, as GET /v1/asks/{id} does (core.app.reading): recorded, and
        a sensitive answer erased, once the tool's result carrying it has reached the client."""
        read = await self.asks.read_as_agent([ask])
        try:
            view = ask_view(read.rows[0])
            self.after_sent.settle(read)
        except BaseException:
            read.lost()
            raise
        return view


def call_reply(decision: CallDecision) -> dict[str, Any]:
    """The very body POST /v1/calls answers with for this decision (its status aside)."""
    return decision_body(decision)[0]


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    """What the API's error middleware says for the core's refusals: a limit (429, with when to
    try again), the store overloaded or away (`busy`, 503); never a crash."""
    try:
        yield
    except CallbackRefused as refused:
        raise callback_refused(refused) from None
    except Limited as limited:
        raise ApiError(429, limited.code, f"{limited.message}; try again in "
                                          f"{limited.retry_after} s") from None
    except (sqlalchemy.exc.TimeoutError, sqlalchemy.exc.OperationalError):
        raise ApiError(503, "busy", "the store is busy; try again shortly") from None
