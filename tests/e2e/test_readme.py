"""The README's Python client example runs as printed, against a real aye."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.e2e.test_process import Api, Server, base_env, free_port, stop

ROOT = Path(__file__).resolve().parents[2]


def readme_client_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### The Python client"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


async def test_the_readme_client_example_runs_as_printed(tmp_path: Path) -> None:
    port = free_port()
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_PORT=str(port))
    log = tmp_path / "serve.log"
    with log.open("wb") as out:  # generated tokens, as the README's first command
        proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
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
            (tmp_path / "example.py").write_text(readme_client_example().replace("8080", str(port)))
            example = await asyncio.create_subprocess_exec(
                sys.executable, "example.py", cwd=tmp_path, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for _ in range(500):
                status, page = await api.call("GET", "/v1/asks?status=open", token=operator)
                if status == 200 and page["asks"]:
                    break
                await asyncio.sleep(0.02)
            ref = page["asks"][0]["ref"]
            assert (await api.call("POST", f"/v1/asks/{ref}/answer", token=operator,
                                   json={"answer": "yes"}))[0] == 200
            out, err = await asyncio.wait_for(example.communicate(), 30)
        assert example.returncode == 0, err.decode()
        assert out.decode().splitlines() == [
            "GPU: yes", "deploying 1.4.2", "migrating to 0042"
        ]
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
    port = free_port()
    secrets = {"AYE_TOKEN_SIGNER": "signer-token", "AYE_DOCSIGN_SECRET": "docsign-secret",
               "AYE_PUBLIC_URL": "https://aye.example.com"}
    (tmp_path / "aye.toml").write_text(config)
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", port=port,
                                **secrets)
    try:
        (tmp_path / "example.py").write_text(code.replace("8080", str(port)))
        env = {**base_env(tmp_path, "unused"), **secrets}
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
