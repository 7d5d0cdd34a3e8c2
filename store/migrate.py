"""Schema migrations: Alembic, with its scripts shipped in this package (store/migrations).

`Store.open()` runs `upgrade` on its write connection, inside its write transaction, so the
migrations and the new revision commit together or not at all. On PostgreSQL that transaction
first takes an advisory lock: processes starting at once do schema work one at a time, and
the later ones find it done. A store made by aye 0.1.0 (its tables and meta.schema_version 1,
no alembic_version) has revision 0001's schema exactly: it is stamped 0001, then upgraded.

A new revision, after changing store/models.py: `alembic.command.revision(migrate.config(conn),
"what changed", rev_id="0003", autogenerate=True)` with `conn` a Connection to a store at head
(or without autogenerate and no connection, for an empty file), then read it and make it right
on both dialects. tests/middle/test_migrations.py fails while models and migrations disagree.
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from contextlib import AbstractAsyncContextManager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, inspect, text

from store.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic logs at INFO when imported ("setup plugin …") and on every run ("Context impl …",
# "Running upgrade …"): keep it to warnings, and say one line of aye's own instead.
logging.getLogger("alembic").setLevel(logging.WARNING)

log = logging.getLogger("aye.store")

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# A revision script's own id and its parents' (one, none, or a tuple for a merge).
REVISION = re.compile(r"^revision(?:\s*:[^=]*)?\s*=\s*[\"'](\w+)[\"']", re.M)
DOWN_REVISION = re.compile(r"^down_revision(?:\s*:[^=]*)?\s*=\s*(.*)$", re.M)
# The key of the PostgreSQL advisory lock held while looking at and changing the schema: any
# fixed 64-bit number no other program on the database uses ("aye.migr" as 8 bytes).
LOCK_KEY = int.from_bytes(b"aye.migr", "big")
# aye 0.1.0's schema, made by create_all before aye used Alembic.
BASELINE = "0001"

_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def __getattr__(name: str) -> Any:
    """`migrate.command`: Alembic's, imported when first used (tests patch its `upgrade`)."""
    if name == "command":
        from alembic import command

        return command
    raise AttributeError(name)


def turn() -> asyncio.Lock:
    """Held around `upgrade` in this process: Alembic's `context` and `op` are module globals,
    so two stores migrating at once on one event loop (their statements interleave on
    PostgreSQL) would send one's DDL down the other's connection. The advisory lock only
    orders them on the same database."""
    loop = asyncio.get_running_loop()
    lock = _turns.get(loop)
    if lock is None:
        lock = _turns[loop] = asyncio.Lock()
    return lock


def config(connection: Connection | None = None) -> Config:
    """Alembic's configuration, from the package (no alembic.ini, nothing read from the cwd)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """The newest revision this code knows."""
    from alembic.script import ScriptDirectory

    found = ScriptDirectory.from_config(config()).get_current_head()
    assert found is not None, "no migrations in store/migrations/versions"
    return found


def current(conn: Connection) -> str | None:
    """The store's revision, or None for a store without alembic_version."""
    from alembic.runtime.migration import MigrationContext

    heads = MigrationContext.configure(conn).get_current_heads()
    return ",".join(heads) if heads else None


def upgrade(conn: Connection) -> tuple[str | None, str]:
    """Bring the schema to head on `conn`, which must be in a transaction: (before, after).

    Raises StoreError when the store is at a revision this code does not know (a newer aye
    migrated it), or holds tables that are neither a 0.1.0 store's nor under Alembic.
    """
    if conn.dialect.name == "postgresql":
        # Released at commit or rollback of the store's transaction.
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
    if (at := _at_head(conn)) is not None:
        return at, at
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    cfg = config(conn)
    scripts = ScriptDirectory.from_config(cfg)
    target = scripts.get_current_head()
    assert target is not None, "no migrations in store/migrations/versions"
    heads = MigrationContext.configure(conn).get_current_heads()
    known = {script.revision for script in scripts.walk_revisions()}
    unknown = [rev for rev in heads if rev not in known]
    if unknown:
        raise StoreError(
            f"the store's schema is at revision {','.join(unknown)}, newer than this aye "
            f"(head {target}): upgrade aye"
        )
    before = ",".join(heads) if heads else None
    if before is None and _made_by_0_1_0(conn):
        command.stamp(cfg, BASELINE)
        before = BASELINE
    if before != target:
        command.upgrade(cfg, "head")
        log.info("store.migrated from=%s to=%s", before or "empty", target)
    return before, target


@cache
def _script_head() -> str | None:
    """The head of the revision scripts, read from their text; None when that is not one
    plain answer (Alembic then decides)."""
    revisions, parents = set(), set()
    for path in (MIGRATIONS / "versions").glob("[!_]*.py"):
        source = path.read_text(encoding="utf-8")
        found, down = REVISION.search(source), DOWN_REVISION.search(source)
        if found is None or down is None:
            return None
        revisions.add(found.group(1))
        parents.update(re.findall(r"[\"'](\w+)[\"']", down.group(1)))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _at_head(conn: Connection) -> str | None:
    """The head, when the store is at it already: the usual start, which then needs none of
    Alembic (13 MB of the process's memory and most of a second to import, bench/)."""
    head_now = _script_head()
    if head_now is None or not inspect(conn).has_table("alembic_version"):
        return None
    heads = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return head_now if list(heads) == [head_now] else None


def _made_by_0_1_0(conn: Connection) -> bool:
    """True for aye 0.1.0's tables; False for a store without aye's tables (a fresh one)."""
    if not inspect(conn).has_table("asks"):
        return False
    version = None
    if inspect(conn).has_table("meta"):
        version = conn.execute(
            text("SELECT value FROM meta WHERE key = 'schema_version'")
        ).scalar()
    if version != "1":
        raise StoreError(
            f"the store has aye's tables but no schema revision, and schema_version "
            f"{version or 'none'} is not aye 0.1.0's: not upgrading it"
        )
    return True


class Reads(Protocol):
    """What `revision` needs of a store (store/db.py's Store, which imports this module)."""

    def read(self) -> AbstractAsyncContextManager[Any]: ...


async def revision(store: Reads) -> str | None:
    """The store's revision now (after `store.open()`, the head)."""
    async with store.read() as conn:
        found: str | None = await conn.run_sync(current)
    return found
