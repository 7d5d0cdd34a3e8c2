"""`/mcp` on aye's own port: the official MCP SDK's client over streamable HTTP, in both
protocol eras (the 2025 `initialize` handshake that Claude Code and Cursor speak, and the 2026
per-request era the 2.x SDK's client negotiates by itself), against the real app on a real
socket, answered by the operator over the HTTP API."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx2
import pytest
from aiohttp.test_utils import TestClient, TestServer
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ask_api.mcp import tools
from ask_api.mcp.mount import MCP
from ask_api.tokens import TokenBook
from bot.app import SERVICE, create_app
from bot.config import Config
from core.app.timing import Clock
from tests.conftest import AGENT_TOKEN, OPERATOR_TOKEN, Aye, settings_for

MODES = ["legacy", "auto"]
GATED = {
    "defaults": {"responders": ["operator:local"]},
    "gates": [{"operations": ["deploy."], "timeout": "2h"}],
}


async def start_mcp_aye(
    database_url: str, config: dict[str, Any] | None = None, clock: Clock | None = None, **env: str
) -> Aye:
    """The whole app, serving /mcp, on a real socket (close its `client` when done)."""
    settings = settings_for(database_url, **env)
    conf = Config.model_validate(config or {})
    book = TokenBook.build(conf, OPERATOR_TOKEN, AGENT_TOKEN)
    app = create_app(settings, conf, book, clock)
    assert MCP in app  # bot/app.py serves /mcp itself
    client: TestClient[Any, Any] = TestClient(TestServer(app))
    await client.start_server()
    return Aye(client, app, app[SERVICE].clock)


@pytest.fixture
async def start_mcp(tmp_path: Any) -> AsyncIterator[Any]:
    started: list[Aye] = []

    async def start(config: dict[str, Any] | None = None, **env: str) -> Aye:
        started.append(await start_mcp_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config, **env))
        return started[-1]

    yield start
    for aye in started:
        await aye.client.close()


@pytest.fixture
async def aye(start_mcp: Any) -> Aye:
    return await start_mcp()  # type: ignore[no-any-return]


@pytest.fixture
def quick_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress every 0.1 s instead of every 5 s, so a test sees it tick."""
    monkeypatch.setattr(tools, "PROGRESS_EVERY_S", 0.1)


