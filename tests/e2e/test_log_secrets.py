"""At AYE_LOG_LEVEL=debug, a real `aye serve` talking to the fake Slack writes aye's own debug
lines and nothing that leaks: no token (Slack's, the agents', the operator's), no ticket, no
sensitive answer, and no library's raw request, response or Socket Mode envelope.

slack-bolt copies the root logger's level onto its own loggers when it is given none, and
slack-sdk logs request bodies and every envelope at debug: the run below goes through a
sensitive modal answer, a button press on an approval, and an external door's delivery.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_process import OP, Server, start_server
from tests.fake_slack import APP_TOKEN, BOT_TOKEN, DEFAULT_CHANNEL, FakeSlack, SlackCall

RESPONDER = "U0123ABCD"
AGENT_TOKEN = "agent-token-never-logged-7c1f"
DOOR_SECRET = "door-secret-never-logged-41aa"
SECRET_ANSWER = "hunter2-typed-in-a-modal"
# Agent text that only Slack's request bodies carry: seen in a log, a raw payload was logged.
QUESTION_MARK = "question-only-in-payloads-93b1"
INPUT_MARK = "input-only-in-payloads-5d2e"
PUBLIC = "https://aye.example.com"
CONFIG = f"""
[defaults]
responders = ["slack:{RESPONDER}", "operator:local"]

[slack]
default_channel = "{DEFAULT_CHANNEL}"

[[agents]]
name = "bot"
token_env = "AYE_TOKEN_BOT"
verifiers = ["docsign"]

[[verifiers]]
name = "docsign"
secret_env = "AYE_DOCSIGN_SECRET"
header = "X-Signature-256"
scheme = "hmac-sha256"

[[gates]]
operations = ["deploy."]
responders = ["slack:{RESPONDER}"]
"""
PINNED = {"type": "object", "properties": {"reference": {"const": "inv-42"}},
          "required": ["reference"]}


def slack_env(fake: FakeSlack) -> dict[str, Any]:
    return {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN,
            "SLACK_API_URL": fake.api_url}


async def stop_async(server: Server) -> None:
    """SIGTERM and wait, without blocking the loop the fakes answer on (aye closes its Socket
    Mode connection on the way out)."""
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(server.proc.wait, 15)


class Agent:
    def __init__(self, session: aiohttp.ClientSession, server: Server) -> None:
        self.session, self.url = session, server.url

    async def call(self, method: str, path: str, token: str = AGENT_TOKEN,
                   **kw: Any) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}", **kw.pop("headers", {})}
        async with self.session.request(method, self.url + path, headers=headers, **kw) as resp:
            return resp.status, await resp.json()


def ok(call: SlackCall) -> bool:
    return call.ok


def button(message: dict[str, Any], label: str) -> tuple[str, str]:
    for block in message.get("blocks") or []:
        for element in block.get("elements") or []:
            if element.get("type") == "button" and element["text"]["text"] == label:
                return element["action_id"], element["value"]
    raise AssertionError(f"no button {label!r}")


async def press(fake: FakeSlack, posted: SlackCall, label: str) -> None:
    message = fake.message(DEFAULT_CHANNEL, posted.response["ts"])
    assert message is not None
    action_id, value = button(message, label)
    await fake.press_button(RESPONDER, action_id, value, DEFAULT_CHANNEL, posted.response["ts"])


@pytest.fixture
async def debug_server(
    tmp_path: Path, fake_slack: FakeSlack
) -> AsyncIterator[tuple[Server, FakeSlack]]:
    (tmp_path / "aye.toml").write_text(CONFIG)
    server = await start_server(
        tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_LOG_LEVEL="debug",
        AYE_TOKEN_BOT=AGENT_TOKEN, AYE_DOCSIGN_SECRET=DOOR_SECRET, AYE_PUBLIC_URL=PUBLIC,
        **slack_env(fake_slack),
    )
    try:
        yield server, fake_slack
    finally:
        await stop_async(server)


async def test_debug_logs_aye_s_lines_and_no_token_ticket_secret_or_payload(
    debug_server: tuple[Server, FakeSlack],
) -> None:
    server, fake = debug_server
    await fake.wait_connected(timeout=15)
    async with aiohttp.ClientSession() as session:
        agent = Agent(session, server)
        # A sensitive free-text question, answered in the modal.
        status, ask = await agent.call("POST", "/v1/asks", json={
            "question": f"The vault PIN? {QUESTION_MARK}", "sensitive": True})
        assert status == 201, ask
        posted = await fake.wait_for_call("chat.postMessage", ok, timeout=15)
        await press(fake, posted, "Answer")
        await fake.wait_for_call("views.open", ok)
        await fake.submit_view(RESPONDER, {"answer": {"text": SECRET_ANSWER}})
        status, read = await agent.call("GET", f"/v1/asks/{ask['id']}/wait?timeout=10")
        assert read["answer"]["value"] == SECRET_ANSWER

        # A gated call, approved with a button.
        call = {"operation": "deploy.prod", "input": {"note": INPUT_MARK}}
        status, pending = await agent.call("POST", "/v1/calls", json=call)
        assert status == 202, pending
        approval = await fake.wait_for_call("chat.postMessage", ok,
                                            after=fake.calls.index(posted) + 1)
        await press(fake, approval, "Approve")
        await agent.call("GET", f"/v1/asks/{pending['ask']['id']}/wait?timeout=10")
        status, allowed = await agent.call("POST", "/v1/calls", json=call)
        assert status == 200 and allowed["decision"] == "allow", allowed

        # An external ask, answered through its door: the ticket is in the path.
        status, external = await agent.call("POST", "/v1/asks", json={
            "question": "Signed?", "format": "external", "verifier": "docsign",
            "schema": PINNED})
        assert status == 201, external
        ticket = external["answer_url"].rsplit("/", 1)[1]
        body = json.dumps({"reference": "inv-42"}).encode()
        signature = hmac.new(DOOR_SECRET.encode(), body, hashlib.sha256).hexdigest()
        async with session.post(server.url + f"/v1/external/{ticket}", data=body, headers={
            "Content-Type": "application/json", "X-Signature-256": f"sha256={signature}",
        }) as resp:
            assert resp.status == 200, await resp.text()
        await agent.call("GET", "/v1/asks", token="not-a-token")
        await agent.call("GET", "/v1/asks", token=OP)
    await stop_async(server)

    log = server.output()
    # aye's own debug lines are there: the run was at debug, and the check below means something.
    assert " debug aye.slack slack.received kind=view_submission" in log, log
    assert " debug aye.slack slack.received kind=block_actions" in log
    assert " debug aye.slack slack.delivering " in log
    for secret in (SECRET_ANSWER, BOT_TOKEN, APP_TOKEN, AGENT_TOKEN, OP, DOOR_SECRET, ticket,
                   "xoxb-", "xapp-", "not-a-token"):
        assert secret not in log, secret
    for payload in (QUESTION_MARK, INPUT_MARK, "envelope_id", "response_url", "trigger_id",
                    "private_metadata", "'blocks'", '"blocks"', "/link/", "/response_url/"):
        assert payload not in log, payload
