"""The stores tests run on: empty ones, and ones already at the newest schema revision.

Migrating a store from nothing runs every Alembic revision: 0.3-1 s of CPU a store, paid by
each of the ~750 tests that take `database_url` on a 2-core CI machine. Those tests need a store
at head, not the migration (tests/middle/test_migrations.py and the process tests of migrations
take `empty_database_url`). So each xdist worker migrates one SQLite file and one PostgreSQL
database once, and each test gets its own copy: the file copied (~1 ms), the database cloned
with CREATE DATABASE … TEMPLATE (~50 ms). aye still opens (and checks the revision of) the copy
as it would any store.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import Iterator
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


async def postgres_at_head(pg_session_url: str | None, template: str | None) -> str:
    """The worker's PostgreSQL database made anew as a copy of the migrated template.

    WITH (FORCE): a connection a previous test left behind (a killed process's) must not keep
    its database alive."""
    url = require_postgres(pg_session_url)
    assert template is not None
    name = url.rsplit("/", 1)[1]
    await run_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    await run_admin(f"CREATE DATABASE {name} TEMPLATE {template}")
    return url


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
def pg_template(pg_session_url: str | None) -> Iterator[str | None]:
    """The name of this run's PostgreSQL database at head, which each test's is cloned from
    (None when PostgreSQL is unreachable)."""
    if pg_session_url is None:
        yield None
        return
    name = f"aye_head_{os.getpid()}"
    asyncio.run(run_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    asyncio.run(run_admin(f"CREATE DATABASE {name}"))
    asyncio.run(migrated(on_server(name)))
    yield name
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
    pg_session_url: str | None, pg_template: str | None,
) -> str:
    """A store of the test's own, at the newest schema revision and empty of rows."""
    if request.param == "sqlite":
        return sqlite_at_head(sqlite_template, tmp_path)
    return await postgres_at_head(pg_session_url, pg_template)


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
