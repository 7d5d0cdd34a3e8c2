"""Approval gates: which gate an operation meets, and the `/v1/calls` decision. An approval
lets that exact call (agent, operation, input, work: core.domain.identity) through once, decided
by the database."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from core.app import receipts
from core.app.asking import insert, new_ask_values
from core.app.parts import Parts
from core.app.ports import CallDecision
from core.domain import identity, vocabulary
from core.domain.ask import AskValues
from core.domain.gate_decision import Allow, Ask, CallFacts, Refuse, Unreachable, Wait, decide_call
from core.domain.logline import emit
from core.domain.people import NOBODY, People
from core.domain.policy import Gate, gate_for
from core.domain.responders import Responder
from core.domain.types import AgentInfo
from store import asks as q
from store.db import Duplicate
from store.models import AskRow

log = logging.getLogger("aye.asks")

ALLOW, PENDING, REFUSE = "allow", "pending", "refuse"


@dataclass(frozen=True, slots=True)
class _Call:
    """One gated call, as the use case needs it to apply the decision."""

    agent: AgentInfo
    operation: str  # as matched (lowercased): whichever spelling came first, people see one
    input_: Any
    work: dict[str, Any] | None
    call_hash: str
    audit: dict[str, Any]
    responders: list[Responder]
    now: float
    timeout_s: float | None
    callback_url: str | None


async def call(
    parts: Parts, agent: AgentInfo, operation: str, input_: Any, work: dict[str, Any] | None,
    timeout_s: float | None = None, callback_url: str | None = None,
) -> CallDecision:
    """The decision on one call (an allow or a refusal by an approval with its receipt). Its
    callback must be one the operator allowed this agent (CallbackRefused); it counts towards
    asks_per_minute (Limited) first. `timeout_s`: the caller's own bound on a new approval.
    Which rule decides is core.domain.gate_decision's; this fetches its facts and applies it."""
    agent.check_callback(callback_url)
    async with parts.change() as ch:  # a change of its own: it stands, whatever is decided
        await ch.count(agent.name, agent, hits=1)
    gate = gate_for(parts.gates, operation, agent.name)
    if gate is None:
        return CallDecision(ALLOW)
    # One identity decides every "same" below: `DEPLOY.prod`, `5.0`, `"Octo/App"` or an
    # explicit `"type": "issue"` is the same call, for a refusal, a grant and a pending ask.
    ident = identity.call(agent.name, operation, input_, work)
    audit = named_hashes(agent.name, ident.operation, ident.input_sha256, ident.call_sha256)
    responders = parts.people.expand(gate.responders or parts.defaults.responders)
    wider = parts.people.expand(gate.escalate.responders if gate.escalate else [])
    reachable = parts.places.reachable([*responders, *wider], work)
    now = parts.clock.now()
    one = _Call(agent, ident.operation, input_, work, ident.call_sha256, audit,
                list(responders), now, timeout_s, callback_url)
    facts: CallFacts[AskRow] = CallFacts(reachable=False)
    if reachable:
        facts = await _facts(parts, gate, one)
    return await _apply(parts, gate, facts, one)


async def _facts(parts: Parts, gate: Gate, one: _Call) -> CallFacts[AskRow]:
    """What decides the call, read at once: a refusal within the gate's memory of refusals
    (it answers the call at once, so an agent cannot wear people down by asking again), an
    unused approval within the gate's timeout, and a pending approval."""
    async with parts.store.read() as conn:
        refusal = None
        if gate.remembers > 0:
            refusal = await q.recent_refusal(conn, one.call_hash, one.now - gate.remembers)
        grant = await q.unused_approval(conn, one.call_hash, one.now - gate.timeout)
        pending = await q.open_call(conn, one.call_hash)
    return CallFacts(refusal=refusal, grant=grant, pending=pending)


