"""The web inbox's sessions, kept in the store so that Sign out ends one for every process and
a restart keeps them: the keyed hash of each cookie's secret (never the secret), who signed in,
how and when, and when it expires.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id_hash", sa.String(length=64), primary_key=True),
        sa.Column("identity", sa.String(length=120), nullable=False),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("signed_in_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_sessions_expires", "sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_sessions_expires", table_name="sessions")
    op.drop_table("sessions")
