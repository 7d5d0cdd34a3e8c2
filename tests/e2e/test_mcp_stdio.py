"""`aye mcp` over stdio, started by the official MCP SDK's client as an MCP client starts it,
against a real `aye serve` process, with the operator answering over the HTTP API."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp import Client, StdioServerParameters

from bot.cli import parser
from tests.conftest import eventually
from tests.e2e.test_mcp_http import Progress, error, result
from tests.e2e.test_process import (
    AGENT,
    OP,
    Server,
    base_env,
    nothing_listening,
    start_server,
    stop,
)

GATES = """
[defaults]
responders = ["operator:local"]

[[gates]]
operations = ["deploy."]
timeout = "2h"
"""


def _cli_has_mcp() -> bool:
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            parser().parse_args(["mcp"])
        except SystemExit:
            return False
    return True


# `aye mcp` once the CLI has the subcommand; the module's own entry (the same code) until then.
COMMAND = [sys.executable, "-m", *(["bot", "mcp"] if _cli_has_mcp() else ["bot.cli.mcp"])]


@pytest.fixture
async def served(tmp_path: Path, sqlite_url: str) -> AsyncIterator[Server]:
    (tmp_path / "aye.toml").write_text(GATES)
    server = await start_server(tmp_path, sqlite_url)
    yield server
    stop(server, signal.SIGKILL)


def mcp_env(tmp: Path, url: str, token: str | None = AGENT) -> dict[str, str]:
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/none.db", AYE_URL=url)
    if token is not None:
        env["AYE_AGENT_TOKEN"] = token
    return env


@contextlib.asynccontextmanager
async def stdio(tmp: Path, url: str, token: str = AGENT, mode: str = "legacy") -> AsyncIterator[Client]:
    params = StdioServerParameters(command=COMMAND[0], args=COMMAND[1:], env=mcp_env(tmp, url, token),
                                   cwd=str(tmp))
    async with Client(params, mode=mode) as client:
        yield client


class Operator:
    def __init__(self, url: str) -> None:
        self.url = url

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session, session.request(
            method, self.url + path, json=body, headers={"Authorization": f"Bearer {OP}"}
        ) as resp:
            return resp.status, await resp.json()

    async def open_asks(self) -> list[dict[str, Any]]:
        return (await self.request("GET", "/v1/asks?status=open"))[1]["asks"]  # type: ignore[no-any-return]

    async def the_open_ask(self) -> dict[str, Any]:
        async def one() -> bool:
            return len(await self.open_asks()) == 1

        await eventually(one, timeout=15)
        return (await self.open_asks())[0]

    async def parked(self) -> None:
        async def some() -> bool:
            async with aiohttp.ClientSession() as session, session.get(self.url + "/healthz") as r:
                return bool((await r.json())["parked"])

        await eventually(some, timeout=15)

    async def answer(self, ref: str, answer: str, note: str | None = None) -> None:
        body = {"answer": answer} | ({"note": note} if note else {})
        status, reply = await self.request("POST", f"/v1/asks/{ref}/answer", body)
        assert status == 200, reply


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_ask_is_answered_while_it_waits_with_progress_ticking(
    tmp_path: Path, served: Server, mode: str
) -> None:
    operator, progress = Operator(served.url), Progress()
    async with stdio(tmp_path, served.url, mode=mode) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["ask", "wait",
                                                                       "request_approval"]
        assert "request_approval" in (client.instructions or "")
        call = asyncio.create_task(client.call_tool(
            "ask", {"question": "Spend $40 on a GPU?", "format": "confirm", "wait_s": 60},
            progress_callback=progress))
        ask = await operator.the_open_ask()
        await asyncio.wait_for(progress.ticked.wait(), 15)  # a tick while it waits: every 5 s
        await operator.answer(ask["ref"], "yes", note="cap it at $50")
        got = result(await asyncio.wait_for(call, 15))
    assert got["status"] == "answered" and got["format"] == "confirm"
    assert got["answer"] == {"value": True, "option": None, "note": "cap it at $50"}
    assert progress.seen[0][0] == 0 and progress.seen[-1][0] >= 5


async def test_an_ask_that_times_out_is_picked_up_by_wait(tmp_path: Path, served: Server) -> None:
    operator = Operator(served.url)
    async with stdio(tmp_path, served.url) as client:
        first = result(await client.call_tool("ask", {"question": "Which?", "options": ["a", "b"],
                                                      "wait_s": 1}))
        assert first["status"] == "open"
        await operator.answer(first["ref"], "2")
        got = result(await client.call_tool("wait", {"ref": first["ref"], "wait_s": 5}))
    assert got["status"] == "answered" and got["answer"]["value"] == "b"


async def test_a_wait_goes_on_across_a_restart_of_aye(
    tmp_path: Path, sqlite_url: str, served: Server
) -> None:
    async with stdio(tmp_path, served.url) as client:
        first = result(await client.call_tool("ask", {"question": "Still on?", "wait_s": 0}))
        waiting = asyncio.create_task(client.call_tool("wait", {"ref": first["ref"], "wait_s": 60}))
        await Operator(served.url).parked()  # the wait reached the old process: now it dies
        stop(served, signal.SIGKILL)
        port = int(served.url.rsplit(":", 1)[1])
        again = await start_server(tmp_path, sqlite_url, port=port)
        try:
            await Operator(again.url).answer(first["ref"], "yes, still on")
            got = result(await asyncio.wait_for(waiting, 20))
        finally:
            stop(again, signal.SIGKILL)
    assert got["status"] == "answered" and got["answer"]["value"] == "yes, still on"


async def test_an_approval_is_used_once_and_a_refusal_says_who_and_why(
    tmp_path: Path, served: Server
) -> None:
    operator = Operator(served.url)
    call = {"operation": "deploy.prod", "input": {"version": "1.4.2"}}
    async with stdio(tmp_path, served.url) as client:
        approving = asyncio.create_task(client.call_tool("request_approval", {**call, "wait_s": 60}))
        ask = await operator.the_open_ask()
        await operator.answer(ask["ref"], "approve")
        allowed = result(await asyncio.wait_for(approving, 15))
        assert allowed.pop("receipt").count(".") == 2  # signed (tests/e2e/test_receipts.py)
        assert allowed == {"decision": "allow", "approval": ask["id"]}
        # Used: the same call again asks again, and this time it is refused.
        refusing = asyncio.create_task(client.call_tool("request_approval", {**call, "wait_s": 60}))
        second = await operator.the_open_ask()
        assert second["id"] != ask["id"]
        await operator.answer(second["ref"], "refuse", note="freeze until Monday")
        refused = result(await asyncio.wait_for(refusing, 15))
        repeat = result(await client.call_tool("request_approval", call))
    assert refused["decision"] == "refuse" and refused["error"] == "approval_refused"
    assert (refused["by"], refused["note"], refused["repeat"]) == (
        "operator:local", "freeze until Monday", False)
    assert (repeat["error"], repeat["by"], repeat["note"], repeat["repeat"]) == (
        "approval_refused", "operator:local", "freeze until Monday", True)
    assert await operator.open_asks() == []


async def test_bad_arguments_and_unknown_refs_are_error_results(
    tmp_path: Path, served: Server
) -> None:
    async with stdio(tmp_path, served.url) as client:
        assert error(await client.call_tool("ask", {"question": "  "})) == (
            "invalid_field: question: must not be blank")
        assert error(await client.call_tool("ask", {"question": "Q", "format": "form"})).startswith(
            "invalid_field: schema: a form needs a schema")
        assert error(await client.call_tool("wait", {"ref": "q404"})) == "not_found: no such ask"
        assert error(await client.call_tool("request_approval", {"input": {}})).startswith(
            "invalid_field: operation: is required")
    assert await Operator(served.url).open_asks() == []


async def test_a_wrong_token_is_unauthorized_on_every_call(tmp_path: Path, served: Server) -> None:
    async with stdio(tmp_path, served.url, token="not-a-token") as client:
        for name, args in (("ask", {"question": "Q"}), ("wait", {"ref": "q1"}),
                           ("request_approval", {"operation": "deploy.prod"})):
            assert error(await client.call_tool(name, args)).startswith("unauthorized: "), name
    assert await Operator(served.url).open_asks() == []


async def test_an_aye_that_cannot_be_reached_is_said_so(tmp_path: Path) -> None:
    with nothing_listening() as refused:
        async with stdio(tmp_path, refused) as client:
            text = error(await client.call_tool("ask", {"question": "Anyone there?"}))
    assert text.startswith("unreachable: cannot reach aye at http://127.0.0.1:")


async def test_closing_stdin_ends_aye_mcp_and_the_ask_stays_open(
    tmp_path: Path, served: Server
) -> None:
    proc = subprocess.Popen(COMMAND, cwd=tmp_path, env=mcp_env(tmp_path, served.url),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "ask", "arguments": {"question": "Still there?", "wait_s": 300}}},
        ):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        ask = await Operator(served.url).the_open_ask()  # the call is in flight, waiting
        started = time.monotonic()
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [a["id"] for a in await Operator(served.url).open_asks()] == [ask["id"]]


@pytest.mark.parametrize(("env", "said"), [
    ({"AYE_URL": "ftp://example.com"}, "AYE_URL is not an http(s) URL"),
    ({"AYE_AGENT_TOKEN": ""}, "no agent token: set AYE_AGENT_TOKEN"),
])
def test_no_token_or_a_bad_url_is_exit_2(tmp_path: Path, env: dict[str, str], said: str) -> None:
    full = {**mcp_env(tmp_path, "http://127.0.0.1:8080"), **env}
    done = subprocess.run(COMMAND, cwd=tmp_path, env=full, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"aye: {said}") and done.stdout == ""
