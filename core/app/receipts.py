"""Receipts: a decided approval, signed (core.domain.receipts says what; core.app.keys signs).
A receipt is made when it is shown (the allow that uses a grant, a refusal's 403, a read of
the approval), not stored: the same approval gives the same claims every time."""

from __future__ import annotations

from core.app.parts import Parts
from core.domain import receipts
from core.domain.policy import gate_for
from store import asks as q
from store.models import AskRow


async def receipt(parts: Parts, ask: AskRow) -> str | None:
    """The approval's receipt, or None when it has none (open, a start's, not an approval)."""
    if not receipts.signable(ask):
        return None
    history = []
    if receipts.needs_history(ask):
        async with parts.store.read() as conn:
            history = await q.history(conn, ask.seq or 0)
    decided_by = receipts.approvers(ask, history, parts.people)
    gate = gate_for(parts.gates, ask.operation or "", ask.agent)
    grant_s = gate.timeout if gate is not None else None
    claims = receipts.claims(ask, decided_by, parts.keys.issuer, grant_s)
    return await parts.keys.sign(claims)
