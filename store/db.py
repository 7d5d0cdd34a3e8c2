"""The database: engines, schema and version, and read/write transactions for SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlmodel import SQLModel

from store.models import SCHEMA_VERSION, MetaRow

log = logging.getLogger("aye.store")

DEFAULT_URL = "sqlite+aiosqlite:///./aye.db"
NOTIFY_CHANNEL = "aye_asks"
# Under a burst (thousands of agents parking at once) requests queue for a connection rather
# than fail; past this the API answers 503 with Retry-After.
POOL_TIMEOUT_S = 120.0


class StoreError(Exception):
    """The store cannot be used as configured; the message is for the operator."""


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL, or None for another database or an in-memory one."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite"):
        return None
    if not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # isolation_level=None stops the sqlite3 module from issuing its own BEGIN: we issue
    # BEGIN ourselves (IMMEDIATE for writers), so a writer never fails upgrading a read lock.
    dbapi_conn.isolation_level = None
    cursor = dbapi_conn.cursor()
    # WAL: readers never block the writer. synchronous=NORMAL in WAL mode loses nothing
    # committed when the process dies (only an OS crash or power loss can cost the last commits).
    # secure_delete: erased sensitive answers are overwritten, not left in free pages.
    for pragma in (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "busy_timeout=10000",
        "secure_delete=ON",
        "foreign_keys=ON",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_engine(url: str, begin: str, connections: int) -> AsyncEngine:
    engine = create_async_engine(
        url, pool_size=connections, max_overflow=0, pool_timeout=POOL_TIMEOUT_S
    )
    event.listen(engine.sync_engine, "connect", _sqlite_pragmas)

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)

    return engine


class Store:
    """Owns the engines. `write()` and `read()` hand out transactions.

    On SQLite, writers take the write lock up front (BEGIN IMMEDIATE) on one engine while
    readers use another with plain deferred transactions, which WAL lets run alongside.
    On PostgreSQL both are one engine.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = make_url(url).drivername.startswith("sqlite")
        self.is_postgres = make_url(url).drivername.startswith("postgresql")
        if not (self.is_sqlite or self.is_postgres):
            raise StoreError(f"unsupported database URL scheme {make_url(url).drivername!r}")
        if self.is_sqlite:
            path = sqlite_path(url)
            if path is not None and not path.parent.exists():
                raise StoreError(f"the folder for the SQLite store does not exist: {path.parent}")
            # One writer connection: SQLite takes one writer at a time anyway, and writers
            # queued on the pool wait in order, where several connections would spin in
            # SQLite's busy handler and time out under load.
            self.writer = _sqlite_engine(url, "BEGIN IMMEDIATE", 1)
            self.reader = _sqlite_engine(url, "BEGIN", 8)
        else:
            self.writer = create_async_engine(
                url, pool_size=10, max_overflow=20, pool_timeout=POOL_TIMEOUT_S
            )
            self.reader = self.writer

    def describe(self) -> str:
        """The store, for the start-up line, without any password."""
        return make_url(self.url).render_as_string(hide_password=True)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        async with self.writer.begin() as conn:
            yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.reader.connect() as conn:
            yield conn

    async def open(self) -> None:
        """Create the schema where missing and check its version."""
        path = sqlite_path(self.url)
        if path is not None and not path.exists():
            # It will hold answers: readable by the owner alone, like the token file.
            path.touch(mode=0o600)
        async with self.write() as conn:
            await conn.run_sync(SQLModel.metadata.create_all)
            row = (
                await conn.execute(select(MetaRow).where(MetaRow.key == "schema_version"))  # type: ignore[arg-type]
            ).first()
            if row is None:
                await conn.execute(
                    MetaRow.__table__.insert().values(  # type: ignore[attr-defined]
                        key="schema_version", value=str(SCHEMA_VERSION)
                    )
                )
            elif int(row.value) > SCHEMA_VERSION:
                raise StoreError(
                    f"the store's schema is version {row.value}, newer than this aye "
                    f"({SCHEMA_VERSION}): upgrade aye"
                )

    async def ping(self) -> bool:
        try:
            async with self.read() as conn:
                await conn.execute(text("SELECT 1"))
            return True
        except Exception:  # any failure means "not reachable" for /healthz
            log.warning("store not reachable")
            return False

    async def checkpoint(self) -> None:
        """Fold SQLite's WAL into the database file and truncate it (used after erasing)."""
        if not self.is_sqlite:
            return
        async with self.writer.connect() as conn:
            # On the driver's connection, outside any transaction: a checkpoint inside one
            # is refused ("database table is locked").
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            cursor = await driver.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            await cursor.close()

    async def close(self) -> None:
        await self.writer.dispose()
        if self.reader is not self.writer:
            await self.reader.dispose()
