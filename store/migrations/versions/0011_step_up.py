"""Step-up: an approval whose gate sets `sign_in_within` keeps it on the ask, so that its
approvals count only from a sign-in no older than that, whichever process takes them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("sign_in_within", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("sign_in_within")
