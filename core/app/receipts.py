"""Receipts: a decided approval, signed (core.domain.receipts says what; core.app.keys signs).
A receipt is signed once, in the transaction that decides the approval (core.app.change calls
`Sealer.seal`), and kept on its row; every later read (the allow that uses a grant, a refusal's
403, a read of the approval) returns those same bytes. Nothing is signed from a row after the
fact: a row edited outside aye gets no fresh receipt, and an approval decided before receipts
were kept (revision 0016) has none."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from core.domain import receipts
from core.domain.people import People
from core.domain.policy import Gate, gate_for
from store import asks as q
from store.db import Conn, Store
from store.models import AskRow

if TYPE_CHECKING:
    from core.app.keys import Keyring


class Sealer:
    """Signs a decided approval's receipt in the change that decides it."""

    def __init__(self, keys: Keyring, people: People, gates: list[Gate]) -> None:
        self.keys, self.people, self.gates = keys, people, gates

    async def ready(self) -> None:
        """The signing key loaded (made, at a first start) before a change opens its
        transaction: inside it, making one would wait on the change's own write lock."""
        await self.keys.signer()

    async def seal(self, conn: Conn, closed: AskRow) -> str | None:
        """The receipt of `closed` (the approval as its close writes it), read in the closing
        transaction `conn`; None when it gets none (a question, a start's, a withdrawal)."""
        if not receipts.signable(closed):
            return None
        history = await q.history(conn, closed.seq or 0) if receipts.needs_history(closed) else []
        decided_by = receipts.approvers(closed, history, self.people)
        gate = gate_for(self.gates, closed.operation or "", closed.agent)
        grant_s = gate.timeout if gate is not None else None
        return await self.keys.sign(receipts.claims(closed, decided_by, self.keys.issuer, grant_s))


def sha256(receipt: str) -> str:
    """What the audit chain holds of a receipt: the hex SHA-256 of the compact JWS's bytes."""
    return hashlib.sha256(receipt.encode("ascii")).hexdigest()


async def receipt(store: Store, ask: AskRow) -> str | None:
    """The approval's kept receipt, or None when it has none (open, a start's, not an
    approval, decided before receipts were kept). A row read before the decision is read
    again."""
    if not receipts.signable(ask):
        return None
    if ask.receipt:
        return ask.receipt
    async with store.read() as conn:
        row = await q.by_seq(conn, ask.seq or 0)
    return row.receipt if row is not None else None
