"""What ran: the agent that used an approval reports, once per use, whether the operation ran,
failed, or did not run. It goes into the approval's history (so into the audit chain) and the
event stream, and its surfaces show it. `not_run` within the grant's window gives the grant
back: a crash before the operation ran does not burn the approval."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.app.parts import Parts
from core.app.reading import find
from core.domain import rules
from core.domain.ask import is_approval
from core.domain.policy import gate_for
from core.domain.types import AgentInfo
from store.models import AskRow

log = logging.getLogger("aye.asks")

RAN, FAILED, NOT_RUN = "ran", "failed", "not_run"
OUTCOMES = (RAN, FAILED, NOT_RUN)
DETAIL_MAX = 500


class NotYours(Exception):
    """No approval of this agent has that id (another agent's is not shown either)."""


class NotReportable(Exception):
    """The approval has nothing to report on now: `code` says why (for a 409)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Reported:
    ask: AskRow
    usable_again: bool


async def report(
    parts: Parts, agent: AgentInfo, approval: str, outcome: str, detail: str | None
) -> Reported:
    """Record what ran after the last use of `approval` (its id or ref)."""
    ask = await find(parts, approval, agent.name) if approval.isascii() else None
    if ask is None or not is_approval(ask) or ask.operation is None:
        raise NotYours(approval)
    if ask.outcome != rules.APPROVED:
        raise NotReportable("not_approved", "this approval was not approved: nothing ran on it")
    if ask.approval_used_at is None:
        raise NotReportable("not_used", "this approval is not in use: report what ran after "
                            "the call it allowed (POST /v1/calls), once")
    now = parts.clock.now()
    gate = gate_for(parts.gates, ask.operation, ask.agent)
    window = gate.timeout if gate is not None else 0.0
    give_back = outcome == NOT_RUN and (ask.closed_at or 0.0) >= now - window
    async with parts.change(ask) as ch:
        won = await ch.report_run(outcome, detail, give_back)
        if won:
            ch.history("outcome", {"by": f"agent:{ask.agent}", "outcome": outcome,
                                   "detail": detail, "usable_again": give_back})
            ch.log("call.outcome", id=ask.id, ref=rules.ref(ask), outcome=outcome,
                   usable_again=give_back)
    if not won:
        raise NotReportable("already_reported", "what ran after this use of the approval was "
                            "already reported")
    update = {"run_outcome": outcome, "run_detail": detail, "run_at": ch.now}
    if give_back:
        update["approval_used_at"] = None
    return Reported(ask.model_copy(update=update), give_back)
