"""Dead letters: an outbox row the far side refused for good keeps when it was given up.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

A permanent error (Slack's channel_not_found, GitHub's 404) or one past the retry budget was
retried every few minutes forever. Such a row is now done with `dead_at` set: counted in
/healthz, and its reason is in the ask's history.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("dead_at", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("dead_at")
