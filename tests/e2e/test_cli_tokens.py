"""Each client acts with the token it is meant to hold, as a real `aye serve` says through
`GET /v1/whoami`: the CLI's operator commands with an agent's (or an unknown) token exit 2 with
one line before they read anything (an agent's read would erase its sensitive answers), and
`aye mcp` with the operator token asks nothing and reads nothing. And both find aye where
`aye serve` listens with the same AYE_HOST/AYE_PORT when AYE_URL is unset."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import OPERATOR_TOKEN, Aye
from tests.e2e.test_mcp_http import error, result
from tests.e2e.test_mcp_stdio import COMMAND, Operator
from tests.e2e.test_openapi import matches
from tests.e2e.test_process import (
    AGENT,
    OP,
    Api,
    Server,
    base_env,
    free_port,
    nothing_listening,
    servers,
    start_server,
    store_url,
)

__all__ = ["servers", "store_url"]  # fixtures, used by name below

SECRET = "hunter2-the-sensitive-value"
OPERATOR_COMMANDS = (["asks"], ["asks", "--all"], ["show", "{ref}"], ["answer", "{ref}", "x"],
                     ["withdraw", "{ref}"], ["watch"])


def cli(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`aye ARGS` with only `env` of aye's variables (no AYE_URL unless given)."""
    full = {k: v for k, v in base_env(tmp, f"sqlite+aiosqlite:///{tmp}/cli.db").items()
            if not k.startswith("AYE_")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp, env=full,
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


# -- GET /v1/whoami -------------------------------------------------------------------------------


async def test_whoami_names_the_operator_or_the_agent(aye: Aye) -> None:
    document = await (await aye.client.get(
        "/v1/openapi.json", headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})).json()
    spec = document["paths"]["/v1/whoami"]["get"]["responses"]
    for token, status, expected in (
        (OPERATOR_TOKEN, 200, {"as": "operator"}),
        ("agent-test-token", 200, {"as": "agent", "agent": "default"}),
        ("nobody", 401, None), (None, 401, None),
    ):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = await aye.client.get("/v1/whoami", headers=headers)
        body = await resp.json()
        assert resp.status == status, body
        assert expected is None or body == expected
        matches(document, spec[str(status)]["content"]["application/json"]["schema"], body)


# -- the CLI holds the operator token -------------------------------------------------------------


async def test_the_cli_with_an_agents_token_exits_2_and_erases_nothing(
    tmp_path: Path, store_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    server = await start_server(tmp_path, store_url)
    servers.append(server)
    api = Api(session, server.url)
    _, ask = await api.call("POST", "/v1/asks", json={"question": "The vault code?",
                                                      "sensitive": True})
    assert (await api.call("POST", f"/v1/asks/{ask['id']}/answer", token=OP,
                           json={"answer": SECRET}))[0] == 200
    for token, said in ((AGENT, "is agent default's token"), ("not-a-token", "not a token")):
        for command in OPERATOR_COMMANDS:
            args = [part.format(ref=ask["ref"]) for part in command]
            done = cli(tmp_path, *args, AYE_URL=server.url, AYE_OPERATOR_TOKEN=token)
            assert done.returncode == 2, (args, done.stderr)
            line = one_line(done)
            assert line.startswith("aye: AYE_OPERATOR_TOKEN is not the operator token"), line
            assert said in line and done.stdout == "" and SECRET not in done.stderr
    # The agent still gets its answer: no read of the CLI's was taken for the agent's.
    status, got = await api.call("GET", f"/v1/asks/{ask['id']}")
    assert status == 200 and got["answer"]["value"] == SECRET
    assert (await api.call("GET", f"/v1/asks/{ask['id']}"))[1]["answer"]["value"] is None
    assert cli(tmp_path, "asks", "--all", AYE_URL=server.url,
               AYE_OPERATOR_TOKEN=OP).returncode == 0


# -- aye mcp holds an agent's token -----------------------------------------------------------------


def mcp_params(tmp: Path, token: str, **env: str) -> StdioServerParameters:
    full = {k: v for k, v in base_env(tmp, f"sqlite+aiosqlite:///{tmp}/none.db").items()
            if not k.startswith("AYE_")}
    full.update(AYE_AGENT_TOKEN=token, **env)
    return StdioServerParameters(command=COMMAND[0], args=COMMAND[1:], env=full, cwd=str(tmp))


TOOL_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ask", {"question": "May I?", "wait_s": 0}),
    ("request_approval", {"operation": "deploy.prod", "input": {"v": 1}, "wait_s": 0}),
)