@contextlib.asynccontextmanager
async def connected(aye: Aye, mode: str = "legacy", token: str = AGENT_TOKEN) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(str(aye.client.make_url("/mcp")), http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


class Progress:
    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.ticked = asyncio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        if progress > 0:
            self.ticked.set()


def result(called: Any) -> dict[str, Any]:
    """A tool's result: its structuredContent, which is also its text, as JSON."""
    assert not called.is_error, called.content
    assert json.loads(called.content[0].text) == called.structured_content
    return called.structured_content  # type: ignore[no-any-return]


def error(called: Any) -> str:
    assert called.is_error
    return called.content[0].text  # type: ignore[no-any-return]


async def open_asks(aye: Aye) -> list[dict[str, Any]]:
    resp = await aye.client.get("/v1/asks?status=open",
                                headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    return (await resp.json())["asks"]  # type: ignore[no-any-return]


async def parked_ask(aye: Aye) -> dict[str, Any]:
    """The one open ask, once a tool is parked on it."""
    await aye.parked()
    (ask,) = await open_asks(aye)
    return ask


# -- listing --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_come_with_schemas_made_from_the_api_models(aye: Aye, mode: str) -> None:
    async with connected(aye, mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions or ""
    assert list(listed) == ["ask", "wait", "request_approval"]
    ask = listed["ask"].input_schema
    assert ask["required"] == ["question"] and ask["additionalProperties"] is False
    assert ask["properties"]["format"]["enum"] == ["text", "choice", "multi", "confirm", "ack", "form"]
    assert {"schema", "min", "max", "media", "options", "deadline", "timeout_s", "key",
            "sensitive", "context"} <= set(ask["properties"])
    assert set(ask["properties"]["work"]["properties"]) == {"slack", "github"}
    assert ask["properties"]["options"]["maxItems"] == 20
    for schema in (ask, listed["request_approval"].input_schema, listed["wait"].input_schema):
        assert schema["properties"]["wait_s"] == {**schema["properties"]["wait_s"], "default": 50,
                                                  "minimum": 0, "maximum": 300}
        assert all(p.get("description") for p in schema["properties"].values())
        assert "$ref" not in json.dumps(schema)
    assert listed["request_approval"].input_schema["required"] == ["operation"]
    assert listed["wait"].input_schema["required"] == ["ref"]
    for words in ("request_approval", "secret", "refus", "`wait`", "ask"):
        assert words in instructions


# -- asking and waiting ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_answered_while_it_waits_returns_the_answer(
    aye: Aye, mode: str, quick_progress: None
) -> None:
    progress = Progress()
    async with connected(aye, mode) as client:
        call = asyncio.create_task(client.call_tool(
            "ask", {"question": "Ship 1.4.2 tonight?", "options": ["yes", "no"], "wait_s": 30},
            progress_callback=progress,
        ))
        ask = await parked_ask(aye)
        await asyncio.wait_for(progress.ticked.wait(), 5)
        assert (await aye.answer(ask["ref"], "yes", note="after the standup"))[0] == 200
        got = result(await asyncio.wait_for(call, 10))
    assert got["status"] == "answered" and got["ref"] == ask["ref"]
    assert got["answer"] == {"value": "yes", "option": 1, "note": "after the standup"}
    assert "answered_by" not in got  # the agent's view
    first = progress.seen[0]
    assert first[0] == 0 and first[1] == 30 and ask["ref"] in (first[2] or "")
    assert [p for p, _, _ in progress.seen] == sorted(p for p, _, _ in progress.seen)


@pytest.mark.parametrize("mode", MODES)
async def test_an_unanswered_ask_comes_back_open_and_wait_picks_it_up(aye: Aye, mode: str) -> None:
    async with connected(aye, mode) as client:
        first = result(await client.call_tool(
            "ask", {"question": "Which region?", "format": "multi",
                    "options": ["eu", "us", "ap"], "max": 2, "wait_s": 1}))
        assert first["status"] == "open" and first["format"] == "multi"
        waiting = asyncio.create_task(client.call_tool("wait", {"ref": first["ref"], "wait_s": 30}))
        await aye.parked()
        assert (await aye.answer(first["ref"], "1, 3"))[0] == 200
        got = result(await asyncio.wait_for(waiting, 10))
    assert got["status"] == "answered"
    assert got["answer"]["value"] == ["eu", "ap"] and got["answer"]["options"] == [1, 3]


async def test_every_format_can_be_asked(aye: Aye) -> None:
    form = {"type": "object", "properties": {"count": {"type": "integer", "maximum": 10}},
            "required": ["count"]}
    asked: list[dict[str, Any]] = [
        {"question": "Name it?"},
        {"question": "Pick", "options": ["a", "b"]},
        {"question": "Some", "options": ["a", "b", "c"], "format": "multi", "min": 1, "max": 2},
        {"question": "Sure?", "format": "confirm"},
        {"question": "Go on?", "format": "ack"},
        {"question": "How many?", "format": "form", "schema": form},
    ]
    async with connected(aye) as client:
        for args in asked:
            got = result(await client.call_tool("ask", {**args, "wait_s": 0}))
            assert got["status"] == "open"
            assert got["format"] == args.get("format", "choice" if "options" in args else "text")
    assert (await aye.answer((await open_asks(aye))[0]["ref"], '{"count": 3}'))[0] == 200


async def test_a_client_that_goes_mid_wait_loses_nothing(aye: Aye) -> None:
    async with connected(aye) as client:
        call = asyncio.create_task(client.call_tool("ask", {"question": "Merge it?",
                                                            "wait_s": 120}))
        ask = await parked_ask(aye)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    # The client has gone; its question has not.
    assert [a["ref"] for a in await open_asks(aye)] == [ask["ref"]]
    assert (await aye.answer(ask["ref"], "merge after CI"))[0] == 200
    async with connected(aye) as again:
        got = result(await again.call_tool("wait", {"ref": ask["ref"], "wait_s": 0}))
    assert got["answer"]["value"] == "merge after CI"


async def test_a_sensitive_answer_is_read_once(aye: Aye) -> None:
    async with connected(aye) as client:
        first = result(await client.call_tool(
            "ask", {"question": "The staging pin?", "sensitive": True, "wait_s": 0}))
        assert (await aye.answer(first["ref"], "4711"))[0] == 200
        read = result(await client.call_tool("wait", {"ref": first["ref"]}))
        again = result(await client.call_tool("wait", {"ref": first["ref"]}))
    assert read["answer"]["value"] == "4711"
    assert again["answer"] == {"value": None, "option": None, "note": None, "erased": True}


# -- approvals ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_an_approval_is_waited_on_and_used_and_the_next_call_asks_again(
    start_mcp: Any, mode: str
) -> None:
    aye = await start_mcp(GATED)
    call = {"operation": "deploy.prod", "input": {"version": "1.4.2"}}
    async with connected(aye, mode) as client:
        assert result(await client.call_tool(
            "request_approval", {"operation": "build.all", "input": {}})) == {"decision": "allow"}
        approving = asyncio.create_task(client.call_tool("request_approval",
                                                         {**call, "wait_s": 30}))
        ask = await parked_ask(aye)
        assert ask["kind"] == "approval" and ask["input"] == {"version": "1.4.2"}
        assert (await aye.answer(ask["ref"], "approve"))[0] == 200
        allowed = result(await asyncio.wait_for(approving, 10))
        assert allowed.pop("receipt").count(".") == 2  # signed (tests/e2e/test_receipts.py)
        assert allowed == {"decision": "allow", "approval": ask["id"]}
        # The allow was used: the same call again asks a person again.
        again = result(await client.call_tool("request_approval", {**call, "wait_s": 0}))
    assert again["decision"] == "pending" and again["ask"]["id"] != ask["id"]
    history = await aye.get(ask["ref"], operator=True)
    assert [e["event"] for e in history["history"]].count("used") == 1


async def test_a_pending_approval_is_waited_on_then_used_by_the_same_call(start_mcp: Any) -> None:
    aye = await start_mcp(GATED)
    call = {"operation": "deploy.staging", "input": {"v": 2}, "wait_s": 0}
    async with connected(aye) as client:
        pending = result(await client.call_tool("request_approval", call))
        assert pending["decision"] == "pending"
        ref = pending["ask"]["ref"]
        assert (await aye.answer(ref, "approve"))[0] == 200
        approved = result(await client.call_tool("wait", {"ref": ref}))
        assert approved["outcome"] == "approved"
        allowed = result(await client.call_tool("request_approval", call))
    assert allowed.pop("receipt").count(".") == 2
    assert allowed == {"decision": "allow", "approval": pending["ask"]["id"]}


async def test_a_refusal_is_a_result_with_who_and_why_and_is_remembered(start_mcp: Any) -> None:
    aye = await start_mcp(GATED)
    call = {"operation": "deploy.prod", "input": {"version": "9.9"}}
    async with connected(aye) as client:
        refusing = asyncio.create_task(client.call_tool("request_approval", {**call, "wait_s": 30}))
        ask = await parked_ask(aye)
        assert (await aye.answer(ask["ref"], "refuse", note="not on a Friday"))[0] == 200
        refused = result(await asyncio.wait_for(refusing, 10))
        repeat = result(await client.call_tool("request_approval", call))
    assert refused == {"decision": "refuse", "error": "approval_refused", "by": "operator:local",
                       "note": "not on a Friday", "repeat": False, "approval": ask["id"],
                       "message": refused["message"]}
    assert repeat["decision"] == "refuse" and repeat["error"] == "approval_refused"
    assert repeat["repeat"] is True and repeat["by"] == "operator:local"
    assert repeat["note"] == "not on a Friday"
    assert len(await open_asks(aye)) == 0  # nobody was asked again


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_error_results_that_start_with_the_code(aye: Aye, mode: str) -> None:
    async with connected(aye, mode) as client:
        cases: dict[str, tuple[str, dict[str, Any]]] = {
            "invalid_field: question: must not be empty": ("ask", {"question": ""}),
            "invalid_field: colour: is not a field aye knows": ("ask", {"question": "Q",
                                                                          "colour": "red"}),
            "invalid_field: options: a multi ask needs": ("ask", {"question": "Q", "format": "multi"}),
            "invalid_field: wait_s:": ("ask", {"question": "Q", "wait_s": 301}),
            "invalid_field: deadline: must be in the future": (
                "ask", {"question": "Q", "deadline": "2001-01-01T00:00:00Z"}),
            "invalid_field: operation:": ("request_approval", {"operation": "deploy prod"}),
            "invalid_field: ref: is required": ("wait", {}),
            "not_found: no such ask": ("wait", {"ref": "q999"}),
            "invalid_field: question: must not contain NUL": ("ask", {"question": "a\u0000b"}),
            "body_too_large:": ("ask", {"question": "Q", "context": "x" * 70_000}),
        }
        for expected, (name, args) in cases.items():
            assert error(await client.call_tool(name, args)).startswith(expected), expected
        refused = await client.call_tool("ask", {"question": ""})
    assert refused.structured_content == {"error": "invalid_field", "field": "question",
                                          "message": "question: must not be empty"}
    assert await open_asks(aye) == []


async def test_no_token_or_an_unknown_one_is_401_before_any_mcp(aye: Aye) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic agent"}):
        resp = await aye.client.post("/mcp", json=init, headers={**headers, **auth})
        assert resp.status == 401 and resp.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await resp.json())["error"] == "unauthorized"
    resp = await aye.client.post("/mcp", json=init, headers={
        **headers, "Authorization": f"Bearer {OPERATOR_TOKEN}"})
    assert resp.status == 403 and (await resp.json())["error"] == "agents_only"
    assert aye.app[MCP].endpoint is None  # nothing of the SDK was loaded or started for them
    with pytest.raises(ExceptionGroup) as refused:  # the SDK's client cannot even connect
        async with connected(aye, token="nope"):
            pass
    assert refused.group_contains(MCPError)


