"""Per-agent limits: hits per agent per minute's window, counted by the store.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rates",
        sa.Column("agent", sa.String(length=100), primary_key=True),
        sa.Column("window", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("hits", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rates")