async def test_aye_mcp_with_the_operator_token_asks_and_reads_nothing(
    tmp_path: Path, store_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    (tmp_path / "aye.toml").write_text('[[gates]]\noperations = ["deploy."]\n')
    server = await start_server(tmp_path, store_url)
    servers.append(server)
    _, theirs = await Api(session, server.url).call("POST", "/v1/asks", json={
        "question": "An agent's own question", "sensitive": True})
    await Operator(server.url).answer(theirs["ref"], SECRET)
    async with Client(mcp_params(tmp_path, OP, AYE_URL=server.url)) as client:
        calls = [*TOOL_CALLS, ("wait", {"ref": theirs["ref"], "wait_s": 0})]
        for name, args in calls:
            text = error(await client.call_tool(name, args))
            assert text.startswith("unauthorized: AYE_AGENT_TOKEN is not an agent's token"), text
            assert "operator token" in text and SECRET not in text
    listed = (await Operator(server.url).request("GET", "/v1/asks"))[1]["asks"]
    assert [a["id"] for a in listed] == [theirs["id"]]  # nothing asked, no approval pending
    history = (await Operator(server.url).request("GET", f"/v1/asks/{theirs['id']}"))[1]["history"]
    assert "read" not in [entry["event"] for entry in history]


async def test_aye_mcp_started_before_aye_checks_the_token_once_aye_is_up(
    tmp_path: Path, sqlite_url: str, servers: list[Server]
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with Client(mcp_params(tmp_path, OP, AYE_URL=url)) as client:
        text = error(await client.call_tool("ask", {"question": "Anyone?", "wait_s": 0}))
        assert text.startswith(f"unreachable: cannot reach aye at {url} (AYE_URL)"), text
        server = await start_server(tmp_path, sqlite_url, port=port)
        servers.append(server)
        for name, args in TOOL_CALLS:
            assert error(await client.call_tool(name, args)).startswith("unauthorized: "), name
    assert await Operator(server.url).open_asks() == []


# -- AYE_URL defaults to where aye serve listens ----------------------------------------------------


async def test_aye_port_alone_finds_the_server_started_with_it(
    tmp_path: Path, sqlite_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    server = await start_server(tmp_path, sqlite_url)
    servers.append(server)
    port = server.url.rpartition(":")[2]  # the port it said it bound
    _, ask = await Api(session, server.url).call("POST", "/v1/asks", json={"question": "Found?"})
    listed = cli(tmp_path, "asks", AYE_PORT=port, AYE_OPERATOR_TOKEN=OP)
    assert listed.returncode == 0, listed.stderr
    assert ask["ref"] in listed.stdout
    listed = cli(tmp_path, "asks", AYE_HOST="0.0.0.0", AYE_PORT=port, AYE_OPERATOR_TOKEN=OP)
    assert listed.returncode == 0, listed.stderr  # aye serve on every address: reached locally
    async with Client(mcp_params(tmp_path, AGENT, AYE_PORT=port)) as client:
        made = result(await client.call_tool("ask", {"question": "Over MCP?", "wait_s": 0}))
    assert made["status"] == "open"


def test_an_unreachable_server_names_aye_url_and_exits_3(tmp_path: Path) -> None:
    with nothing_listening() as refused:
        port = refused.rpartition(":")[2]
        done = cli(tmp_path, "asks", AYE_PORT=port, AYE_OPERATOR_TOKEN=OP)
    assert done.returncode == 3
    line = one_line(done)
    assert f"http://127.0.0.1:{port}" in line and "AYE_URL" in line, line


@pytest.mark.parametrize("command", [["asks"], ["mcp"]])
def test_a_port_that_is_not_one_is_exit_2(tmp_path: Path, command: list[str]) -> None:
    done = cli(tmp_path, *command, AYE_PORT="80a", AYE_OPERATOR_TOKEN=OP, AYE_AGENT_TOKEN=AGENT)
    assert done.returncode == 2 and one_line(done) == "aye: AYE_PORT: '80a' is not a port number"

