"""Approving a start: an agent asks before it first acts on a work (an issue, a thread), once
per work. The first start is asked like any gated call; later starts of the same work by the
same agent are allowed; a refused or timed-out start cancels the work for that agent."""

from __future__ import annotations

import logging
from typing import Any

from bot.core import rules
from bot.core.config import START, Gate, start_gate_for
from bot.core.gates import ALLOW, PENDING, REFUSE, Gates, approval_values
from bot.core.logs import emit
from bot.core.types import AgentInfo, CallDecision
from store import asks as q
from store.db import Duplicate
from store.models import AskRow

log = logging.getLogger("aye.asks")
START_REFUSED = "start_refused"


async def start(
    gates: Gates, agent: AgentInfo, work: dict[str, Any], what: dict[str, Any],
    callback_url: str | None = None,
) -> CallDecision:
    """The decision on `agent` starting on `work`; `what` (title, links, trigger) is what the
    approval shows."""
    gate = start_gate_for(gates.gates, rules.work_kind(work), agent.name)
    if gate is None:
        return CallDecision(ALLOW)
    start_hash = rules.digest({"agent": agent.name, "start": rules.work_key(work)})
    async with gates.asks.store.read() as conn:
        latest = await q.latest_call(conn, start_hash)
    decided = _decided(latest)
    if decided is not None:
        return decided
    responders = gate.responders or gates.asks.defaults.responders
    wider = gate.escalate.responders if gate.escalate else []
    if not gates.asks.reachable([*responders, *wider], work):
        return CallDecision(REFUSE)
    return await _ask(gates, agent, work, what, gate, start_hash, callback_url)


def _decided(latest: AskRow | None) -> CallDecision | None:
    """What an earlier start of this work by this agent decided, if anything: pending,
    allowed (for good), or cancelled (refused or timed out, for good)."""
    if latest is None or latest.status == rules.WITHDRAWN:
        return None
    if latest.status == rules.OPEN:
        return CallDecision(PENDING, latest)
    if latest.outcome == rules.APPROVED:
        return CallDecision(ALLOW, latest, latest.id)
    error = START_REFUSED if latest.outcome == rules.APPROVAL_REFUSED else rules.APPROVAL_TIMED_OUT
    return CallDecision(REFUSE, latest, latest.id, error=error)


async def _ask(
    gates: Gates, agent: AgentInfo, work: dict[str, Any], what: dict[str, Any], gate: Gate,
    start_hash: str, callback_url: str | None,
) -> CallDecision:
    now = gates.asks.clock.now()
    shown = {"agent": agent.name, "work": work, **what}
    values = approval_values(agent.name, START, shown, work, gate, now)
    responders = gate.responders or gates.asks.defaults.responders
    values.update(call_hash=start_hash, responders=[str(r) for r in responders],
                  callback_url=callback_url)
    audit = {"agent": agent.name, "operation": START, "input_hash": start_hash[:16]}
    try:
        ask = await gates.asks.insert(values, audit, agent, counted=True)
    except Duplicate:  # an identical start made the pending approval first: share it
        async with gates.asks.store.read() as conn:
            pending = await q.open_call(conn, start_hash)
        if pending is None:
            raise
        return CallDecision(PENDING, pending)
    emit(log, "start.pending", ask=ask.id, agent=agent.name, kind=rules.work_kind(work))
    return CallDecision(PENDING, ask)


# -- a start, as surfaces put it in words -----------------------------------------------------


def is_start(ask: AskRow) -> bool:
    return ask.kind == rules.APPROVAL and ask.operation == START


def said(ask: AskRow, key: str) -> str | None:
    """What the start's agent gave as `key` (title, trigger), unescaped; None when blank."""
    given = ask.call_input if isinstance(ask.call_input, dict) else {}
    value = given.get(key)
    return value if isinstance(value, str) and value.strip() else None


def starter(ask: AskRow) -> str:
    """The agent that would start (as the start recorded it), unescaped."""
    return said(ask, "agent") or ask.agent


def links(ask: AskRow) -> list[str]:
    """The links the start's agent gave, unescaped."""
    given = ask.call_input if isinstance(ask.call_input, dict) else {}
    return [link for link in given.get("links") or [] if isinstance(link, str)]
