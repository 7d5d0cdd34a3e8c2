"""The README's Python client example runs as printed, with the gate printed beside it, against
a real aye: the gated deploy waits for a person's approval, the ungated migration does not."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.e2e.test_process import (
    START_S,
    Api,
    Server,
    base_env,
    bound_port,
    stop,
)

ROOT = Path(__file__).resolve().parents[2]


def readme_client_example() -> tuple[str, str]:
    """The Python client section's config (its first TOML block) and its example."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### The Python client"):]
    config = re.search(r"```toml\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    return config, code


async def open_asks(api: Api, token: str, kind: str) -> list[dict[str, Any]]:
    """The open asks of `kind`, once there is one."""
    for _ in range(500):
        status, page = await api.call("GET", "/v1/asks?status=open", token=token)
        found = [a for a in page["asks"] if a["kind"] == kind] if status == 200 else []
        if found:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"no open {kind}")


async def test_the_readme_client_example_runs_as_printed_with_its_config(tmp_path: Path) -> None:
    config, code = readme_client_example()
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT="0")
    (tmp_path / "aye.toml").write_text(config)  # base_env's AYE_CONFIG names this file
    log = tmp_path / "serve.log"
    with log.open("wb") as out:  # generated tokens, as the README's first command
        proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, "", log)
    try:
        server.url = f"http://127.0.0.1:{await bound_port(server, time.monotonic() + START_S)}"
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            for _ in range(500):
                if (tmp_path / "aye-tokens.json").exists():
                    try:
                        if (await api.call("GET", "/healthz"))[0] == 200:
                            break
                    except aiohttp.ClientError:
                        pass
                await asyncio.sleep(0.02)
            operator = json.loads((tmp_path / "aye-tokens.json").read_text())["operator"]
            (tmp_path / "example.py").write_text(code)  # as printed: it reads AYE_URL
            example = await asyncio.create_subprocess_exec(
                sys.executable, "example.py", cwd=tmp_path, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=base_env(tmp_path, "unused", AYE_URL=server.url),
            )
            ref = (await open_asks(api, operator, "question"))[0]["ref"]
            assert (await api.call("POST", f"/v1/asks/{ref}/answer", token=operator,
                                   json={"answer": "yes"}))[0] == 200
            # The gate printed beside the example: the deploy waits for a person.
            approvals = await open_asks(api, operator, "approval")
            assert [a["operation"] for a in approvals] == ["deploy.prod"]
            assert (await api.call("POST", f"/v1/asks/{approvals[0]['ref']}/answer",
                                   token=operator, json={"answer": "approve"}))[0] == 200
            out, err = await asyncio.wait_for(example.communicate(), 30)
            # db.migrate, which no gate names, was allowed without an ask.
            _, every = await api.call("GET", "/v1/asks", token=operator)
            assert sorted(a["kind"] for a in every["asks"]) == ["approval", "question"]
        assert example.returncode == 0, err.decode()
        assert out.decode().splitlines() == [
            "GPU: yes", "deploying 1.4.2", "migrating to 0042"
        ]
        assert f"config {tmp_path / 'aye.toml'}" in log.read_text()
    finally:
        stop(server)


