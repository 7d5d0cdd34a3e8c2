"""Callbacks: where an ask's agent is called back when it closes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("callback_url", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("callback_url")
