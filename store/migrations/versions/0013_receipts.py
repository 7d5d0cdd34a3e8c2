"""Receipts: the keys that sign them, and what ran.

`signing_keys` holds every key aye has signed receipts with, newest generation current: the
public key of each (so that `GET /v1/keys` keeps verifying old receipts), and the private key of
one generated at first start (a key from AYE_SIGNING_KEY_PATH keeps its private half in its
file). `generation` is unique, so two processes starting at once on one PostgreSQL agree on one
key: the second insert of generation 1 fails and reads the first's.

An approval that was used records what its agent reported (`run_outcome`: ran, failed, not_run),
its detail and when, once per use.

And `danger` (the first hour): an ask whose affirmative answer is destructive, shown so.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("generation", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("kid", sa.String(length=64), nullable=False, unique=True),
        sa.Column("public_jwk", sa.JSON(), nullable=False),
        sa.Column("private_pem", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("run_outcome", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("run_detail", sa.Text(), nullable=True))
        batch.add_column(sa.Column("run_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("danger", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("danger")
        batch.drop_column("run_at")
        batch.drop_column("run_detail")
        batch.drop_column("run_outcome")
    op.drop_table("signing_keys")
