"""Decimal refs: an ask made from now on is `q10`, not `qa`, so that no ref reads like a word.

The asks already made keep the base-36 refs their surfaces already posted: `ref_base36` is true
on every row that exists when this migration runs, and null on every later one. On PostgreSQL
the column is added with a default of true (kept in the catalogue, so no row is rewritten) and
the default is then dropped; SQLite has no way to drop a column default in place, so the
column is added empty and the rows are marked.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.add_column("asks", sa.Column("ref_base36", sa.Boolean(), nullable=True,
                                        server_default=sa.true()))
        op.alter_column("asks", "ref_base36", server_default=None)
        return
    op.add_column("asks", sa.Column("ref_base36", sa.Boolean(), nullable=True))
    op.execute("UPDATE asks SET ref_base36 = 1")


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("ref_base36")
