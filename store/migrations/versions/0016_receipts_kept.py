"""Receipts kept, and uses counted: proof that survives the database, outcomes that give back once.

`receipt`: an approval's receipt (a compact JWS), signed once when it is decided and kept, so
that reading it later returns the same bytes; an edited row no longer gets a fresh, valid
receipt. Approvals decided before this revision have none (nothing is signed from a row after
the fact).

`approval_uses`: how many times the approval's single grant was used (NULL: never). A `not_run`
gives a grant back only for its first use, so one approval runs at most twice. An approval
used before this revision counts as used once: if a `not_run` gave it back already, its next
use is its second, and a `not_run` for that one gives nothing back.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("receipt", sa.Text(), nullable=True))
        batch.add_column(sa.Column("approval_uses", sa.Integer(), nullable=True))
    op.execute("UPDATE asks SET approval_uses = 1 "
               "WHERE approval_used_at IS NOT NULL OR run_outcome IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("approval_uses")
        batch.drop_column("receipt")
