"""The audit chain: every history entry gets its place in one chain (chain_seq, 1, 2, 3, …),
the hash of the entry before it and its own (store/chain.py). A store's earlier history is
chained here, in the order it was written (history's id), so an upgraded store has one
unbroken chain from its first entry.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store import chain

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

BATCH = 1000


def upgrade() -> None:
    with op.batch_alter_table("history") as batch:
        batch.add_column(sa.Column("chain_seq", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("prev", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("hash", sa.String(length=64), nullable=True))
    _chain_what_is_there(op.get_bind())
    op.create_index("ix_history_chain", "history", ["chain_seq"], unique=True)


def _chain_what_is_there(conn: sa.Connection) -> None:
    history = sa.table("history", sa.column("id"), sa.column("ask_seq"), sa.column("at"),
                       sa.column("event"), sa.column("detail", sa.JSON),
                       sa.column("chain_seq"), sa.column("prev"), sa.column("hash"))
    asks = sa.table("asks", sa.column("seq"), sa.column("id"))
    query = (sa.select(history.c.id, history.c.at, history.c.event, history.c.detail,
                       asks.c.id.label("ask"))
             .join(asks, asks.c.seq == history.c.ask_seq, isouter=True).order_by(history.c.id))
    update = (sa.update(history).where(history.c.id == sa.bindparam("row_id"))
              .values(chain_seq=sa.bindparam("seq"), prev=sa.bindparam("p"), hash=sa.bindparam("h")))
    prev, seq, pending = chain.GENESIS, 0, []
    for row in conn.execute(query).all():
        seq += 1
        found = chain.entry(seq, float(row.at), str(row.ask or ""), row.event, row.detail or {}, prev)
        pending.append({"row_id": row.id, "seq": seq, "p": prev, "h": found["hash"]})
        prev = found["hash"]
        if len(pending) >= BATCH:
            conn.execute(update, pending)
            pending = []
    if pending:
        conn.execute(update, pending)


def downgrade() -> None:
    op.drop_index("ix_history_chain", table_name="history")
    with op.batch_alter_table("history") as batch:
        batch.drop_column("hash")
        batch.drop_column("prev")
        batch.drop_column("chain_seq")
