"""Schema migrations through the real app and real processes: the app serving every ask of a
store made by aye 0.1.0 after the upgrade, `aye migrate` upgrading one, `aye serve` stopping on a
store newer than it, and several `aye migrate` processes on one fresh store at once.

The upgrades themselves, on the store in this process, are tests/middle/test_migrations.py's
(and so are the helpers and the 0.1.0 store's rows used here).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from store import migrate
from store.db import Store
from tests.conftest import OPERATOR_HEADERS, StartAye
from tests.middle.test_migrations import (
    APPROVED,
    ESCALATED,
    EXPIRED,
    LAST_WRITE,
    QUESTION,
    TABLES,
    UNKNOWN,
    make_0_1_0_store,
    open_store,
    query,
    revision,
    rows,
    run_sql,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def database_url(empty_database_url: str) -> str:
    """A store with nothing in it: these tests make or migrate its schema themselves."""
    return empty_database_url


def subprocess_env(tmp: Path, url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AYE_", "SLACK_", "GITHUB_"))}
    # The code under test, whichever checkout or install the venv points at.
    env.update(AYE_DATABASE_URL=url, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def aye(tmp: Path, url: str, command: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", command], cwd=tmp,
                          env=subprocess_env(tmp, url, **extra),
                          capture_output=True, text=True, timeout=60)


async def test_a_0_1_0_store_serves_every_ask_answer_and_history_after_the_upgrade(
    start_aye: StartAye, database_url: str, manual_clock: Any
) -> None:
    await make_0_1_0_store(database_url)
    # Just after the fixture's last write, so that nothing in it is due: what is read is what
    # 0.1.0 left.
    manual_clock.advance(LAST_WRITE + 60 - manual_clock.now())
    app = await start_aye(database_url, clock=manual_clock)
    assert await revision(database_url) == [migrate.head()]

    question = await app.get(QUESTION, operator=True)
    assert question["kind"] == "question" and question["status"] == "answered"
    assert question["question"] == "Deploy tonight?" and question["context"] == "CPU at 90%"
    assert question["options"] == ["yes", "no"]
    assert question["answer"] == {"value": "yes", "option": 1, "note": "after 22:00"}
    assert (question["answered_by"], question["surface"]) == ("operator:local", "cli")
    assert question["created_at"] == "2026-01-01T00:00:00.000Z"
    assert question["closed_at"] == "2026-01-01T00:00:05.000Z"
    assert question["history"] == [
        {"at": "2026-01-01T00:00:00.000Z", "event": "created", "agent": "default"},
        {"at": "2026-01-01T00:00:05.000Z", "event": "answered", "by": "operator:local",
         "surface": "cli"},
    ]

    approved = await app.get(APPROVED, operator=True)
    assert (approved["kind"], approved["status"]) == ("approval", "answered")
    assert approved["operation"] == "deploy.staging"
    assert approved["input"] == {"version": "1.2", "canary": True}
    assert approved["outcome"] == "approved"
    assert approved["answer"]["value"] == "approve"
    assert [e["event"] for e in approved["history"]] == ["created", "answered", "used"]

    expired = await app.get(EXPIRED, operator=True)
    assert (expired["status"], expired["answer"]) == ("expired", None)
    assert [e["event"] for e in expired["history"]] == ["created", "expired"]

    escalated = await app.get(ESCALATED, operator=True)
    assert escalated["status"] == "open"
    assert escalated["work"] == {"github": {"repo": "octo/app", "number": 7}}
    assert escalated["responders"] == ["github:alice"]
    assert escalated["escalation"]["responders"] == ["operator:local"]
    assert escalated["escalation"]["escalated_at"] == "2026-01-01T01:01:21.000Z"
    assert [e["event"] for e in escalated["history"]] == ["created", "escalated", "posted"]
    assert escalated["history"][1]["to"] == ["operator:local"]

    resp = await app.client.get("/v1/asks", params={"limit": "200"}, headers=OPERATOR_HEADERS)
    listed = (await resp.json())["asks"]
    assert {a["id"] for a in listed} == {QUESTION, APPROVED, EXPIRED, ESCALATED}

    # It goes on where 0.1.0 stopped: the open approval can be answered, new asks follow on.
    status, _ = await app.answer(ESCALATED, "approve")
    assert status == 200
    new = await app.ask(question="After the upgrade?")
    seqs = await query(database_url, f"SELECT seq FROM asks WHERE id = '{new['id']}'")
    assert seqs == [(5,)]
    history = await query(database_url, "SELECT id, ask_seq, event FROM history WHERE id > 10 ORDER BY id")
    assert [(h[1], h[2]) for h in history] == [(4, "answered"), (5, "created")]
    assert [h[0] for h in history] == [11, 12]


async def test_a_0_1_0_store_migrates_with_aye_migrate(tmp_path: Path, database_url: str) -> None:
    await make_0_1_0_store(database_url)
    before = await rows(database_url)

    done = aye(tmp_path, database_url, "migrate", AYE_CONFIG="/nonexistent/aye.toml")

    assert done.returncode == 0, done.stderr
    shown = Store(database_url).describe()
    assert done.stdout == f"aye: store {shown} is at revision {migrate.head()} (head)\n"
    assert done.stderr == ""
    assert await revision(database_url) == [migrate.head()]
    after = await rows(database_url)
    assert {t: after[t] for t in TABLES[:-1]} == {t: before[t] for t in TABLES[:-1]}
    # Nothing but the store: no token file, no config read.
    assert list(tmp_path.glob("aye-tokens*")) == []
    again = aye(tmp_path, database_url, "migrate")
    assert (again.returncode, again.stdout) == (0, done.stdout)


async def test_serve_stops_on_a_newer_store_with_exit_2_and_one_line(
    tmp_path: Path, database_url: str
) -> None:
    await open_store(database_url)
    await run_sql(database_url, f"UPDATE alembic_version SET version_num = '{UNKNOWN}';")

    (tmp_path / "aye.toml").touch()
    done = aye(tmp_path, database_url, "serve", AYE_CONFIG=str(tmp_path / "aye.toml"), AYE_PORT="0",
               AYE_OPERATOR_TOKEN="op", AYE_AGENT_TOKEN="agent")

    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"aye: the store's schema is at revision {UNKNOWN}, newer than this aye "
        f"(head {migrate.head()}): upgrade aye"
    ]
    assert await revision(database_url) == [UNKNOWN]
    refused = aye(tmp_path, database_url, "migrate")
    assert refused.returncode == 2
    assert refused.stderr == done.stderr and refused.stdout == ""


async def test_processes_starting_at_once_on_a_fresh_store_all_succeed(
    tmp_path: Path, database_url: str
) -> None:
    """Without the advisory lock, all but one died in CREATE TABLE on PostgreSQL (duplicate
    key in pg_type); with it they take turns and the later ones find the work done."""
    procs = [
        subprocess.Popen([sys.executable, "-m", "bot", "migrate"], cwd=tmp_path,
                         env=subprocess_env(tmp_path, database_url),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    results = [(proc.wait(timeout=60), *proc.communicate()) for proc in procs]
    assert all(code == 0 for code, _, _ in results), results
    assert {out for _, out, _ in results} == {
        f"aye: store {Store(database_url).describe()} is at revision {migrate.head()} (head)\n"
    }
    assert await revision(database_url) == [migrate.head()]
