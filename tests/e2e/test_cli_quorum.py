"""`aye answer` on approvals under the approval policy, through the real `aye` against a real
`aye serve`: an approval counted towards a quorum says so (not "taken … hidden"), the one that
completes it is taken; an approval refused because the work's author cannot be read (503
`author_unknown`) is a refusal, exit 1 with the reason."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.e2e.test_process import AGENT, Api, run_cli, start_server, stop

CONFIG = """
[[gates]]
operations = ["deploy."]
responders = ["operator:local", "github:bob"]   # two people, or the quorum is impossible
approvals = 2

[[gates]]
operations = ["release."]
responders = ["operator:local"]
prevent_self_approval = true
"""
ISSUE = {"github": {"repo": "octo/app", "number": 7}}  # GitHub is off: its author is unknown


async def pending(url: str, operation: str) -> str:
    async with aiohttp.ClientSession() as session:
        status, reply = await Api(session, url).call(
            "POST", "/v1/calls", token=AGENT,
            json={"operation": operation, "input": {"v": 1}, "work": ISSUE})
    assert status == 202, reply
    return str(reply["ask"]["ref"])


async def test_a_quorum_approval_is_counted_and_author_unknown_is_a_refusal(
    tmp_path: Path, sqlite_url: str
) -> None:
    (tmp_path / "aye.toml").write_text(CONFIG)
    server = await start_server(tmp_path, sqlite_url)
    try:
        ref = await pending(server.url, "deploy.prod")
        counted = run_cli(tmp_path, server.url, "answer", ref, "approve")
        assert counted.returncode == 0, counted.stderr
        assert counted.stdout.strip() == f"counted: {ref} approval 1 of 2"
        again = run_cli(tmp_path, server.url, "answer", ref, "approve")  # the same person
        assert again.returncode == 1 and "already approved" in again.stderr
        shown = run_cli(tmp_path, server.url, "show", ref)
        assert "approvals: 1 of 2: operator:local" in shown.stdout, shown.stdout

        ref = await pending(server.url, "release.prod")
        unknown = run_cli(tmp_path, server.url, "answer", ref, "approve")
        assert unknown.returncode == 1, (unknown.stdout, unknown.stderr)
        assert unknown.stdout == ""
        assert "aye: refused: aye could not check who opened this work" in unknown.stderr
        assert "try again shortly" in unknown.stderr
        refused = run_cli(tmp_path, server.url, "answer", ref, "refuse")  # a refusal counts
        assert refused.returncode == 0 and refused.stdout.startswith(f"taken: {ref} answered")
        shown = run_cli(tmp_path, server.url, "show", ref)
        assert "remembered until: " in shown.stdout, shown.stdout  # the identical call is refused
    finally:
        stop(server)
