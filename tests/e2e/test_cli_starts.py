"""`aye asks` and `aye show` word a start's approval as what would start, against a real
`aye serve`; agent text stays free of terminal controls."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.e2e.test_process import Api, run_cli, start_server, stop

CONFIG = """
[[gates]]
kinds = ["github."]
responders = ["operator:local"]
"""


async def test_a_start_reads_as_what_would_start(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "aye.toml").write_text(CONFIG)
    server = await start_server(tmp_path, sqlite_url)
    try:
        async with aiohttp.ClientSession() as session:
            status, body = await Api(session, server.url).call("POST", "/v1/starts", json={
                "work": {"github": {"repo": "octo/app", "number": 7, "type": "pull"}},
                "title": "Fix the \x1b[31mlogin", "trigger": "labelled agent",
                "links": ["https://github.com/octo/app/pull/7"]})
        assert status == 202, body
        ref = body["ask"]["ref"]
        listed = run_cli(tmp_path, server.url, "asks")
        assert "May default start on github:octo/app#7?" in listed.stdout
        shown = run_cli(tmp_path, server.url, "show", ref).stdout
        assert "start: agent default on github " in shown and '"type": "pull"' in shown
        assert "title: Fix the [U+001B][31mlogin" in shown and "\x1b" not in shown
        assert "trigger: labelled agent" in shown
        assert "link: https://github.com/octo/app/pull/7" in shown
        assert "refusing it cancels this work for the agent" in shown
    finally:
        stop(server)
