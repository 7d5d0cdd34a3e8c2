"""Schema migrations: a store made by aye 0.1.0 upgrades in place; newer stores are refused.

tests/fixtures/store-0.1.0/ holds what aye 0.1.0 (commit 056501b) made: the DDL its
create_all ran on each dialect and the rows its real app wrote (see generate.py there).

Here on the store itself, in this process; the app serving an upgraded store, `aye migrate`,
`aye serve` on a newer store and several processes migrating at once are
tests/e2e/test_migrations_processes.py's.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError
from sqlmodel import SQLModel

from store import audit, chain, migrate
from store.db import Store, StoreError
from store.urls import sqlite_path
from tests.conftest import reset_postgres
from tests.stores import migrated as open_store

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "store-0.1.0"
TABLES = ("asks", "history", "outbox", "posts", "deliveries", "meta")
# The rows in data.sql, as 0.1.0 wrote them.
QUESTION = "9ec1e1b3d2254120b8f088639f99bf8b"  # answered with option 1 and a note
APPROVED = "64b8607b766047009e2f2080d03c1db9"  # approved, then used by its call
EXPIRED = "9c8be4a50a3f44e88f45791f78f988a6"
ESCALATED = "6279e83808824f4da502faba8ec6663d"  # open, on octo/app#7, escalated
LAST_WRITE = 1767229281.0  # the fixture's last moment (2026-01-01T01:01:21Z)
UNKNOWN = "f00dfeed9999"


@pytest.fixture
def database_url(empty_database_url: str) -> str:
    """A store with nothing in it: these tests make its schema themselves."""
    return empty_database_url


def is_pg(url: str) -> bool:
    return url.startswith("postgresql")


def dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


def sqlite_file(url: str) -> Path:
    path = sqlite_path(url)
    assert path is not None
    return path


async def run_sql(url: str, script: str) -> None:
    if is_pg(url):
        conn = await asyncpg.connect(dsn(url))
        try:
            await conn.execute(script)
        finally:
            await conn.close()
    else:
        with sqlite3.connect(sqlite_file(url)) as db:
            db.executescript(script)
        # sqlite3's context manager commits but does not close.
        db.close()


async def query(url: str, sql: str) -> list[tuple[Any, ...]]:
    if is_pg(url):
        conn = await asyncpg.connect(dsn(url))
        try:
            return [tuple(row.values()) for row in await conn.fetch(sql)]
        finally:
            await conn.close()
    db = sqlite3.connect(sqlite_file(url))
    try:
        return list(db.execute(sql).fetchall())
    finally:
        db.close()


async def make_0_1_0_store(url: str, data: bool = True) -> None:
    """A store as aye 0.1.0 left it: its schema, and its rows with the sequences past them.

    Made from nothing: whatever the store at `url` held (a schema at head) goes first."""
    if is_pg(url):
        await reset_postgres(url)
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{sqlite_file(url)}{suffix}").unlink(missing_ok=True)
    dialect = "postgresql" if is_pg(url) else "sqlite"
    script = (FIXTURE / f"schema.{dialect}.sql").read_text()
    if data:
        script += (FIXTURE / "data.sql").read_text()
        if is_pg(url):
            # 0.1.0 let BIGSERIAL number its rows; the fixture's INSERTs name theirs.
            script += "".join(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                f"(SELECT max({column}) FROM {table}));\n"
                for table, column in (("asks", "seq"), ("history", "id"), ("outbox", "id"))
            )
    else:
        script += "INSERT INTO meta (key, value) VALUES ('schema_version', '1');\n"
    await run_sql(url, script)


# The columns 0.1.0's tables had (later revisions add some): a row is compared on these.
COLUMNS_0_1_0 = {
    "asks": (
        "seq, id, agent, kind, status, question, options, context, work, work_key, responders, "
        "escalate_responders, escalate_at, escalated_at, deadline, due_at, created_at, closed_at, "
        "idem_key, body_hash, sensitive, answer_value, answer_option, answer_note, answered_by, "
        "answer_surface, outcome, read_at, erased, operation, call_input, call_hash, "
        "approval_used_at"
    ),
    "outbox": "id, ask_seq, surface, action, payload, created_at, due_at, attempts, "
              "claimed_until, done_at, last_error",
    "history": "id, ask_seq, at, event, detail",
}


async def rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of aye's tables, as the database holds them (0.1.0's columns)."""
    order = {"asks": "seq", "history": "id", "outbox": "id", "posts": "ask_seq, surface",
             "deliveries": "delivery_id", "meta": "key"}
    return {
        table: await query(
            url, f"SELECT {COLUMNS_0_1_0.get(table, '*')} FROM {table} ORDER BY {order[table]}"
        )
        for table in TABLES
    }


async def revision(url: str) -> list[str]:
    return [row[0] for row in await query(url, "SELECT version_num FROM alembic_version")]


