"""Alembic owns the schema: meta.schema_version 2 makes aye 0.1.0 refuse this store.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

aye 0.1.0 checks meta.schema_version at start and stops ("newer than this aye: upgrade aye")
when it is above 1; it knows nothing of alembic_version. Set once, never again: from here on
the revision in alembic_version is the schema's version, and `meta` is left to that guard.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

meta = sa.table("meta", sa.column("key", sa.String), sa.column("value", sa.String))


def _set(value: str) -> None:
    op.execute(meta.delete().where(meta.c.key == "schema_version"))
    op.execute(meta.insert().values(key="schema_version", value=value))


def upgrade() -> None:
    _set("2")


def downgrade() -> None:
    _set("1")
