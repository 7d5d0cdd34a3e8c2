"""External answers: the verifier an ask's door checks, the hash of its ticket (never the
ticket), and the digest of the delivery that answered it (to know a repeat).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("verifier", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("ticket_hash", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("delivery_digest", sa.String(length=64), nullable=True))
    op.create_index("ix_asks_ticket", "asks", ["ticket_hash"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_asks_ticket", table_name="asks")
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("delivery_digest")
        batch.drop_column("ticket_hash")
        batch.drop_column("verifier")