async def schema(url: str) -> set[tuple[Any, ...]]:
    """The schema of aye's tables (not alembic_version), comparable across two databases."""
    if not is_pg(url):
        found = await query(url, "SELECT type, name, tbl_name, sql FROM sqlite_master "
                                 "WHERE name NOT LIKE 'alembic%' AND name NOT LIKE 'sqlite_%'")
        return {(kind, name, table, re.sub(r"\s+", " ", sql or "")) for kind, name, table, sql in found}
    queries = [
        "SELECT 'column', table_name, column_name, ordinal_position, data_type, "
        "character_maximum_length, is_nullable, column_default FROM information_schema.columns "
        "WHERE table_schema = 'public' AND table_name <> 'alembic_version'",
        "SELECT 'index', tablename, indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = 'public' AND tablename <> 'alembic_version'",
        "SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
        "FROM pg_constraint WHERE connamespace = 'public'::regnamespace "
        "AND conrelid::regclass::text <> 'alembic_version'",
        "SELECT 'sequence', sequence_name, data_type, start_value, increment "
        "FROM information_schema.sequences WHERE sequence_schema = 'public'",
        "SELECT 'owned', s.relname, t.relname, a.attname FROM pg_depend d "
        "JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S' "
        "JOIN pg_class t ON t.oid = d.refobjid "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid",
    ]
    return {row for sql in queries for row in await query(url, sql)}


async def upgrade_to(url: str, target: str) -> None:
    """An empty store brought to one revision (not the head), as Alembic would."""
    store = Store(url)
    try:
        async with store.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(migrate.config(c), target))
    finally:
        await store.close()


# -- a 0.1.0 store ------------------------------------------------------------------------


async def test_a_0_1_0_store_upgrades_in_place_keeping_every_row(database_url: str) -> None:
    await make_0_1_0_store(database_url)
    before = await rows(database_url)
    assert [r[0] for r in before["meta"]] == ["schema_version"]

    await open_store(database_url)

    assert await revision(database_url) == [migrate.head()]
    after = await rows(database_url)
    for table in TABLES[:-1]:
        assert after[table] == before[table], table
    # Alembic owns the schema now; 0.1.0 would refuse this store rather than write to it.
    assert after["meta"] == [("schema_version", "2")]
    # Its earlier history is one audit chain (revision 0012), in the order it was written.
    walked = await chain_of(database_url)
    assert walked.broken_at is None and walked.count == len(before["history"]) > 0


async def chain_of(database_url: str) -> Any:
    """The store's audit chain, walked (store/chain.py)."""
    store = Store(database_url)
    try:
        async with store.read() as conn:
            found = await audit.entries(conn, 0, 1_000_000)
    finally:
        await store.close()
    return chain.check(audit.as_entry(row) for row in found)


