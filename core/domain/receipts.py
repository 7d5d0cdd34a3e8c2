"""What a receipt says: the claims aye signs for a decided approval (core.app.receipts signs
them, once, as the approval is decided, and keeps them). A receipt is a function of the ask and
its history alone; what runs afterwards (an outcome) is not in it, but in the audit trail.

Claims: `iss`, `sub` (the approval's id), `ref`, `agent`, `operation`, `input_sha256`,
`call_sha256`, `work`, `decision` (approved, approval_refused, approval_timed_out), `approvers`
(each `{"by", "person", "surface", "at"}`; for a refusal, who refused), `iat` (when it was
decided) and, for an approval, `exp` (until when its grant can be used)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from core.domain import identity, refs, vocabulary
from core.domain.ask import Ask, is_approval
from core.domain.people import People
from core.domain.responders import Responder

TYP = "aye-receipt+jwt"
ALG = "EdDSA"
DECISIONS = (vocabulary.APPROVED, vocabulary.APPROVAL_REFUSED, vocabulary.APPROVAL_TIMED_OUT)


def signable(ask: Ask) -> bool:
    """A decided approval of a call (a start's approval has no call, and no receipt)."""
    return (is_approval(ask) and ask.operation is not None and ask.closed_at is not None
            and ask.outcome in DECISIONS)


def needs_history(ask: Ask) -> bool:
    """Whether the approvers need the history: a quorum's earlier approvals are only there."""
    return ask.outcome == vocabulary.APPROVED and len(ask.approvers or []) > 1


def approvers(ask: Ask, history: Sequence[Mapping[str, Any]], people: People) -> list[dict[str, Any]]:
    """Who decided: each approver of an approval (in the order they approved), the one who
    refused a refusal, nobody for a time-out."""
    if ask.outcome == vocabulary.APPROVAL_TIMED_OUT or not ask.answered_by:
        return []
    if ask.outcome == vocabulary.APPROVED and needs_history(ask):
        counted = [e for e in history if e.get("event") in ("approved", "answered") and e.get("by")]
        seen: dict[str, dict[str, Any]] = {}
        for entry in counted:
            seen.setdefault(str(entry["by"]), _approver(
                str(entry["by"]), entry.get("surface"), float(entry["at"]), people))
        # The approver who completed the quorum is signed for as the approval is decided,
        # before their own entry is written: the closed row says who, where and when.
        seen.setdefault(ask.answered_by, _approver(
            ask.answered_by, ask.answer_surface, ask.closed_at or 0.0, people))
        return [seen[by] for by in ask.approvers or [] if by in seen]
    return [_approver(ask.answered_by, ask.answer_surface, ask.closed_at or 0.0, people)]


def _approver(by: str, surface: Any, at: float, people: People) -> dict[str, Any]:
    try:
        person = people.person_of(Responder.parse(by))
    except ValueError:
        person = None
    return {"by": by, "person": person, "surface": surface, "at": iso(at)}


def claims(
    ask: Ask, decided_by: list[dict[str, Any]], issuer: str, grant_s: float | None
) -> dict[str, Any]:
    """The receipt's payload. `grant_s`: how long after the decision its grant can be used
    (the gate's timeout), for `exp`; None when no gate matches the operation any more."""
    assert ask.operation is not None and ask.closed_at is not None
    call = identity.call(ask.agent, ask.operation, ask.call_input, ask.work)
    out: dict[str, Any] = {
        "iss": issuer, "sub": ask.id, "ref": refs.ref(ask), "agent": ask.agent,
        "operation": call.operation, "input_sha256": call.input_sha256,
        "call_sha256": call.call_sha256, "work": written_work(ask.work),
        "decision": ask.outcome, "approvers": decided_by, "iat": int(ask.closed_at),
    }
    if ask.outcome == vocabulary.APPROVED:
        out["exp"] = int(ask.closed_at + (grant_s or 0.0))
    return out


def written_work(work: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The work as the contract writes it out: a GitHub repo lowercased and its type given
    (`issue` when absent); a Slack thread as given."""
    if not work:
        return None
    github = work.get("github")
    if isinstance(github, Mapping):
        out = dict(github)
        out["repo"] = str(out.get("repo", "")).lower()
        out["type"] = out.get("type") or "issue"
        return {"github": out}
    return {name: dict(value) if isinstance(value, Mapping) else value
            for name, value in work.items()}


def iso(ts: float) -> str:
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