async def test_each_agent_has_its_own_sessions_and_asks(
    start_mcp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AYE_TOKEN_A", "token-a")
    monkeypatch.setenv("AYE_TOKEN_B", "token-b")
    aye = await start_mcp({"agents": [
        {"name": "a", "token_env": "AYE_TOKEN_A"}, {"name": "b", "token_env": "AYE_TOKEN_B"}]})
    async with connected(aye, token="token-a") as a, connected(aye, token="token-b") as b:
        mine = result(await a.call_tool("ask", {"question": "Whose?", "wait_s": 0}))
        assert error(await b.call_tool("wait", {"ref": mine["ref"]})) == "not_found: no such ask"
        assert result(await a.call_tool("wait", {"ref": mine["ref"], "wait_s": 0}))["id"] == mine["id"]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    resp = await aye.client.post("/mcp", json=init,
                                 headers={**headers, "Authorization": "Bearer token-a"})
    assert resp.status == 200
    session = resp.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    resp = await aye.client.post("/mcp", json=listing, headers={
        **headers, "Authorization": "Bearer token-b", "mcp-session-id": session,
        "mcp-protocol-version": "2025-06-18"})
    assert resp.status == 404  # as if there were no such session


async def test_a_host_that_is_not_aye_is_refused(aye: Aye) -> None:
    """DNS rebinding: a page at evil.example whose name resolves to 127.0.0.1."""
    resp = await aye.client.post("/mcp", data=b"{}", headers={
        "Host": "evil.example:8080", "Authorization": f"Bearer {AGENT_TOKEN}",
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert resp.status == 421


async def test_the_public_url_is_aye_s_own_name(start_mcp: Any) -> None:
    aye = await start_mcp(AYE_PUBLIC_URL="https://aye.example.com")
    async with aiohttp.ClientSession() as session:
        resp = await session.post(str(aye.client.make_url("/mcp")), data=b"not json", headers={
            "Host": "aye.example.com", "Authorization": f"Bearer {AGENT_TOKEN}",
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Origin": "https://aye.example.com"})
        assert resp.status == 400  # past the Host and Origin checks, to the JSON-RPC parse
