"""AYE_LOG_FORMAT=json and AYE_LOG_LEVEL on a real `aye serve`: one JSON object a line, an
access line per request (route pattern, status, agent; never a token), and no token or
sensitive value anywhere in a whole run's log."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_log_secrets import slack_env, stop_async
from tests.e2e.test_logs import GARBAGE, send
from tests.e2e.test_process import AGENT, OP, Api, base_env, start_server, stop
from tests.fake_github import FakeGitHub, sign
from tests.fake_slack import DEFAULT_CHANNEL, FakeSlack

SECRET_ANSWER = "hunter2-do-not-log"
HOOK_SECRET = "webhook-secret"


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
            status, _ = await Api(session, server.url).call("POST", "/v1/asks",
                                                            json={"question": "q?"})
            assert status == 201
        # A request aiohttp cannot parse is told at warning (bot.logs.ProtocolNoise).
        await asyncio.to_thread(send, int(server.url.rsplit(":", 1)[1]), GARBAGE[1])
    finally:
        stop(server, signal.SIGTERM)
    lines = [json.loads(raw) for raw in server.output().splitlines()]
    logged = {line["msg"]: line["level"] for line in lines}
    assert logged.get("http.malformed_requests") == "warning", lines
    # The ask was created and the request served, but at info: neither is written.
    assert "ask.created" not in logged and "http.request" not in logged, lines
    assert {line["level"] for line in lines if line["msg"] in logged} <= {"info", "warning"}
    # What aye prints at start is printed whatever the level: it is not the log.
    assert any(line["msg"].startswith("listening on http://") for line in lines), lines


def test_a_bad_format_or_level_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for name, value in (("AYE_LOG_FORMAT", "xml"), ("AYE_LOG_LEVEL", "loud")):
        env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", **{name: value})
        done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert name in done.stderr


# -- every line is JSON: start-up, surfaces on and off, exit 2, warnings, crashes -------------


def json_lines(text: str) -> list[dict[str, Any]]:
    """Each line of `text` as the JSON object it must be (an assertion names one that is not)."""
    found = []
    for raw in text.splitlines():
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {raw!r}\n{text}") from None
        assert isinstance(line, dict) and {"ts", "level", "logger", "msg"} <= set(line), raw
        found.append(line)
    return found


@pytest.mark.parametrize("surfaces", ["on", "off"])
async def test_with_the_surfaces_on_or_off_every_line_is_json(
    tmp_path: Path, fake_slack: FakeSlack, fake_github: FakeGitHub, surfaces: str
) -> None:
    env: dict[str, Any] = {}  # start_server names its own `name` and `port`: Any here
    if surfaces == "on":
        (tmp_path / "aye.toml").write_text(
            f'[defaults]\nresponders = ["slack:U0123ABCD", "operator:local"]\n'
            f'[slack]\ndefault_channel = "{DEFAULT_CHANNEL}"\n')
        env = {**slack_env(fake_slack), "GITHUB_WEBHOOK_SECRET": HOOK_SECRET,
               "GITHUB_TOKEN": fake_github.plain_token, "GITHUB_API_URL": fake_github.api_url}
    server = await start_server(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db",
                                AYE_LOG_FORMAT="json", AYE_LOG_LEVEL="debug", **env)
    try:
        async with aiohttp.ClientSession() as session:
            status, _ = await Api(session, server.url).call("POST", "/v1/asks",
                                                            json={"question": "q?"})
            assert status == 201
            if surfaces == "on":
                await fake_slack.wait_for_call("chat.postMessage", lambda c: c.ok, timeout=15)
                body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
                async with session.post(server.url + "/github/webhook", data=body, headers={
                    "Content-Type": "application/json", "X-GitHub-Event": "ping",
                    "X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": sign(body, HOOK_SECRET),
                }) as resp:
                    assert resp.status < 300
    finally:
        await stop_async(server)
    lines = json_lines(server.output())
    said = [line["msg"] for line in lines]
    assert any(m.startswith("listening on http://") for m in said), said
    assert any(m.startswith(f"slack: {surfaces}") for m in said), said
    assert any(m.startswith(f"github: {surfaces}") for m in said), said
    assert "http.request" in said and "aye.stopping" in said
    if surfaces == "on":
        assert "slack.connected" in said
        # slack-bolt's one warning at every start ("`token` will be unused", about the token it
        # reads from the environment beside aye's own client) is no longer logged at all.
        assert not any("will be unused" in str(line["msg"]) for line in lines), said


@pytest.mark.parametrize(("name", "value", "named"), [
    ("AYE_CONFIG", "bad.toml", "bad.toml"),   # a config error
    ("AYE_PORT", "eighty", "AYE_PORT"),       # a settings error, read before the format is
    ("SLACK_BOT_TOKEN", "xoxb-only-one", "SLACK_APP_TOKEN"),  # a surface half set up
])
def test_the_exit_2_line_is_json_too(tmp_path: Path, name: str, value: str, named: str) -> None:
    (tmp_path / "bad.toml").write_text("[gates]\nnope = 1\n")
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_LOG_FORMAT="json",
                   **{name: value})
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    [line] = json_lines(done.stderr)
    assert line["level"] == "error" and named in line["msg"], line
    assert "xoxb-only-one" not in done.stderr


CRASHING = """
import threading, warnings
from bot import logs
logs.setup(fmt="json")
warnings.warn("a library's warning\\nwith a second line holding secret-in-a-warning")
thread = threading.Thread(target=lambda: 1 / 0)
thread.start(); thread.join()
raise RuntimeError("secret-in-an-exception")
"""


def test_warnings_and_uncaught_exceptions_are_json_lines_without_their_text(
    tmp_path: Path,
) -> None:
    done = subprocess.run([sys.executable, "-c", CRASHING], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30, env=base_env(tmp_path, "sqlite:///x.db"))
    assert done.returncode == 1
    assert done.stdout == ""
    lines = json_lines(done.stderr)
    assert [(line["logger"], line["level"]) for line in lines] == [
        ("py.warnings", "warning"), ("aye", "error"), ("aye", "error")], lines
    assert [line.get("error") for line in lines[1:]] == ["ZeroDivisionError", "RuntimeError"]
    assert "a library's warning" in lines[0]["msg"]
    assert "secret-in" not in done.stderr and "Traceback" not in done.stderr


def test_aye_migrate_writes_json_lines_too(tmp_path: Path) -> None:
    """`aye migrate`'s line, and its exit-2 line, are JSON objects under AYE_LOG_FORMAT=json."""
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_LOG_FORMAT="json")
    done = subprocess.run([sys.executable, "-m", "bot", "migrate"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [line] = json_lines(done.stdout)
    assert "(head)" in line["msg"]
    json_lines(done.stderr)  # the migration's own log lines, each one JSON object
    env["AYE_DATABASE_URL"] = "notaurl"
    done = subprocess.run([sys.executable, "-m", "bot", "migrate"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    [line] = json_lines(done.stderr)
    assert line["level"] == "error" and "postgresql" in line["msg"], line
