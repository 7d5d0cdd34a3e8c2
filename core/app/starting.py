"""Approving a start: an agent asks before it first acts on a work (an issue, a thread), once
per work. The first start is asked like any gated call; later starts of the same work by the
same agent are allowed; a refused or timed-out start cancels the work for that agent."""

from __future__ import annotations

import logging
from typing import Any

from core.app.asking import insert
from core.app.gating import ALLOW, PENDING, REFUSE, approval_values, named_hashes, open_call
from core.app.parts import Parts
from core.app.ports import CallDecision, KindUnknown
from core.domain import identity, vocabulary
from core.domain.ask import AskValues
from core.domain.logline import emit
from core.domain.policy import START, START_REFUSED, Gate, any_kind_gate_for, start_gate_for
from core.domain.types import AgentInfo
from store import asks as q
from store.db import Duplicate
from store.models import AskRow

log = logging.getLogger("aye.asks")


async def start(
    parts: Parts, agent: AgentInfo, work: dict[str, Any], what: dict[str, Any],
    callback_url: str | None = None,
) -> CallDecision:
    """The decision on `agent` starting on `work`; `what` (title, links, trigger) is what the
    approval shows. Its callback must be allowed (CallbackRefused) and it counts towards the
    agent's asks_per_minute (Limited) first. What an earlier start of this work decided comes
    next, whatever kind the work is said to be now: a refused work stays refused when a later
    start claims another `type` (the start's identity is the work without its kind:
    core.domain.identity)."""
    agent.check_callback(callback_url)
    async with parts.change() as ch:  # a change of its own: it stands, whatever is decided
        await ch.count(agent.name, agent, hits=1)
    start_hash = identity.start_sha256(agent.name, work)
    async with parts.store.read() as conn:
        latest = await q.latest_call(conn, start_hash)
    decided = _decided(latest)
    if decided is not None:
        return decided
    gate = await start_gate(parts, agent.name, work)
    if gate is None:
        return CallDecision(ALLOW)
    responders = parts.people.expand(gate.responders or parts.defaults.responders)
    wider = parts.people.expand(gate.escalate.responders if gate.escalate else [])
    if not parts.places.reachable([*responders, *wider], work):
        return CallDecision(REFUSE)
    return await _ask(parts, agent, work, what, gate, start_hash, callback_url)


async def start_gate(parts: Parts, agent: str, work: dict[str, Any]) -> Gate | None:
    """The gate of this start. Where the gates tell a surface's kinds apart (`github.pull`
    but not `github.issue`), the kind is read from the surface itself, never taken from the
    agent's `type`; when it cannot be read, the start is gated as any kind it could be (the
    claimed kind's gate first, else the most specific gate of any kind of that surface), so a
    claim can never take a start out of every gate."""
    claimed = start_gate_for(parts.gates, identity.work_kind(work), agent)
    surface = identity.work_surface(work)
    if surface is None or not any(g.names_kinds_within(surface, agent) for g in parts.gates):
        return claimed
    try:
        kind = await parts.places.kind_of(work)
    except KindUnknown as exc:
        emit(log, "start.kind_unknown", level=logging.WARNING, agent=agent,
             work=identity.work_key(work), why=str(exc))
        return claimed or any_kind_gate_for(parts.gates, surface, agent)
    return start_gate_for(parts.gates, kind, agent)


def _decided(latest: AskRow | None) -> CallDecision | None:
    """What an earlier start of this work by this agent decided, if anything: pending,
    allowed (for good), or cancelled (refused or timed out, for good)."""
    if latest is None or latest.status == vocabulary.WITHDRAWN:
        return None
    if latest.status == vocabulary.OPEN:
        return CallDecision(PENDING, latest)
    if latest.outcome == vocabulary.APPROVED:
        return CallDecision(ALLOW, latest, latest.id)
    error = START_REFUSED if latest.outcome == vocabulary.APPROVAL_REFUSED else vocabulary.APPROVAL_TIMED_OUT
    return CallDecision(REFUSE, latest, latest.id, error=error)


async def _ask(
    parts: Parts, agent: AgentInfo, work: dict[str, Any], what: dict[str, Any], gate: Gate,
    start_hash: str, callback_url: str | None,
) -> CallDecision:
    now = parts.clock.now()
    shown = {"agent": agent.name, "work": work, **what}
    values = approval_values(agent.name, START, shown, work, gate, now, people=parts.people)
    responders = parts.people.expand(gate.responders or parts.defaults.responders)
    values.update(AskValues(call_hash=start_hash, responders=[str(r) for r in responders],
                  callback_url=callback_url))
    audit = named_hashes(agent.name, START, identity.input_sha256(shown), start_hash)
    try:
        ask = await insert(parts, values, audit, agent, counted=True)
    except Duplicate:  # an identical start made the pending approval first: share it
        pending = await open_call(parts, start_hash)
        if pending is None:
            raise
        return CallDecision(PENDING, pending)
    emit(log, "start.pending", ask=ask.id, agent=agent.name, kind=identity.work_kind(work))
    return CallDecision(PENDING, ask)
