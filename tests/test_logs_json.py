"""AYE_LOG_FORMAT=json and AYE_LOG_LEVEL on a real `aye serve`: one JSON object a line, an
access line per request (route pattern, status, agent; never a token), and no token or
sensitive value anywhere in a whole run's log."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.test_process import AGENT, OP, Api, base_env, start_server, stop

SECRET_ANSWER = "hunter2-do-not-log"


async def test_json_lines_with_an_access_log_and_no_secrets(tmp_path: Path) -> None:
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db",
                                AYE_LOG_FORMAT="json")
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            _, ask = await api.call("POST", "/v1/asks", json={"question": "PIN?", "sensitive": True})
            await api.call("POST", f"/v1/asks/{ask['ref']}/answer", token=OP,
                           json={"answer": SECRET_ANSWER})
            await api.call("GET", f"/v1/asks/{ask['id']}")
            await api.call("GET", "/v1/asks", token="not-a-token")
    finally:
        stop(server, signal.SIGTERM)
    text = server.output()
    assert SECRET_ANSWER not in text and AGENT not in text and OP not in text
    lines = [json.loads(raw) for raw in text.splitlines() if raw.startswith("{")]
    assert lines and all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)
    access = [line for line in lines if line["msg"] == "http.request"]
    created = [a for a in access if a["route"] == "/v1/asks" and a["method"] == "POST"]
    assert created and created[0]["status"] == 201 and created[0]["agent"] == "default"
    assert any(a["route"] == "/v1/asks/{id}" and a["status"] == 200 for a in access)
    assert any(a["status"] == 401 and "agent" not in a for a in access)
    answered = [line for line in lines if line["msg"] == "ask.answered"]
    assert answered and answered[0]["ask"] == ask["id"] and answered[0]["ref"] == ask["ref"]


async def test_the_level_quiets_info(tmp_path: Path) -> None:
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db",
                                AYE_LOG_FORMAT="json", AYE_LOG_LEVEL="warning")
    try:
        async with aiohttp.ClientSession() as session:
            await Api(session, server.url).call("POST", "/v1/asks", json={"question": "q?"})
    finally:
        stop(server, signal.SIGTERM)
    logged = [json.loads(raw) for raw in server.output().splitlines() if raw.startswith("{")]
    assert all(line["level"] in ("warning", "error") for line in logged)


def test_a_bad_format_or_level_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for name, value in (("AYE_LOG_FORMAT", "xml"), ("AYE_LOG_LEVEL", "loud")):
        env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", **{name: value})
        done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert name in done.stderr
