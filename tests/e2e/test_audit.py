"""The audit chain end to end: every history entry of every ask in one chain (`seq`, `prev`,
`hash` over its RFC 8785 canonical JSON), served to the operator by `GET /v1/audit`, exported
by `aye audit export`, and recomputed from the store by `aye audit verify`, which names the
first entry that does not match after a history row is edited or deleted in the store; two
processes on one PostgreSQL answering at once leave one unbroken chain."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import rfc8785

from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, Aye, StartAye
from tests.e2e.test_process import (  # the last three are fixtures, used by name below
    OP,
    Api,
    Server,
    base_env,
    run_cli,
    servers,
    session,
    start_server,
    two_servers,
)

__all__ = ["servers", "session", "two_servers"]

GENESIS = "0" * 64


def recomputed(entry: dict[str, Any]) -> str:
    """The entry's hash as the contract defines it, computed here independently."""
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(rfc8785.dumps(body)).hexdigest()


def assert_unbroken(entries: list[dict[str, Any]]) -> None:
    prev = GENESIS
    for number, entry in enumerate(entries, start=1):
        assert entry["seq"] == number
        assert entry["prev"] == prev
        assert entry["hash"] == recomputed(entry)
        prev = entry["hash"]


async def whole_chain(aye: Aye, limit: int = 3) -> list[dict[str, Any]]:
    found, after = [], 0
    while True:
        resp = await aye.client.get(f"/v1/audit?after={after}&limit={limit}",
                                    headers=OPERATOR_HEADERS)
        assert resp.status == 200, await resp.text()
        body = await resp.json()
        found += body["entries"]
        if body["next"] is None:
            return found
        after = body["next"]


async def test_every_history_entry_is_one_chain_served_to_the_operator(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url)
    first = await aye.ask(question="Ship?", options=["yes", "no"])
    second = await aye.ask(question="Why?", sensitive=True)
    await aye.answer(first["ref"], "yes")
    await aye.answer(second["ref"], "the secret reason")
    entries = await whole_chain(aye)
    assert_unbroken(entries)
    assert [(e["ask"], e["event"]) for e in entries] == [
        (first["id"], "created"), (second["id"], "created"),
        (first["id"], "answered"), (second["id"], "answered")]
    assert "the secret reason" not in json.dumps(entries)  # a sensitive value is never there
    resp = await aye.client.get("/v1/audit", headers=AGENT_HEADERS)  # an agent's token
    assert resp.status == 403 and (await resp.json())["error"] == "operator_only"
    resp = await aye.client.get("/v1/audit?limit=0", headers=OPERATOR_HEADERS)
    assert resp.status == 422 and (await resp.json())["field"] == "limit"


async def verify(tmp: Path, database_url: str) -> subprocess.CompletedProcess[str]:
    env = base_env(tmp, database_url)
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bot", "audit", "verify"], cwd=tmp, env=env,
        capture_output=True, text=True, timeout=60)


async def test_verify_names_the_first_entry_edited_or_deleted_in_the_store(
    tmp_path: Path, sqlite_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    url = sqlite_url
    server = await start_server(tmp_path, url)
    servers.append(server)
    api = Api(session, server.url)
    for n in range(3):
        status, ask = await api.call("POST", "/v1/asks", json={"question": f"Ship {n}?"})
        assert status == 201
        await api.call("POST", f"/v1/asks/{ask['id']}/answer", token=OP, json={"answer": "ok"})
    exported = run_cli(tmp_path, server.url, "audit", "export")
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert_unbroken(lines) and len(lines) == 6
    ok = await verify(tmp_path, url)
    assert (ok.returncode, ok.stdout.strip()) == (0, f"ok: 6 entries, head {lines[-1]['hash']}")

    db = sqlite3.connect(tmp_path / "aye.db")
    db.execute("UPDATE history SET detail = ? WHERE chain_seq = 4", (json.dumps({"by": "mallory"}),))
    db.commit()
    edited = await verify(tmp_path, url)
    assert edited.returncode == 1
    assert edited.stdout.startswith("broken at entry 4: its hash does not match its content")

    db.execute("UPDATE history SET detail = ? WHERE chain_seq = 4",
               (json.dumps({k: v for k, v in lines[3].items()
                            if k not in ("seq", "at", "ask", "event", "prev", "hash")}),))
    db.execute("DELETE FROM history WHERE chain_seq = 2")
    db.commit()
    db.close()
    deleted = await verify(tmp_path, url)
    assert deleted.returncode == 1
    assert deleted.stdout.startswith("broken at entry 3: expected entry 2, found 3")


async def test_two_processes_answering_at_once_leave_one_unbroken_chain(
    two_servers: tuple[Api, Api],
) -> None:
    a, b = two_servers
    made = []
    for n in range(20):
        status, ask = await (a if n % 2 else b).call("POST", "/v1/asks",
                                                      json={"question": f"Race {n}?"})
        assert status == 201
        made.append(ask)
    results = await asyncio.gather(*(
        api.call("POST", f"/v1/asks/{ask['id']}/answer", token=OP, json={"answer": f"by {i}"})
        for ask in made for i, api in enumerate((a, b, a))))
    assert sorted(s for s, _ in results).count(200) == 20
    status, page = await a.call("GET", "/v1/audit?limit=1000", token=OP)
    assert status == 200
    assert_unbroken(page["entries"])
    events = [e["event"] for e in page["entries"]]
    assert (events.count("created"), events.count("answered"), events.count("late")) == (20, 20, 40)
