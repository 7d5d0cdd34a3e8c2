"""Per-agent limits: hits per agent per minute's window, and each agent's open asks, counted by
the store (the open counts start from the asks open at the upgrade).

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
    op.create_table(
        "open_counts",
        sa.Column("agent", sa.String(length=100), primary_key=True),
        sa.Column("open", sa.Integer(), nullable=False),
    )
    op.execute(
        "INSERT INTO open_counts (agent, open) "
        "SELECT agent, count(*) FROM asks WHERE status = 'open' GROUP BY agent"
    )


def downgrade() -> None:
    op.drop_table("open_counts")
    op.drop_table("rates")
