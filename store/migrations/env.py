"""Alembic's environment for aye, run by `store.migrate` on the store's own connection.

The connection comes in `config.attributes["connection"]`, already inside the transaction the
store began (BEGIN IMMEDIATE on SQLite; on PostgreSQL holding the schema advisory lock), so
every migration and the version stamp commit or roll back together. No alembic.ini, no
logging.fileConfig: the process's logging stays as aye set it.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

import store.models  # noqa: F401  (the tables, for autogenerate's comparison)

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError(
        "aye's migrations run on the store's connection: use `aye migrate`, not the alembic CLI"
    )
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    # SQLite alters tables by copying them: have autogenerate write batch operations.
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
