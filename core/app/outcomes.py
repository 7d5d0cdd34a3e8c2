"""What ran: the agent that used an approval reports, once per use, whether the operation ran,
failed, or did not run. It goes into the approval's history (so into the audit chain) and the
event stream, and its surfaces show it. A use is numbered from 1 (`used` entries); a report
names its use, or is about the latest. `not_run` of the first use, within the grant's window,
gives the grant back once: a crash before the operation ran does not burn the approval, and
the use it gives back (use 2) is the last, whatever is reported of it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.app.parts import Parts
from core.app.reading import find
from core.domain import refs, vocabulary
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

    def __init__(self, code: str, message: str, field: str = "approval") -> None:
        super().__init__(message)
        self.code, self.field = code, field


@dataclass(frozen=True, slots=True)
class Reported:
    ask: AskRow
    use: int
    usable_again: bool


def gives_back(outcome: str, use: int, decided_at: float, now: float, window: float) -> bool:
    """Whether a report gives the single grant back: a `not_run` of its first use, within the
    grant's window. Once only: the use it gives back is the last, whatever is reported of it,
    so one approval never runs more than twice."""
    return outcome == NOT_RUN and use == 1 and decided_at >= now - window


def which_use(ask: AskRow, use: int | None) -> int:
    """The use a report is about (`use`, or the latest), or NotReportable saying why none."""
    latest = ask.approval_uses or 0
    if latest == 0:
        raise NotReportable("not_used", "this approval is not in use: report what ran after "
                            "the call it allowed (POST /v1/calls), once")
    if use is None:
        if ask.approval_used_at is None:  # its latest use was reported, and given back
            raise NotReportable("not_used", "this approval is not in use: its grant was given "
                                "back; report what ran after the call it allows next")
        return latest
    if use > latest:
        raise NotReportable("not_used", f"use {use} of this approval did not happen: it was "
                            f"used {latest} time{'s' if latest > 1 else ''}", "use")
    if use < latest or ask.approval_used_at is None or ask.run_outcome is not None:
        raise NotReportable("already_reported", f"what ran after use {use} of this approval "
                            "was already reported", "use")
    return use


async def report(
    parts: Parts, agent: AgentInfo, approval: str, outcome: str, detail: str | None,
    use: int | None = None,
) -> Reported:
    """Record what ran after use `use` of `approval` (its id or ref; the latest use when
    None)."""
    ask = await find(parts, approval, agent.name) if approval.isascii() else None
    if ask is None or not is_approval(ask) or ask.operation is None:
        raise NotYours(approval)
    if ask.outcome != vocabulary.APPROVED:
        raise NotReportable("not_approved", "this approval was not approved: nothing ran on it")
    asked, use = use, which_use(ask, use)
    now = parts.clock.now()
    gate = gate_for(parts.gates, ask.operation, ask.agent)
    window = gate.timeout if gate is not None else 0.0
    give_back = gives_back(outcome, use, ask.closed_at or 0.0, now, window)
    async with parts.change(ask) as ch:
        won = await ch.report_run(use, outcome, detail, give_back)
        if won:
            ch.history("outcome", {"by": f"agent:{ask.agent}", "outcome": outcome,
                                   "detail": detail, "usable_again": give_back, "use": use})
            ch.log("call.outcome", id=ask.id, ref=refs.ref(ask), outcome=outcome, use=use,
                   usable_again=give_back)
    if not won:
        raise NotReportable("already_reported", f"what ran after use {use} of this approval "
                            "was already reported", "approval" if asked is None else "use")
    update = {"run_outcome": outcome, "run_detail": detail, "run_at": ch.now}
    if give_back:
        update["approval_used_at"] = None
    return Reported(ask.model_copy(update=update), use, give_back)
