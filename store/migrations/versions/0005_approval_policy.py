"""Approval policy: a quorum's approvers, the self-approval check, and reminders.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

`approvals_needed` and `approvers` count a quorum on the ask's own row, so that the row's lock
decides a race between two approvals (core.app.asks); `self_check` marks an approval its
work's author may not give; `remind_at`/`reminded_at` fire one reminder, as deadlines fire.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("approvals_needed", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("approvers", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("self_check", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("remind_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("reminded_at", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        for column in ("reminded_at", "remind_at", "self_check", "approvers", "approvals_needed"):
            batch.drop_column(column)
