"""Answer formats: an ask's format, a form's schema, a multi's bounds, and its media.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Asks made before this revision have no format: a choice when they have options, text when not
(core.domain.formats.format_of), which is what they were.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("format", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("form_schema", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("pick_min", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("pick_max", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("media", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        for column in ("media", "pick_max", "pick_min", "form_schema", "format"):
            batch.drop_column(column)
