"""External asks in the CLI, through the real `aye` against a real `aye serve` on both stores:
`aye asks` and `aye show` say what the ask waits on and its ticket's state (never the ticket);
`aye answer` prints the server's refusal and exits 1; once the outside system answered through
its door, `aye show` prints the payload on one line."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_cli_formats import aye
from tests.e2e.test_external import DOCSIGN, GOOD, PINNED, SECRET
from tests.e2e.test_process import Api, Server, start_server, stop

PUBLIC = "https://aye.example.com"
SIGNER = "signer-cli-token"
CONFIG = """
[[agents]]
name = "signer"
token_env = "AYE_T_SIGNER"
verifiers = ["docsign"]

[[verifiers]]
name = "docsign"
secret_env = "AYE_DOCSIGN_SECRET"
header = "X-Signature-256"
scheme = "hmac-sha256"
"""


@pytest.fixture
async def server(tmp_path: Path, database_url: str) -> AsyncIterator[Server]:
    (tmp_path / "aye.toml").write_text(CONFIG)
    started = await start_server(tmp_path, database_url, AYE_T_SIGNER=SIGNER,
                                 AYE_DOCSIGN_SECRET=SECRET, AYE_PUBLIC_URL=PUBLIC)
    try:
        yield started
    finally:
        stop(started, signal.SIGKILL)


async def external(server: Server) -> tuple[dict[str, Any], str]:
    """A new external ask, and the path of its door on this server (the ticket in it)."""
    body = {"question": "Wait for the contract to be signed", "format": "external",
            "verifier": "docsign", "schema": PINNED}
    async with aiohttp.ClientSession() as session:
        status, made = await Api(session, server.url).call("POST", "/v1/asks", token=SIGNER,
                                                           json=body)
    assert status == 201, made
    return dict(made), str(made["answer_url"]).removeprefix(PUBLIC)


async def deliver(server: Server, door: str, payload: Any) -> int:
    """The outside system's signed answer through the door."""
    body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json", **DOCSIGN.sign(body)}
    async with aiohttp.ClientSession() as session, session.post(
        server.url + door, data=body, headers=headers
    ) as resp:
        return resp.status


async def test_asks_and_show_say_what_it_waits_on_and_answer_is_refused(
    tmp_path: Path, server: Server
) -> None:
    made, door = await external(server)
    ref, ticket = made["ref"], door.rsplit("/", 1)[1]

    _, listed, _ = aye(tmp_path, server, "asks")
    _, shown, _ = aye(tmp_path, server, "show", ref)
    code, out, err = aye(tmp_path, server, "answer", ref, json.dumps(GOOD))

    row = next(text for text in listed.splitlines() if text.startswith(ref + " "))
    assert "  [waits on docsign (external)] Wait for the contract" in row
    lines = shown.splitlines()
    assert (f"format: external (waits on docsign, an outside system, which answers through its "
            f"signed door; nobody answers it here: `aye withdraw {ref}` if it is no longer "
            "needed)") in lines
    assert "for: external:docsign" in lines
    assert "ticket: waiting (its door is open for the outside system's answer)" in lines
    assert (code, out) == (1, "")
    assert err.splitlines() == ["aye: refused: only docsign answers this ask, through its "
                                "signed door; withdraw it instead"]
    for text in (listed, shown, out, err):
        assert ticket not in text


async def test_show_prints_the_payload_once_answered_and_a_dead_ticket_once_withdrawn(
    tmp_path: Path, server: Server
) -> None:
    answered, door = await external(server)
    withdrawn, _ = await external(server)
    assert await deliver(server, door, GOOD) == 200
    assert aye(tmp_path, server, "withdraw", withdrawn["ref"])[0] == 0

    shown = aye(tmp_path, server, "show", answered["ref"])[1].splitlines()
    gone = aye(tmp_path, server, "show", withdrawn["ref"])[1].splitlines()

    assert ('answer: {"reference": "inv-42", "status": "signed", "signer": "Ada"}  '
            "by external:docsign via external") in shown
    assert "ticket: used (the outside system answered through it)" in shown
    assert "ticket: dead (the ask closed without it: its door is shut)" in gone
    code, _, err = aye(tmp_path, server, "answer", answered["ref"], "ok")
    assert code == 1 and "only docsign answers this ask" in err
