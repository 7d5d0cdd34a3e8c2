"""Approval gates: which gate an operation meets, and the `/v1/calls` decision. An approval
lets that exact call (agent, operation, input, work: core.domain.identity) through once, decided
by the database."""

from __future__ import annotations

import logging
from typing import Any

from core.app.asks import Asks, new_ask_values
from core.domain import identity, rules
from core.domain.logline import emit
from core.domain.policy import Gate, gate_for
from core.domain.types import AgentInfo, CallDecision
from store import asks as q
from store.db import Duplicate
from store.models import AskRow

log = logging.getLogger("aye.asks")

ALLOW, PENDING, REFUSE = "allow", "pending", "refuse"


class Gates:
    def __init__(self, asks: Asks, gates: list[Gate]) -> None:
        self.asks = asks
        self.gates = gates

    async def call(
        self, agent: AgentInfo, operation: str, input_: Any, work: dict[str, Any] | None,
        timeout_s: float | None = None, callback_url: str | None = None,
    ) -> CallDecision:
        """The decision on one call; `timeout_s` is the caller's own bound on a new approval
        (its deadline is the earlier of that and the gate's; it escalates only before it)."""
        gate = gate_for(self.gates, operation, agent.name)
        if gate is None:
            return CallDecision(ALLOW)
        # One identity decides every "same" below: `DEPLOY.prod`, `5.0`, `"Octo/App"` or an
        # explicit `"type": "issue"` is the same call, for a refusal, a grant and a pending ask.
        call = identity.call(agent.name, operation, input_, work)
        call_hash = call.call_sha256
        audit = named_hashes(agent.name, call.operation, call.input_sha256, call_hash)
        responders = gate.responders or self.asks.defaults.responders
        wider = gate.escalate.responders if gate.escalate else []
        if not self.asks.reachable([*responders, *wider], work):
            emit(log, "call.unavailable", **audit)
            return CallDecision(REFUSE)
        now = self.asks.clock.now()
        refused = await self._remembered(call_hash, gate, now)
        if refused is not None:
            emit(log, "call.refused_again", approval=refused.id, **audit)
            return CallDecision(REFUSE, refused, refused.id, repeat=True)
        used = await self._use_approval(call_hash, now - gate.timeout, now)
        if used is not None:
            emit(log, "call.allowed", approval=used.id, **audit)
            return CallDecision(ALLOW, used, used.id)
        pending = await self._open_call(call_hash)
        if pending is not None:
            return CallDecision(PENDING, pending)
        # Stored lowercased, as it is matched: whichever spelling came first, people see one.
        values = approval_values(agent.name, call.operation, input_, work, gate, now, timeout_s)
        values.update(call_hash=call_hash, responders=[str(r) for r in responders],
                      callback_url=callback_url)
        try:
            ask = await self.asks.insert(values, audit, agent, counted=True)
        except Duplicate:
            # An identical call created the pending approval first: share it.
            pending = await self._open_call(call_hash)
            if pending is None:
                raise
            return CallDecision(PENDING, pending)
        emit(log, "call.pending", ask=ask.id, **audit)
        return CallDecision(PENDING, ask)

    async def _use_approval(self, call_hash: str, since: float, now: float) -> AskRow | None:
        async with self.asks.store.read() as conn:
            ask = await q.unused_approval(conn, call_hash, since)
        if ask is None:
            return None
        async with self.asks.store.write() as conn:
            won = await q.use_approval(conn, ask.seq, now)
            if won:
                await q.add_history(conn, ask.seq, now, "used", {"agent": ask.agent})
        return ask if won else None

    async def _remembered(self, call_hash: str, gate: Gate, now: float) -> AskRow | None:
        """A refusal of this exact call within the gate's memory of refusals: it answers the
        call at once, so an agent cannot wear people down by asking again."""
        if gate.remembers <= 0:
            return None
        async with self.asks.store.read() as conn:
            return await q.recent_refusal(conn, call_hash, now - gate.remembers)

    async def _open_call(self, call_hash: str) -> AskRow | None:
        async with self.asks.store.read() as conn:
            return await q.open_call(conn, call_hash)


def named_hashes(agent: str, operation: str, input_sha256: str, call_sha256: str) -> dict[str, Any]:
    """The `created` entry of an approval (and its log lines): each hash named as what it is."""
    return {"agent": agent, "operation": operation, "input_sha256": input_sha256,
            "call_sha256": call_sha256}


def approval_values(
    agent: str, operation: str, input_: Any, work: dict[str, Any] | None, gate: Gate, now: float,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """The approval ask: facts only (the operation and its input); each surface words it.
    Its deadline is the gate's (with the escalation's time), or the caller's `timeout_s` when
    that is earlier; it escalates only when the escalation comes before that deadline."""
    total = gate.timeout + (gate.escalate.timeout if gate.escalate else 0.0)
    if timeout_s is not None:
        total = min(total, timeout_s)
    values = new_ask_values(agent, rules.APPROVAL, work, [], now, now + total)
    values.update(
        question=operation, options=list(rules.APPROVAL_OPTIONS), context=None,
        operation=operation, call_input=input_,
        approvals_needed=gate.approvals if gate.approvals > 1 else None,
        self_check=gate.prevent_self_approval or None,
    )
    if gate.escalate and gate.timeout < total:
        values.update(
            escalate_responders=[str(r) for r in gate.escalate.responders],
            escalate_at=now + gate.timeout,
            due_at=now + gate.timeout,
        )
    if gate.remind_after is not None and gate.remind_after < total:
        values.update(remind_at=now + gate.remind_after, due_at=now + gate.remind_after)
    return values
