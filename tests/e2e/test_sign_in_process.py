"""`aye serve` and the inbox's sign-ins, as a real process: a `[web] sign_in` entry that is not set
up (or Slack's without a workspace to admit) is exit 2 with one line naming the key; what is set
up is said at start and on /healthz."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.test_process import Server, base_env, start_server

SLACK = {"SLACK_CLIENT_ID": "1234.5678", "SLACK_CLIENT_SECRET": "slack-secret"}
GITHUB = {"GITHUB_CLIENT_ID": "Iv1.abc", "GITHUB_CLIENT_SECRET": "gh-secret"}
ORG = ("[web.oidc]\nissuer = 'https://login.example.com'\nclient_id = 'aye'\n"
       "client_secret_env = 'AYE_OIDC_SECRET'\n")


def serve(tmp: Path, config: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp / "aye.toml").write_text(config)
    full = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/aye.db", AYE_PORT="0",
                    AYE_OIDC_SECRET="oidc-secret", **env)
    return subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp, env=full,
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    ("config", "env", "expected"),
    [
        ("[web]\nsign_in = ['github']\n", {},
         'web.sign_in[1]: "github" is not set up: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET'),
        ("[slack]\nteams = ['T0AYE']\n[web]\nsign_in = ['slack', 'oidc']\n", SLACK,
         'web.sign_in[2]: "oidc" is not set up: add [web.oidc] with issuer, client_id and '
         "client_secret_env"),
        ("[web]\nsign_in = ['slack']\n", SLACK,
         'slack.teams: "Sign in with Slack" needs the workspaces whose members may sign in'),
        ("", SLACK, 'slack.teams: "Sign in with Slack" needs the workspaces'),
        ("", {"SLACK_CLIENT_ID": "1234.5678"},
         '"Sign in with Slack" needs both SLACK_CLIENT_ID and SLACK_CLIENT_SECRET; '
         "SLACK_CLIENT_SECRET is not set"),
        ("[web]\nsign_in = ['github', 'gitlab']\n", GITHUB, "web.sign_in[2]: Input should be"),
    ],
    ids=["github-unset", "oidc-unset", "slack-no-teams", "slack-by-default-no-teams",
         "half-a-pair", "unknown"],
)
def test_a_sign_in_that_cannot_work_stops_serve_with_exit_2(
    tmp_path: Path, config: str, env: dict[str, str], expected: str
) -> None:
    done = serve(tmp_path, config, **env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr
    assert "slack-secret" not in done.stderr and "gh-secret" not in done.stderr


async def test_what_is_set_up_is_said_at_start_and_on_healthz(
    tmp_path: Path, sqlite_url: str
) -> None:
    # [slack] teams with the Slack bot off is not an unused section: Slack's sign-in uses it.
    (tmp_path / "aye.toml").write_text(f"[slack]\nteams = ['T0AYE']\n{ORG}")
    server: Server = await start_server(tmp_path, sqlite_url,
                                        AYE_OIDC_SECRET="oidc-secret", **SLACK, **GITHUB)
    try:
        async with aiohttp.ClientSession() as http, http.get(server.url + "/healthz") as resp:
            health = await resp.json()
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)
    assert health["sign_in"] == ["token", "slack", "github", "oidc"]
    assert ("aye: web inbox: sign in with the operator token, Slack, GitHub, login.example.com"
            in server.output().splitlines())
    assert "slack-secret" not in server.output() and "oidc-secret" not in server.output()
