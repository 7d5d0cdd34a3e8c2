"""A JSON body with the same key twice in one object, at any depth, is refused naming the key,
never silently read as one of the two: 400 `malformed_body` on the API and at an external ask's
door (the ticket stays usable), and over `/mcp` an error result `malformed_body: …` for a tool
call (a 400 for any other request); nothing is asked, answered or created. On both stores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import AGENT_TOKEN, OPERATOR_HEADERS, Aye, StartAye
from tests.e2e.test_bodies import GATED, open_asks
from tests.e2e.test_external import GOOD, door_path, external, post, started
from tests.e2e.test_mcp_http import start_mcp_aye

JSON = {"Content-Type": "application/json"}


async def refused(aye: Aye, path: str, raw: str, headers: dict[str, str], key: str) -> None:
    resp = await aye.client.post(path, data=raw.encode(), headers={**headers, **JSON})
    body = await resp.json()
    assert resp.status == 400, body
    assert body["error"] == "malformed_body", body
    assert f'"{key}"' in body["message"] and "twice" in body["message"], body


async def test_the_api_refuses_a_key_twice_at_any_depth_and_creates_nothing(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, GATED)
    await refused(aye, "/v1/asks", '{"question": "Ship v1?", "question": "Delete prod?"}',
                  aye.headers, "question")
    # What a person would approve and what a first-key library would run differ, deep down.
    await refused(aye, "/v1/calls", '{"operation": "deploy.prod", "input": {"steps": [{"cmd": '
                  '"echo safe", "cmd": "rm -rf /"}]}}', aye.headers, "cmd")
    await refused(aye, "/v1/starts", '{"work": {"github": {"repo": "octo/app", "repo": "octo/x",'
                  ' "number": 7}}}', aye.headers, "repo")
    assert await open_asks(aye) == []
    asked = await aye.ask(question="Ship it?", options=["yes", "no"])
    await refused(aye, f"/v1/asks/{asked['id']}/answer", '{"answer": "yes", "answer": "no"}',
                  OPERATOR_HEADERS, "answer")
    await refused(aye, "/v1/asks/wait", f'{{"ids": ["{asked["id"]}"], "timeout": 0, '
                  '"timeout": 60}', aye.headers, "timeout")
    assert (await aye.get(asked["id"], operator=True))["status"] == "open"
    # The same key in two objects is no duplicate.
    resp = await aye.client.post("/v1/calls", headers=aye.headers, json={
        "operation": "deploy.prod", "input": {"a": {"v": 1}, "b": {"v": 2}}})
    assert resp.status in (200, 202), await resp.json()
    assert await aye.answer(asked["id"], "yes") == (200, {"outcome": "taken", "ref": asked["ref"]})


async def test_the_external_door_refuses_a_key_twice_and_the_ticket_stays_usable(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    ask = await external(aye)
    raw = b'{"reference": "inv-42", "status": "void", "status": "signed", "signer": "Ada"}'
    status, body = await post(aye, door_path(ask), None, raw=raw)
    assert (status, body["error"]) == (400, "malformed_body"), body
    assert '"status"' in body["message"] and "twice" in body["message"]
    view = await aye.get(ask["id"], operator=True)
    assert view["status"] == "open" and view["ticket"] == "waiting"
    assert await post(aye, door_path(ask), GOOD) == (200, {"outcome": "taken"})


# -- /mcp: the SDK's client cannot send a key twice, so the requests are written by hand ------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", **JSON}
VERSION = "2025-11-25"


def messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response, an SSE stream or a plain JSON body."""
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")
            and line[5:].strip()]


class RawMcp:
    """An MCP session over plain HTTP: the 2025 handshake, then requests as raw text."""

    def __init__(self, aye: Aye, token: str) -> None:
        self.aye, self.session = aye, ""
        self.headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}

    async def post(self, raw: str) -> tuple[int, list[dict[str, Any]]]:
        headers = dict(self.headers)
        if self.session:
            headers.update({"Mcp-Session-Id": self.session, "Mcp-Protocol-Version": VERSION})
        resp = await self.aye.client.post("/mcp", data=raw.encode(), headers=headers)
        self.session = self.session or resp.headers.get("Mcp-Session-Id", "")
        return resp.status, messages(await resp.text())

    async def start(self) -> None:
        status, _ = await self.post(json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}))
        assert status == 200 and self.session
        status, _ = await self.post('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        assert status == 202


async def test_a_tool_call_whose_arguments_hold_a_key_twice_is_an_error_result(
    database_url: str,
) -> None:
    aye = await start_mcp_aye(database_url, GATED)
    try:
        mcp = RawMcp(aye, AGENT_TOKEN)
        await mcp.start()
        status, (reply,) = await mcp.post(
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
            '"request_approval", "arguments": {"operation": "deploy.prod", "input": {"cmd": '
            '"echo safe", "cmd": "rm -rf /"}, "wait_s": 0}}}')
        assert status == 200 and reply["id"] == 7, reply
        result = reply["result"]
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert text.startswith("malformed_body: ") and '"cmd"' in text, text
        status, (reply,) = await mcp.post(
            '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "ask", '
            '"arguments": {"question": "Ship v1?", "question": "Delete prod?", "wait_s": 0}}}')
        assert reply["result"]["content"][0]["text"].startswith('malformed_body: the key "question"')
        assert await open_asks(aye) == []  # nothing asked, no approval pending
        # A request that is no tool call: refused whole, as the SDK refuses a body it cannot parse.
        status, (reply,) = await mcp.post(
            '{"jsonrpc": "2.0", "id": 9, "method": "tools/list", "method": "ping"}')
        assert status == 400 and reply["error"]["message"].startswith("malformed_body: "), reply
        assert '"method"' in reply["error"]["message"]
        # The same call, each key once, asks.
        status, (reply,) = await mcp.post(
            '{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "ask", '
            '"arguments": {"question": "Ship v1?", "wait_s": 0}}}')
        assert reply["result"].get("isError") is not True, reply
        assert [a["question"] for a in await open_asks(aye)] == ["Ship v1?"]
    finally:
        await aye.client.close()
