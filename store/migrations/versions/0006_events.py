"""The event stream's table: what happened to asks, in commit order, kept a few hours.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("ask_seq", sa.BigInteger(), nullable=False),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
    )
    op.create_index("ix_events_agent_id", "events", ["agent", "id"])
    op.create_index("ix_events_at", "events", ["at"])


def downgrade() -> None:
    op.drop_index("ix_events_at", table_name="events")
    op.drop_index("ix_events_agent_id", table_name="events")
    op.drop_table("events")
