"""The README's receipt example runs as printed beside its gate: an agent's gated deploy waits
for the operator's approval, then checks its receipt against `GET /v1/keys`, and what ran is
reported on the way out."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
from pathlib import Path

import aiohttp
import rfc8785

from tests.e2e.test_process import AGENT, OP, Api, base_env, start_server, stop

ROOT = Path(__file__).resolve().parents[2]
# The README's first client example gates this call; a reader may well have refused it.
FIRST_EXAMPLES_CALL = {"operation": "deploy.prod", "input": {"version": "1.4.2"}}


def readme_receipt_example() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("#### Receipts: what was approved"):]
    config = re.search(r"```toml\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    return config, code


async def test_the_readme_receipt_example_runs_as_printed(tmp_path: Path) -> None:
    """After the first example's deploy was refused (remembered: that identical call is refused
    again at once), on a port of aye's choosing that only `AYE_URL` names."""
    config, code = readme_receipt_example()
    assert len([n for n in code.splitlines() if n.strip()]) <= 15  # fifteen lines of code
    (tmp_path / "aye.toml").write_text(config)
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db")
    try:
        (tmp_path / "aye-tokens.json").write_text(json.dumps({"operator": OP, "agent": AGENT}))
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            _, first = await api.call("POST", "/v1/calls", json=FIRST_EXAMPLES_CALL)
            status, _ = await api.call("POST", f"/v1/asks/{first['ask']['id']}/answer", token=OP,
                                       json={"answer": "refuse"})
            assert status == 200
            status, again = await api.call("POST", "/v1/calls", json=FIRST_EXAMPLES_CALL)
            assert (status, again["error"]) == (403, "approval_refused"), again
        (tmp_path / "example.py").write_text(code)
        example = await asyncio.create_subprocess_exec(
            sys.executable, "example.py", cwd=tmp_path,
            env=base_env(tmp_path, "unused", AYE_URL=server.url),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            for _ in range(500):
                _, page = await api.call("GET", "/v1/asks?status=open", token=OP)
                if page["asks"]:
                    break
                await asyncio.sleep(0.02)
            approval = page["asks"][0]
            status, _ = await api.call("POST", f"/v1/asks/{approval['ref']}/answer", token=OP,
                                       json={"answer": "approve"})
            assert status == 200
            out, err = await asyncio.wait_for(example.communicate(), 30)
            assert example.returncode == 0, err.decode()
            canonical = hashlib.sha256(rfc8785.dumps({"version": "1.5.0"})).hexdigest()
            assert out.decode().splitlines() == [
                "deploying 1.5.0", "approved by operator:local", f"input_sha256 {canonical}"]
            _, shown = await api.call("GET", f"/v1/asks/{approval['id']}", token=OP)
            assert shown["run"]["outcome"] == "ran"
    finally:
        stop(server)
