"""aye 0.1.0's schema, as its create_all made it (a 0.1.0 store is stamped here, not rebuilt).

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Written out by hand, frozen: later changes to store/models.py go in later revisions.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# BIGINT (BIGSERIAL as a primary key) on PostgreSQL; INTEGER on SQLite, where only
# "INTEGER PRIMARY KEY" is the rowid alias that autoincrements.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "asks",
        sa.Column("seq", BigId, nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=True),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("work", sa.JSON(), nullable=True),
        sa.Column("work_key", sa.String(length=300), nullable=True),
        sa.Column("responders", sa.JSON(), nullable=False),
        sa.Column("escalate_responders", sa.JSON(), nullable=True),
        sa.Column("escalate_at", sa.Float(), nullable=True),
        sa.Column("escalated_at", sa.Float(), nullable=True),
        sa.Column("deadline", sa.Float(), nullable=False),
        sa.Column("due_at", sa.Float(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("closed_at", sa.Float(), nullable=True),
        sa.Column("idem_key", sa.String(length=200), nullable=True),
        sa.Column("body_hash", sa.String(length=64), nullable=True),
        sa.Column("sensitive", sa.Boolean(), nullable=False),
        sa.Column("answer_value", sa.Text(), nullable=True),
        sa.Column("answer_option", sa.Integer(), nullable=True),
        sa.Column("answer_note", sa.Text(), nullable=True),
        sa.Column("answered_by", sa.String(length=120), nullable=True),
        sa.Column("answer_surface", sa.String(length=32), nullable=True),
        sa.Column("outcome", sa.String(length=32), nullable=True),
        sa.Column("read_at", sa.Float(), nullable=True),
        sa.Column("erased", sa.Boolean(), nullable=False),
        sa.Column("operation", sa.String(length=200), nullable=True),
        sa.Column("call_input", sa.JSON(), nullable=True),
        sa.Column("call_hash", sa.String(length=64), nullable=True),
        sa.Column("approval_used_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_asks_agent_seq", "asks", ["agent", "seq"])
    op.create_index("ix_asks_status_seq", "asks", ["status", "seq"])
    op.create_index("ix_asks_agent_status_seq", "asks", ["agent", "status", "seq"])
    op.create_index("ix_asks_work_open", "asks", ["work_key", "status"])
    op.create_index("ix_asks_work_seq", "asks", ["work_key", "seq"])
    op.create_index("ix_asks_due", "asks", ["due_at"])
    op.create_index("ix_asks_agent_key", "asks", ["agent", "idem_key"], unique=True)
    op.create_index(
        "ix_asks_open_call",
        "asks",
        ["call_hash"],
        unique=True,
        sqlite_where=sa.text("status = 'open'"),
        postgresql_where=sa.text("status = 'open'"),
    )
    op.create_index("ix_asks_call_approved", "asks", ["call_hash", "approval_used_at"])

    op.create_table(
        "deliveries",
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("received_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("delivery_id"),
    )
    op.create_index("ix_deliveries_received", "deliveries", ["received_at"])

    op.create_table(
        "history",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ask_seq", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_history_ask", "history", ["ask_seq", "id"])

    meta = op.create_table(
        "meta",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    # What 0.1.0 wrote beside its tables: this database is now what 0.1.0 would have made.
    op.bulk_insert(meta, [{"key": "schema_version", "value": "1"}])

    op.create_table(
        "outbox",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ask_seq", sa.BigInteger(), nullable=False),
        sa.Column("surface", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("due_at", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("claimed_until", sa.Float(), nullable=True),
        sa.Column("done_at", sa.Float(), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_outbox_due", "outbox", ["due_at"])
    op.create_index("ix_outbox_ask", "outbox", ["ask_seq"])

    op.create_table(
        "posts",
        sa.Column("ask_seq", sa.BigInteger(), nullable=False),
        sa.Column("surface", sa.String(length=32), nullable=False),
        sa.Column("location", sa.JSON(), nullable=False),
        sa.Column("posted_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("ask_seq", "surface"),
    )


def downgrade() -> None:
    for table in ("posts", "outbox", "meta", "history", "deliveries", "asks"):
        op.drop_table(table)