def readme_quick_start() -> str:
    """The two commands' section's shell block: the commands typed in a second terminal."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The two commands"):text.index("## How agents use it")]
    return next(b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "TOKEN=$(" in b)


async def test_the_quick_start_runs_as_printed_on_the_port_aye_serve_printed(
    tmp_path: Path
) -> None:
    """`aye serve` with AYE_PORT set (0 here: a port the system finds free), zero config, as in
    the first command; in a second terminal, with none of aye's variables, the quick start's
    commands with the `export AYE_URL=…` line replaced by the one aye serve printed."""
    (tmp_path / ".venv").symlink_to(sys.prefix)  # the clone's .venv/bin/aye: this one's
    env = base_env(tmp_path, "unused", AYE_PORT="0")
    env.pop("AYE_DATABASE_URL")
    env.pop("AYE_CONFIG")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(tmp_path / ".venv/bin/aye"), "serve"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, "", log)
    try:
        assert await bound_port(server, time.monotonic() + START_S), server.output()
        [printed] = re.findall(r"^aye: in another terminal: (export AYE_URL=\S+)$",
                               server.output(), re.M)
        block = readme_quick_start()
        assert block.startswith("export AYE_URL=http://127.0.0.1:8080 ")
        script = printed + "\n" + block.split("\n", 1)[1]
        terminal = {k: v for k, v in env.items() if not k.startswith("AYE_")}
        done = await asyncio.to_thread(
            subprocess.run, ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
            env=terminal, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (done.stdout, done.stderr)
        waited = json.loads(done.stdout.strip().splitlines()[-1])
        assert (waited["ref"], waited["status"], waited["answer"]["value"]) == ("q1", "answered",
                                                                                 "yes")
    finally:
        stop(server)


def readme_external_example() -> tuple[str, str]:
    """The External answers section's operator config and Python example."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("#### External answers"):]
    config = re.search(r"```toml\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    return config, code


async def test_the_readme_external_answers_example_runs_as_printed(tmp_path: Path) -> None:
    from tests.e2e.test_process import start_server

    config, code = readme_external_example()
    secrets = {"AYE_TOKEN_SIGNER": "signer-token", "AYE_DOCSIGN_SECRET": "docsign-secret",
               "AYE_PUBLIC_URL": "https://aye.example.com"}
    (tmp_path / "aye.toml").write_text(config)
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", **secrets)
    try:
        (tmp_path / "example.py").write_text(code)  # as printed: it reads AYE_URL
        env = {**base_env(tmp_path, "unused", AYE_URL=server.url), **secrets}
        example = await asyncio.create_subprocess_exec(
            sys.executable, "example.py", cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(example.communicate(), 30)
        assert example.returncode == 0, err.decode()
        assert out.decode().splitlines() == [
            "webhook: 400 payload.envelope", "webhook: 200 taken", "signed by ada@example.com"
        ]
        # Neither the secret nor the ticket reached the server's log.
        logged = server.output()
        assert "docsign-secret" not in logged, logged
        assert not re.search(r"/v1/external/[^{]", logged), logged
    finally:
        stop(server)


def readme_mcp_json_snippet() -> str:
    """The MCP section's shell snippet that writes a project's `.mcp.json`."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## MCP: aye in an agent's toolbelt"):]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return next(b for b in blocks if "cat > .mcp.json" in b)


async def test_the_readme_mcp_json_snippet_works_from_a_client_in_another_folder(
    tmp_path: Path
) -> None:
    """Pasted in aye's folder, the snippet names aye and its store by full paths: an MCP client
    starting `aye mcp` from elsewhere finds the generated agent token and asks as that agent."""
    from mcp import Client, StdioServerParameters

    from tests.e2e.test_mcp_http import result

    clone, elsewhere = tmp_path / "clone", tmp_path / "elsewhere"
    clone.mkdir()
    elsewhere.mkdir()
    subprocess.run(["bash", "-c", readme_mcp_json_snippet()], cwd=clone, check=True,
                   env={"PATH": "/usr/bin:/bin", "PWD": str(clone)})
    server_def = json.loads((clone / ".mcp.json").read_text())["mcpServers"]["aye"]
    assert server_def["command"] == f"{clone}/.venv/bin/aye" and server_def["args"] == ["mcp"]
    env = base_env(clone, server_def["env"]["AYE_DATABASE_URL"], AYE_PORT="0")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=clone, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, "", log)
    try:
        server.url = f"http://127.0.0.1:{await bound_port(server, time.monotonic() + START_S)}"
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            for _ in range(500):  # up, with its generated tokens written
                try:
                    if (clone / "aye-tokens.json").exists() and (
                            await api.call("GET", "/healthz"))[0] == 200:
                        break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.02)
        # This checkout's aye stands in for the clone's .venv/bin/aye; the env is the snippet's.
        mcp_env = {"PATH": "/usr/bin:/bin", **server_def["env"],
                   "AYE_URL": server.url, "PYTHONPATH": str(ROOT)}
        params = StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp"],
                                       env=mcp_env, cwd=str(elsewhere))
        async with Client(params) as client:
            asked = result(await client.call_tool("ask", {"question": "Ship it?", "wait_s": 0}))
        assert asked["status"] == "open" and asked["question"] == "Ship it?"
    finally:
        stop(server)