async def _apply(parts: Parts, gate: Gate, facts: CallFacts[AskRow], one: _Call) -> CallDecision:
    while True:
        match decide_call(gate, facts):
            case Unreachable():
                emit(log, "call.unavailable", **one.audit)
                return CallDecision(REFUSE)
            case Refuse(refusal=refused):
                emit(log, "call.refused_again", approval=refused.id, **one.audit)
                return CallDecision(REFUSE, refused, refused.id, repeat=True,
                                    receipt=await receipts.receipt(parts.store, refused))
            case Allow(grant=grant):
                if await _use_approval(parts, grant):
                    emit(log, "call.allowed", approval=grant.id, **one.audit)
                    return CallDecision(ALLOW, grant, grant.id,
                                        receipt=await receipts.receipt(parts.store, grant))
                # Another caller used it first: decide again without it.
                facts = replace(facts, grant=None, pending=await open_call(parts, one.call_hash))
            case Wait(pending=pending):
                return CallDecision(PENDING, pending)
            case Ask():
                return await _ask(parts, gate, one)


async def _ask(parts: Parts, gate: Gate, one: _Call) -> CallDecision:
    """A new pending approval of the call, or the one an identical call made first."""
    values = approval_values(one.agent.name, one.operation, one.input_, one.work, gate, one.now,
                             one.timeout_s, parts.people)
    values.update(AskValues(call_hash=one.call_hash, responders=[str(r) for r in one.responders],
                  callback_url=one.callback_url))
    try:
        ask = await insert(parts, values, one.audit, one.agent, counted=True)
    except Duplicate:
        # An identical call created the pending approval first: share it.
        pending = await open_call(parts, one.call_hash)
        if pending is None:
            raise
        return CallDecision(PENDING, pending)
    emit(log, "call.pending", ask=ask.id, **one.audit)
    return CallDecision(PENDING, ask)


async def _use_approval(parts: Parts, grant: AskRow) -> bool:
    """Whether this caller uses the approval (the store decides among callers)."""
    async with parts.change(grant) as ch:
        use = await ch.use_approval()
        if use is not None:  # each use numbered, for its outcome and the audit's replay
            ch.history("used", {"agent": grant.agent, "use": use})
    return use is not None


async def open_call(parts: Parts, call_hash: str) -> AskRow | None:
    async with parts.store.read() as conn:
        return await q.open_call(conn, call_hash)


def named_hashes(agent: str, operation: str, input_sha256: str, call_sha256: str) -> dict[str, Any]:
    """The `created` entry of an approval (and its log lines): each hash named as what it is."""
    return {"agent": agent, "operation": operation, "input_sha256": input_sha256,
            "call_sha256": call_sha256}


def approval_values(
    agent: str, operation: str, input_: Any, work: dict[str, Any] | None, gate: Gate, now: float,
    timeout_s: float | None = None, people: People = NOBODY,
) -> AskValues:
    """The approval ask: facts only (the operation and its input); each surface words it.
    Its deadline is the gate's (with the escalation's time), or the caller's `timeout_s` when
    that is earlier; it escalates only when the escalation comes before that deadline."""
    total = gate.timeout + (gate.escalate.timeout if gate.escalate else 0.0)
    if timeout_s is not None:
        total = min(total, timeout_s)
    values = new_ask_values(agent, vocabulary.APPROVAL, work, [], now, now + total)
    values.update(AskValues(
        question=operation, options=list(vocabulary.APPROVAL_OPTIONS), context=None,
        operation=operation, call_input=input_,
        approvals_needed=gate.approvals if gate.approvals > 1 else None,
        self_check=gate.prevent_self_approval or None, sign_in_within=gate.sign_in_within,
        danger=gate.danger or None,
    ))
    if gate.escalate and gate.timeout < total:
        values.update(AskValues(
            escalate_responders=[str(r) for r in people.expand(gate.escalate.responders)],
            escalate_at=now + gate.timeout,
            due_at=now + gate.timeout,
        ))
    if gate.remind_after is not None and gate.remind_after < total:
        values.update(AskValues(remind_at=now + gate.remind_after, due_at=now + gate.remind_after))
    return values
