"""What an operator meets first in the CLI: a version, help that lists the environment, times
rounded as people read them, the value an answer took, the answers that would be taken, and
no traceback when the output is cut short."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import aiohttp

from bot.cli import relative
from tests.e2e.test_process import AGENT, Api, run_cli, start_server, stop


def aye(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True,
                          timeout=30)


def test_version_and_serve_help() -> None:
    version = aye("--version")
    assert version.returncode == 0 and version.stdout.startswith("aye ")
    helped = aye("serve", "--help")
    assert helped.returncode == 0
    for name in ("--host", "--port", "AYE_CONFIG", "AYE_DATABASE_URL", "AYE_OPERATOR_TOKEN",
                 "SLACK_BOT_TOKEN", "GITHUB_WEBHOOK_SECRET", ".env", "AYE_PUBLIC_URL",
                 "AYE_LOG_FORMAT", "AYE_LOG_LEVEL"):
        assert name in helped.stdout


def test_importing_the_cli_does_not_load_sqlalchemy() -> None:
    probe = "import sys, bot.cli; print('sqlalchemy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "False", done.stderr


def test_relative_times_round_to_the_nearest_unit() -> None:
    now = 1_000_000.0
    assert relative(now + 24 * 3600 - 5, now) == "in 24h"
    assert relative(now + 90 * 60 - 1, now) == "in 1h"
    assert relative(now - 119, now) == "2m ago"
    assert relative(now + 3 * 86400 + 13 * 3600, now) == "in 4d"


def test_help_cut_short_by_head_leaves_no_traceback() -> None:
    with subprocess.Popen([sys.executable, "-m", "bot", "serve", "--help"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        proc.stdout.close()  # like `| head -0`: the reader is gone before the first line
        _, err = proc.communicate(timeout=30)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err


async def test_answer_echoes_the_value_and_a_refusal_lists_the_answers(
    tmp_path: Path, sqlite_url: str
) -> None:
    server = await start_server(tmp_path, sqlite_url)
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            _, ask = await api.call("POST", "/v1/asks", token=AGENT,
                                    json={"question": "Which?", "options": ["red", "blue"]})
        refused = run_cli(tmp_path, server.url, "answer", ask["ref"], "green")
        assert refused.returncode == 1
        assert "valid answers: 1. red, 2. blue (the number or the text)" in refused.stderr
        taken = run_cli(tmp_path, server.url, "answer", ask["ref"], "2")
        assert taken.returncode == 0
        assert taken.stdout.strip() == f"taken: {ask['ref']} answered blue"
        listed = run_cli(tmp_path, server.url, "asks", "--all")
        assert "AGENT" in listed.stdout.splitlines()[0] and "default" in listed.stdout
    finally:
        stop(server)
