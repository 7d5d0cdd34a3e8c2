"""The MCP tools' waits that end without an answer: because aye stops, because time runs out,
because the approval is withdrawn, and an agent's limits held over MCP (the real app over
`/mcp`, the clock moved by hand). The tools' pure rules (schemas, argument limits, reading a
refusal, DNS-rebinding names) are tests/unit/test_mcp_rules.py's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.app.timing import ManualClock
from tests.e2e.test_mcp_http import GATED, Aye, connected, open_asks, parked_ask, result, start_mcp_aye


@pytest.fixture
async def gated(tmp_path: Any) -> AsyncIterator[Aye]:
    aye = await start_mcp_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", GATED, ManualClock())
    yield aye
    await aye.client.close()


# -- waits that end without an answer -------------------------------------------------------


async def test_a_wait_ends_with_the_ask_open_when_aye_stops(gated: Aye) -> None:
    async with connected(gated) as client:
        call = asyncio.create_task(client.call_tool("ask", {"question": "Q?", "wait_s": 300}))
        ask = await parked_ask(gated)
        gated.asks.release_waiters()  # what SIGTERM does first
        got = result(await asyncio.wait_for(call, 5))
    assert got["status"] == "open" and got["id"] == ask["id"]


async def test_an_approval_nobody_gives_in_time_is_refused_as_timed_out(gated: Aye) -> None:
    assert isinstance(gated.clock, ManualClock)
    async with connected(gated) as client:
        call = asyncio.create_task(client.call_tool(
            "request_approval", {"operation": "deploy.prod", "input": {}, "wait_s": 60}))
        ask = await parked_ask(gated)
        gated.clock.advance(2 * 3600 + 1)
        await gated.tick()
        got = result(await asyncio.wait_for(call, 5))
    assert got["decision"] == "refuse" and got["error"] == "approval_timed_out"
    assert got["approval"] == ask["id"]


async def test_a_withdrawn_approval_is_not_an_allow(gated: Aye) -> None:
    async with connected(gated) as client:
        call = asyncio.create_task(client.call_tool(
            "request_approval", {"operation": "deploy.prod", "input": {"v": 1}, "wait_s": 60}))
        ask = await parked_ask(gated)
        resp = await gated.client.delete(f"/v1/asks/{ask['ref']}", headers={
            "Authorization": "Bearer op-test-token"})
        assert resp.status == 200
        got = result(await asyncio.wait_for(call, 5))
    assert got["decision"] == "refuse" and got["error"] == "approval_withdrawn"
    assert await open_asks(gated) == []


async def test_an_agent_s_limits_hold_over_mcp(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AYE_TOKEN_BUSY", "token-busy")
    config = {**GATED, "agents": [{"name": "busy", "token_env": "AYE_TOKEN_BUSY", "max_open": 1,
                                   "asks_per_minute": 2}]}
    # A clock that stands still: every hit falls in one minute's window.
    aye = await start_mcp_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config, ManualClock())
    try:
        async with connected(aye, token="token-busy") as client:
            assert result(await client.call_tool("ask", {"question": "One?", "wait_s": 0}))
            full = await client.call_tool("ask", {"question": "Two?", "wait_s": 0})
            assert full.is_error and full.content[0].text.startswith("too_many_open_asks: ")
            assert full.content[0].text.endswith("try again in 10 s")
            assert result(await client.call_tool("request_approval", {"operation": "build"}))
            fast = await client.call_tool("request_approval", {"operation": "build"})
            assert fast.is_error and fast.content[0].text.startswith("rate_limited: ")
    finally:
        await aye.client.close()
