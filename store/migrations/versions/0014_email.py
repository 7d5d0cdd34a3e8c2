"""Email (handlers/email): the links mailed to people, and the mails themselves.

`email_links` keeps one capability per recipient and ask, as the SHA-256 of its token (the token
is only ever in the mail), and when it was used. `email_mails` records each mail before its first
send: its Message-ID (the same on every retry, so a send repeated after a crash is one mail to
the reader), the lease of the process sending it, and whether it was sent or refused for good.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "email_links",
        sa.Column("token_hash", sa.String(length=64), primary_key=True),
        sa.Column("ask_seq", sa.BigInteger(), nullable=False),
        sa.Column("recipient", sa.String(length=254), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("used_at", sa.Float(), nullable=True),
    )
    op.create_index("ix_email_links_ask_recipient", "email_links", ["ask_seq", "recipient"],
                    unique=True)
    op.create_table(
        "email_mails",
        sa.Column("id", BIG_ID, primary_key=True),
        sa.Column("ask_seq", sa.BigInteger(), nullable=False),
        sa.Column("recipient", sa.String(length=254), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("message_id", sa.String(length=200), nullable=False, unique=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("sending_until", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("sent_at", sa.Float(), nullable=True),
        sa.Column("refused_at", sa.Float(), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
    )
    op.create_index("ix_email_mails_once", "email_mails", ["ask_seq", "recipient", "purpose"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("ix_email_mails_once", table_name="email_mails")
    op.drop_table("email_mails")
    op.drop_index("ix_email_links_ask_recipient", table_name="email_links")
    op.drop_table("email_links")
