"""What a new user meets when something is missing or mistyped: each command's help says what it
does, `aye serve --help` names every variable aye reads, a near-miss in the config is named with
the key it was meant to be, `aye show` names the ref it could not find, a config naming email
responders while email is off is warned about at start, and a remembered refusal says until when."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aye_client import ApprovalRefused, connect
from bot.config import Config
from tests.conftest import AGENT_TOKEN, StartAye
from tests.e2e.test_client_formats import open_ref
from tests.e2e.test_process import base_env, run_cli, start_server, stop

ROOT = Path(__file__).resolve().parents[2]
# Where aye reads its environment: the process's settings, its logs, the surfaces and sign-ins.
READERS = ("bot/settings.py", "bot/logs.py", "bot/sign_ins.py", "handlers/env.py",
           "handlers/*/plugin.py", "handlers/*/settings.py", "handlers/web/providers.py")
VARIABLE = re.compile(r"[\"']((?:AYE|SLACK|GITHUB)_[A-Z0-9_]+)[\"']")
# Read through f"{prefix}_CLIENT_ID" (handlers/web/providers.py): the sign-ins' client ids.
SIGN_IN_CLIENTS = {f"{p}_CLIENT_{k}" for p in ("SLACK", "GITHUB") for k in ("ID", "SECRET")}


def aye(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True,
                          timeout=30, cwd=cwd, env=env or None)


def variables_read() -> set[str]:
    found = set(SIGN_IN_CLIENTS)
    for pattern in READERS:
        for path in ROOT.glob(pattern):
            found |= set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    return found


def test_serve_help_names_every_variable_aye_reads() -> None:
    helped = aye("serve", "--help")
    assert helped.returncode == 0
    named = set(re.findall(r"\b(?:AYE|SLACK|GITHUB)_[A-Z0-9_]+\b", helped.stdout))
    read = variables_read()
    assert {"AYE_URL", "AYE_SMTP_URL", "AYE_MAIL_FROM", "AYE_SIGNING_KEY_PATH",
            "SLACK_CLIENT_ID", "GITHUB_CLIENT_ID"} <= read  # the readers above are the right files
    assert read - named == set()


@pytest.mark.parametrize(("command", "says"), [
    ("tui", "The operator's inbox in the terminal"), ("mcp", "aye's MCP server over stdio"),
    ("watch", "Print one line per event"), ("migrate", "Bring the schema of the store"),
])
def test_each_command_says_what_it_does_under_help(command: str, says: str) -> None:
    helped = aye(command, "--help")
    assert helped.returncode == 0
    usage, description = helped.stdout.split("\n\n")[:2]
    assert usage.startswith(f"usage: aye {command}")
    assert description.startswith(says), helped.stdout
    assert "AYE_URL" in description or "AYE_DATABASE_URL" in description


@pytest.mark.parametrize(("config", "said"), [
    ("[[gate]]\noperations = ['deploy.']\n", "gate: unknown key; did you mean gates?"),
    ("[default]\ntimeout = '1h'\n", "default: unknown key; did you mean defaults?"),
    ("[[gates]]\noperations = ['deploy.']\ntimout = '1h'\n",
     "gates[1].timout: unknown key; did you mean timeout?"),
    ("[[gates]]\noperations = ['deploy.']\ncolour = 'red'\n", "gates[1].colour: unknown key"),
])
def test_a_near_miss_in_the_config_is_named_with_the_key_meant(
    tmp_path: Path, config: str, said: str
) -> None:
    (tmp_path / "aye.toml").write_text(config)
    done = aye("serve", cwd=tmp_path, **base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/a.db",
                                                  AYE_PORT="0"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"aye: {tmp_path / 'aye.toml'}: {said}"]


async def test_email_responders_with_email_off_are_warned_about_at_start(
    tmp_path: Path, sqlite_url: str
) -> None:
    (tmp_path / "aye.toml").write_text(
        "[[gates]]\noperations = ['deploy.']\nresponders = ['email:ada@example.com']\n")
    server = await start_server(tmp_path, sqlite_url)
    stop(server)
    assert ("aye: warning: gates[1].responders names an email: responder but email is off (set "
            "AYE_SMTP_URL, AYE_MAIL_FROM and AYE_PUBLIC_URL): nothing will be mailed"
            ) in server.output().splitlines(), server.output()


async def test_show_withdraw_and_answer_name_the_ref_they_could_not_find(
    tmp_path: Path, sqlite_url: str
) -> None:
    server = await start_server(tmp_path, sqlite_url)
    try:
        for command in (["show", "q999"], ["withdraw", "q999"], ["answer", "q999", "yes"]):
            done = run_cli(tmp_path, server.url, *command)
            assert done.returncode == 2
            assert done.stderr.splitlines() == [
                "aye: no ask q999 at this aye (aye asks --all lists them)"], done.stderr
    finally:
        stop(server)


async def test_a_remembered_refusal_says_until_when(start_aye: StartAye, database_url: str) -> None:
    gates = Config.model_validate({"gates": [{"operations": ["deploy."], "timeout": "2h"}]})
    aye_ = await start_aye(database_url, gates)
    async with connect(aye_.url, AGENT_TOKEN) as client:
        first = asyncio.create_task(client.call("deploy.prod", {"version": "1"}))
        assert (await aye_.answer(await open_ref(aye_), "refuse"))[0] == 200
        with pytest.raises(ApprovalRefused):
            await asyncio.wait_for(first, 10)
        with pytest.raises(ApprovalRefused) as remembered:
            await asyncio.wait_for(client.call("deploy.prod", {"version": "1"}), 5)
    refused = remembered.value
    assert refused.repeat and refused.until is not None
    until = datetime.fromisoformat(refused.until)
    assert abs(until - datetime.now(UTC) - timedelta(hours=2)) < timedelta(minutes=1)
    assert str(refused).endswith(f"(remembered: not asked again until {refused.until})")
