"""The stores tests run on: empty ones, and ones already at the newest schema revision.

Migrating a store from nothing runs every Alembic revision: 0.3-1 s of CPU a store, paid by
each of the ~750 tests that take `database_url` on a 2-core CI machine. Those tests need a store
at head, not the migration (tests/middle/test_migrations.py and the process tests of migrations
take `empty_database_url`). So each xdist worker migrates one SQLite file and one PostgreSQL
database once, and each test gets its own copy: the file copied (~1 ms), the database emptied
by deleting every row and putting back the few the migrations wrote (~20 ms; a DROP DATABASE
forces a checkpoint of the whole server, up to 1.5 s on a busy one). aye still opens (and checks
the revision of) the store as it would any store.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest

from store.db import Store

PG_SERVER = os.environ.get("AYE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
REQUIRE_PG = os.environ.get("AYE_REQUIRE_PG") == "1"


def dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


def on_server(name: str) -> str:
    """The URL of database `name` on the test PostgreSQL server."""
    return PG_SERVER.rsplit("/", 1)[0] + "/" + name


async def run_admin(sql: str) -> None:
    """One statement on the server's own database (CREATE and DROP DATABASE cannot run on the
    database they name)."""
    conn = await asyncpg.connect(dsn(PG_SERVER))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def reset_postgres(url: str) -> None:
    conn = await asyncpg.connect(dsn(url))
    try:
        await conn.execute("DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;")
    finally:
        await conn.close()


async def migrated(url: str) -> None:
    """Bring the store at `url` to head, as `aye migrate` does, and let go of it."""
    store = Store(url)
    try:
        await store.open()
    finally:
        await store.close()


# What a test could change of a database's shape: tables and columns, indexes, constraints,
# sequences. A test that changed it gets the next test a database migrated anew.
SHAPE = """
SELECT md5(string_agg(part, ';' ORDER BY part)) FROM (
  SELECT format('%s.%s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                a.attnotnull, pg_get_expr(d.adbin, d.adrelid)) AS part
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'S')
    AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'
  UNION ALL SELECT conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
  WHERE connamespace = 'public'::regnamespace
) parts
"""
# Connections other than this one: a process a test killed, or left running.
OTHERS = ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
          "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@dataclass
class HeadDatabase:
    """A PostgreSQL database at head, and what it held just after its migrations (the rows
    they wrote, where its sequences stood), to put it back that way before each test."""

    url: str
    shape: str = ""
    rows: dict[str, list[asyncpg.Record]] = field(default_factory=dict)
    sequences: dict[str, tuple[int, int | None]] = field(default_factory=dict)

    @classmethod
    async def made(cls, url: str) -> HeadDatabase:
        head = cls(url)
        await head._migrate()
        return head

    async def _migrate(self) -> None:
        await reset_postgres(self.url)
        await migrated(self.url)
        conn = await asyncpg.connect(dsn(self.url))
        try:
            self.shape = await conn.fetchval(SHAPE)
            tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            self.rows = {t["tablename"]: await conn.fetch(f'SELECT * FROM "{t["tablename"]}"')
                         for t in tables}
            self.sequences = {s["sequencename"]: (s["start_value"], s["last_value"]) for s in
                              await conn.fetch("SELECT * FROM pg_sequences WHERE schemaname = 'public'")}
        finally:
            await conn.close()

    async def reset(self) -> None:
        """Every row deleted, the migrations' rows put back, the sequences where they stood."""
        conn = await asyncpg.connect(dsn(self.url))
        try:
            await conn.execute(OTHERS)
            reshaped = await conn.fetchval(SHAPE) != self.shape
            if not reshaped:
                await self._refill(conn)
        finally:
            await conn.close()
        if reshaped:
            await self._migrate()

    async def _refill(self, conn: asyncpg.Connection) -> None:
        async with conn.transaction():
            for table, rows in self.rows.items():
                await conn.execute(f'DELETE FROM "{table}"')
                if rows:
                    await conn.copy_records_to_table(table, records=[tuple(r) for r in rows],
                                                     columns=list(rows[0].keys()))
            for name, (start, last) in self.sequences.items():
                at, called = (start, False) if last is None else (last, True)
                await conn.execute("SELECT setval($1, $2, $3)", name, at, called)


def require_postgres(pg_session_url: str | None) -> str:
    """The worker's database URL, or a skip (a failure under AYE_REQUIRE_PG=1)."""
    if pg_session_url is None:
        if REQUIRE_PG:
            pytest.fail("PostgreSQL is required (AYE_REQUIRE_PG=1) but 127.0.0.1:5432 is closed")
        pytest.skip("PostgreSQL not reachable at 127.0.0.1:5432; store tests ran on SQLite only")
    return pg_session_url


async def postgres_url(pg_session_url: str | None) -> str:
    """A freshly emptied PostgreSQL database, or a skip (a failure under AYE_REQUIRE_PG=1)."""
    url = require_postgres(pg_session_url)
    await reset_postgres(url)
    return url


async def postgres_at_head(head: HeadDatabase | None) -> str:
    """The worker's PostgreSQL database at head, emptied of what the last test left in it."""
    if head is None:
        require_postgres(None)
    assert head is not None
    await head.reset()
    return head.url


def sqlite_at_head(template: Path, folder: Path) -> str:
    """A copy of the migrated SQLite template in `folder`, readable by its owner alone as aye
    makes a store."""
    path = folder / "aye.db"
    shutil.copyfile(template, path)
    path.chmod(0o600)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture(scope="session")
def pg_session_url() -> Iterator[str | None]:
    """A database of this test run's own on the PostgreSQL server (None when unreachable),
    so that test runs sharing the server cannot drop each other's tables."""
    if not _pg_reachable():
        yield None
        return
    name = f"aye_test_{os.getpid()}"
    asyncio.run(run_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    asyncio.run(run_admin(f"CREATE DATABASE {name}"))
    yield on_server(name)
    asyncio.run(run_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture(scope="session")
def pg_head(pg_session_url: str | None) -> Iterator[HeadDatabase | None]:
    """This worker's PostgreSQL database at head, for the tests that take `database_url` (None
    when PostgreSQL is unreachable)."""
    if pg_session_url is None:
        yield None
        return
    name = f"aye_head_{os.getpid()}"
    asyncio.run(run_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    asyncio.run(run_admin(f"CREATE DATABASE {name}"))
    yield asyncio.run(HeadDatabase.made(on_server(name)))
    asyncio.run(run_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's SQLite store at head, which each test's is copied from."""
    path = tmp_path_factory.mktemp("head") / "aye.db"
    asyncio.run(migrated(f"sqlite+aiosqlite:///{path}"))
    # Closed, SQLite folds its WAL into the file: the file alone is the whole store.
    assert not path.with_name(path.name + "-wal").exists()
    return path


def _pg_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path,
    pg_head: HeadDatabase | None,
) -> str:
    """A store of the test's own, at the newest schema revision and empty of rows."""
    if request.param == "sqlite":
        return sqlite_at_head(sqlite_template, tmp_path)
    return await postgres_at_head(pg_head)


@pytest.fixture(params=["sqlite", "postgres"])
async def empty_database_url(
    request: pytest.FixtureRequest, tmp_path: Path, pg_session_url: str | None
) -> str:
    """A store of the test's own with nothing in it, not even a schema (for migrations)."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/aye.db"
    return await postgres_url(pg_session_url)


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """`tmp_path/aye.db`, a SQLite store at head, for a test that starts `aye serve` itself
    (sparing each process the migrations: ~0.6 s of its ~2 s of CPU)."""
    return sqlite_at_head(sqlite_template, tmp_path)