async def test_a_failed_upgrade_leaves_the_0_1_0_store_as_it_was(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stamp, migrations and version commit together in the store's write transaction (BEGIN
    IMMEDIATE on SQLite, under Alembic's notice that it is in an outer transaction)."""
    await make_0_1_0_store(database_url)
    before = await rows(database_url)
    upgrade = migrate.command.upgrade

    def upgrade_then_fail(cfg: Any, target: str) -> None:
        upgrade(cfg, target)
        raise OperationalError("COMMIT", {}, Exception("disk I/O error"))

    monkeypatch.setattr(migrate.command, "upgrade", upgrade_then_fail)
    with pytest.raises(StoreError, match=r"^cannot open the store .*: disk I/O error$"):
        await open_store(database_url)

    assert await rows(database_url) == before
    tables = ("SELECT tablename FROM pg_tables WHERE schemaname = 'public'" if is_pg(database_url)
              else "SELECT name FROM sqlite_master WHERE type = 'table'")
    assert "alembic_version" not in {row[0] for row in await query(database_url, tables)}
    monkeypatch.undo()
    await open_store(database_url)
    assert await revision(database_url) == [migrate.head()]


async def test_the_migrated_schema_is_exactly_0_1_0s(tmp_path: Path, database_url: str) -> None:
    """Revision 0001 written by hand makes what 0.1.0's create_all made, on each dialect."""
    await make_0_1_0_store(database_url, data=False)
    made_by_0_1_0 = await schema(database_url)
    if is_pg(database_url):
        await reset_postgres(database_url)
        fresh = database_url
    else:
        fresh = f"sqlite+aiosqlite:///{tmp_path}/fresh.db"
    await upgrade_to(fresh, migrate.BASELINE)
    assert await schema(fresh) == made_by_0_1_0
    assert len(made_by_0_1_0) > 15


# -- fresh stores, and stores this code must not touch ----------------------------------------


async def test_a_fresh_store_is_made_at_head_and_opening_again_changes_nothing(
    database_url: str,
) -> None:
    await open_store(database_url)
    assert await revision(database_url) == [migrate.head()]
    first = (await schema(database_url), await rows(database_url))
    assert first[1]["meta"] == [("schema_version", "2")]

    await open_store(database_url)

    assert await revision(database_url) == [migrate.head()]
    assert (await schema(database_url), await rows(database_url)) == first


async def test_the_models_match_the_migrated_schema(database_url: str) -> None:
    """store/models.py and store/migrations agree: a model change needs a migration."""
    store = Store(database_url)
    try:
        await store.open()

        def differences(conn: Connection) -> list[Any]:
            return list(compare_metadata(MigrationContext.configure(conn), SQLModel.metadata))

        async with store.read() as conn:
            assert await conn.run_sync(differences) == []
    finally:
        await store.close()


async def test_revision_0010_adds_the_sessions_table_and_its_downgrade_takes_it_away(
    database_url: str,
) -> None:
    await upgrade_to(database_url, "0009")
    at_0009 = await schema(database_url)
    await move_to(database_url, "upgrade", "0010")
    assert await query(database_url, "SELECT count(*) FROM sessions") == [(0,)]
    assert await schema(database_url) != at_0009

    await move_to(database_url, "downgrade", "0009")
    assert await revision(database_url) == ["0009"]
    assert await schema(database_url) == at_0009


async def test_revision_0011_keeps_a_gate_s_step_up_on_its_asks_and_its_downgrade_drops_it(
    database_url: str,
) -> None:
    await upgrade_to(database_url, "0010")
    at_0010 = unquoted(await schema(database_url))
    await open_store(database_url)
    assert await query(database_url, "SELECT count(sign_in_within) FROM asks") == [(0,)]

    await move_to(database_url, "downgrade", "0010")
    assert await revision(database_url) == ["0010"]
    # SQLite rebuilds the table to drop a column, and quotes its name in the new DDL.
    assert unquoted(await schema(database_url)) == at_0010


async def move_to(database_url: str, way: str, target: str) -> None:
    """Alembic's upgrade or downgrade of the store to `target`, as `aye migrate` runs it."""
    store = Store(database_url)
    try:
        async with store.write() as conn:
            step = command.upgrade if way == "upgrade" else command.downgrade
            await conn.run_sync(lambda c: step(migrate.config(c), target))
    finally:
        await store.close()


def unquoted(found: Any) -> Any:
    return {tuple(str(part).replace('"', "") for part in row) for row in found}


async def test_a_store_at_an_unknown_revision_is_refused(database_url: str) -> None:
    await open_store(database_url)
    await run_sql(database_url, f"UPDATE alembic_version SET version_num = '{UNKNOWN}';")
    before = await rows(database_url)

    with pytest.raises(StoreError) as refused:
        await open_store(database_url)

    assert str(refused.value) == (
        f"the store's schema is at revision {UNKNOWN}, newer than this aye "
        f"(head {migrate.head()}): upgrade aye"
    )
    assert await revision(database_url) == [UNKNOWN]
    assert await rows(database_url) == before


async def test_tables_without_a_revision_that_are_not_0_1_0s_are_refused(database_url: str) -> None:
    await make_0_1_0_store(database_url, data=False)
    await run_sql(database_url, "DELETE FROM meta;")

    with pytest.raises(StoreError, match="no schema revision, and schema_version none is not"):
        await open_store(database_url)
    assert await query(database_url, "SELECT count(*) FROM meta") == [(0,)]


async def test_an_unreachable_store_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        url = f"postgresql+asyncpg://aye:secret@127.0.0.1:{port}/aye"
        with pytest.raises(StoreError) as failed:
            await open_store(url)
    message = str(failed.value)
    assert message.startswith(f"cannot open the store postgresql+asyncpg://aye:***@127.0.0.1:{port}/aye: ")
    assert "\n" not in message and "secret" not in message


# -- several stores at once in one process ----------------------------------------------


async def test_stores_opening_at_once_in_one_process_all_succeed(database_url: str) -> None:
    """Alembic keeps its context in module globals: migrate.turn() orders stores in one
    process (the advisory lock only orders those on one PostgreSQL database)."""
    opens = asyncio.gather(*(open_store(database_url) for _ in range(4)))
    await asyncio.wait_for(opens, 60)
    assert await revision(database_url) == [migrate.head()]
    assert await query(database_url, "SELECT value FROM meta") == [("2",)]


async def test_0_1_0_stores_opening_at_once_upgrade_once(database_url: str) -> None:
    await make_0_1_0_store(database_url)
    before = await rows(database_url)
    await asyncio.wait_for(asyncio.gather(*(open_store(database_url) for _ in range(4))), 60)
    assert await revision(database_url) == [migrate.head()]
    after = await rows(database_url)
    assert {t: after[t] for t in TABLES[:-1]} == {t: before[t] for t in TABLES[:-1]}
