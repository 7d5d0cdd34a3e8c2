"""The database: engines, schema and version, and read/write transactions for SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

import store.models  # noqa: F401  (the tables; store/__init__.py configures their mappers)
from store import migrate  # Alembic itself is imported by migrate's functions, when run
from store.database_url import FORMS, POSTGRES, SQLITE, UnsupportedUrl, canonical
from store.errors import StoreError as StoreError  # where the store's callers import it
from store.urls import sqlite_path

log = logging.getLogger("aye.store")

NOTIFY_CHANNEL = "aye_asks"
# Under a burst (thousands of agents parking at once) requests queue for a connection rather
# than fail; past this the API answers 503 with Retry-After.
POOL_TIMEOUT_S = 120.0
OWNER_POLL_S = 0.05


class Duplicate(Exception):
    """An insert met a unique index (the caller's transaction is then over)."""


def _reason(exc: BaseException) -> str:
    """A database error in one line: the driver's own words, without SQLAlchemy's SQL echo."""
    cause: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    lines = str(cause).strip().splitlines()
    return (lines[0] if lines else "") or cause.__class__.__name__


def _own(path: Path, wait_s: float) -> int:
    """Hold `<store>.lock` for as long as this process has the SQLite store open: a second
    aye process on the same file would never wake the first one's parked agents (they wake
    in-process; PostgreSQL's NOTIFY is what spans processes), so it must refuse to start.

    A POSIX record lock on a file of its own: SQLite's own locks live on the database file, and
    closing any descriptor of a file drops all of a process's POSIX locks on it. Being per
    process, it also lets one process (the tests) open the store more than once."""
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    end = time.monotonic() + wait_s
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() < end:
                time.sleep(OWNER_POLL_S)
                continue
            os.close(fd)
        raise StoreError(
            f"the SQLite store {path} is in use by another aye process: run one process per "
            "SQLite file (PostgreSQL for several)"
        )


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


def _sqlite_engine(url: str, begin: str, connections: int) -> Engine:
    # Synchronous pysqlite, called on the event loop: a statement on an indexed table takes
    # tens of microseconds, where aiosqlite's round trips to its worker thread cost ~2 ms per
    # statement (measured in bench/). SQLite in WAL mode never waits on the disk at commit
    # with synchronous=NORMAL, so the loop is not held up. Several processes on one SQLite file
    # would make a writer wait in SQLite's busy handler on the loop: run PostgreSQL for that.
    engine = create_engine(
        make_url(url).set(drivername="sqlite"),
        pool_size=connections,
        # Overflow for a read nested in another: a pool that waited here would wait forever,
        # since the connection it waits for is given back by this same thread.
        max_overflow=-1,
        pool_timeout=POOL_TIMEOUT_S,
    )
    event.listen(engine, "connect", _sqlite_pragmas)

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)

    return engine


def _unnamed() -> str:
    """asyncpg's name for a statement SQLAlchemy prepares: "", the unnamed statement, which the
    next statement on the connection replaces (never one left on a pooled server connection)."""
    return ""


def _postgres_engine(url: str, pooled: bool) -> AsyncEngine:
    # libpq's `sslmode` (what people's URLs carry) is asyncpg's `ssl`: SQLAlchemy passes the
    # URL's query to asyncpg's connect() as arguments, and it takes no `sslmode`.
    parsed = make_url(url)
    query, connect_args = dict(parsed.query), dict[str, Any]()
    mode = query.pop("sslmode", None)
    if isinstance(mode, str):
        connect_args["ssl"] = mode
    if pooled:
        # Behind a transaction pooler (PgBouncer) a server connection is ours for one
        # transaction only: a named statement prepared in one would be missing, or another
        # client's, in the next. No cache of prepared statements (SQLAlchemy's nor asyncpg's),
        # and unnamed ones, prepared and run inside the same transaction (Store.read).
        connect_args.update(statement_cache_size=0, prepared_statement_cache_size=0,
                            prepared_statement_name_func=_unnamed)
    return create_async_engine(
        parsed.set(query=query), pool_size=10, max_overflow=20, pool_timeout=POOL_TIMEOUT_S,
        connect_args=connect_args,
    )


class SyncConnection:
    """The calls the core makes on an AsyncConnection, over a synchronous one (SQLite)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        return self._conn.execute(statement, parameters)

    async def scalar(self, statement: Any, parameters: Any = None) -> Any:
        return self._conn.scalar(statement, parameters)

    async def run_sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(self._conn, *args)


# What `Store.write()` and `Store.read()` hand out: the core uses execute, scalar, run_sync.
Conn = AsyncConnection | SyncConnection


def _readable(name: str, url: str) -> str:
    """`url` in the form the store opens it with; StoreError naming the variable otherwise."""
    try:
        url = canonical(url)
        make_url(url)
    except (UnsupportedUrl, ArgumentError, ValueError) as exc:
        # ArgumentError: a URL SQLAlchemy cannot read (`postgresql://h:port/`); the URL
        # itself is never repeated: it may hold a password.
        said = str(exc) if isinstance(exc, UnsupportedUrl) else f"not a database URL: use {FORMS}"
        raise StoreError(f"{name}: {said}") from None
    return url


class Store:
    """Owns the engines. `write()` and `read()` hand out transactions.

    On SQLite, writers take the write lock up front (BEGIN IMMEDIATE) on one connection, in
    turn (an asyncio lock: one writer at a time is all SQLite allows anyway), while readers
    use other connections with plain deferred transactions, which WAL lets run alongside.
    On PostgreSQL both are one async engine.
    """

    def __init__(self, url: str, listen_url: str | None = None) -> None:
        self.url = url = _readable("AYE_DATABASE_URL", url)
        drivername = make_url(url).drivername
        # LISTEN's own URL (AYE_LISTEN_URL), direct to PostgreSQL where `url` is a transaction
        # pooler, which cannot carry a LISTEN. aye cannot tell a pooler from a server: being
        # given one is what says `url` may be a pooler, so every transaction is made safe for one.
        self.pooled = listen_url is not None
        self.listen_url = url if listen_url is None else _readable("AYE_LISTEN_URL", listen_url)
        self.is_sqlite = drivername == SQLITE
        self.is_postgres = drivername == POSTGRES
        self._sqlite_writer: Engine | None = None
        self._sqlite_reader: Engine | None = None
        self._write_turn = asyncio.Lock()
        self._owner: int | None = None  # the SQLite store's lock file, held while open
        if self.is_sqlite:
            path = sqlite_path(url)
            if path is not None and not path.parent.exists():
                raise StoreError(f"the folder for the SQLite store does not exist: {path.parent}")
            self._sqlite_writer = _sqlite_engine(url, "BEGIN IMMEDIATE", 1)
            self._sqlite_reader = _sqlite_engine(url, "BEGIN", 4)
        else:
            self.engine = _postgres_engine(url, self.pooled)
            # Reads outside a transaction: the asyncpg dialect otherwise wraps each in BEGIN and
            # ROLLBACK, two more round trips (a third of a wake's on PostgreSQL, bench/). Under
            # READ COMMITTED each statement had its own snapshot already: nothing is lost.
            # Not behind a pooler: a statement's prepare and its run are two round trips, which
            # outside a transaction may reach two server connections.
            self._reader = (self.engine if self.pooled
                            else self.engine.execution_options(isolation_level="AUTOCOMMIT"))
            # This process's own connections, by their backend's pid: the listener knows its
            # own NOTIFYs by them (bot/listener.py). Weak: a connection the pool dropped goes.
            # Behind a pooler the pid a connection is told is the pooler's, not a backend's: no
            # NOTIFY is then taken for this process's own (an echo costs a re-read, never a wake).
            self._backends: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
            if not self.pooled:
                event.listen(self.engine.sync_engine, "connect", self._connected)

    def _connected(self, dbapi_conn: Any, _record: Any) -> None:
        driver = dbapi_conn.driver_connection  # asyncpg's Connection
        self._backends[driver.get_server_pid()] = driver

    def sent_here(self, backend_pid: int) -> bool:
        """Whether a NOTIFY from `backend_pid` was sent by one of this process's connections,
        still open (PostgreSQL): a closed one's pid may since be another process's."""
        driver = self._backends.get(backend_pid)
        return driver is not None and not driver.is_closed()

    def describe(self) -> str:
        """The store, for the start-up line, without any password."""
        return make_url(self.url).render_as_string(hide_password=True)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Conn]:
        if self._sqlite_writer is not None:
            async with self._write_turn:
                with self._sqlite_writer.begin() as conn:
                    yield SyncConnection(conn)
            return
        async with self.engine.begin() as aconn:
            yield aconn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Conn]:
        if self._sqlite_reader is not None:
            with self._sqlite_reader.connect() as conn:
                yield SyncConnection(conn)
            return
        async with self._reader.connect() as aconn:
            yield aconn

    async def open(self, wait_s: float = 0.0) -> None:
        """Bring the schema up to date (Alembic: store/migrations) or refuse a newer one.

        Raises StoreError, one line for the operator, for anything that stops the store from
        being used: unreachable, refused, a schema newer than this code, a failed migration.
        """
        path = sqlite_path(self.url)
        if path is not None:
            if not path.exists():
                # It will hold answers: readable by the owner alone, like the token file.
                path.touch(mode=0o600)
            self._owner = _own(path, wait_s)
        try:
            async with migrate.turn(), self.write() as conn:
                await conn.run_sync(migrate.upgrade)
        except StoreError:
            raise
        except (SQLAlchemyError, OSError, TypeError) as exc:
            # TypeError: asyncpg's connect() refusing a query parameter of the URL (`?foo=1`).
            raise StoreError(f"cannot open the store {self.describe()}: {_reason(exc)}") from None

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
        if self._sqlite_writer is None:
            return
        async with self._write_turn:
            # On the driver's connection, outside any transaction: a checkpoint inside one
            # is refused ("database table is locked").
            raw = self._sqlite_writer.raw_connection()
            try:
                raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
            finally:
                raw.close()

    async def close(self) -> None:
        if self._owner is not None:
            os.close(self._owner)
            self._owner = None
        if self._sqlite_writer is not None and self._sqlite_reader is not None:
            self._sqlite_writer.dispose()
            self._sqlite_reader.dispose()
        else:
            await self.engine.dispose()
