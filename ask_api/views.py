"""How an ask looks in the API: the agent's view, and the operator's, which adds who and how."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.app.ports import AskRow, CallDecision
from core.domain import external, formats, identity, refs, vocabulary
from core.domain.ask import is_approval, is_start
from core.domain.policy import START_REFUSED

# Today's API shows an approval's input as text in `context`, cut here; `input` has it whole.
INPUT_SHOWN_MAX = 2900


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _answer(ask: AskRow, operator: bool) -> dict[str, Any] | None:
    if ask.status != vocabulary.ANSWERED:
        return None
    if ask.erased:
        return {"value": None, "option": None, "note": None, "erased": True}
    if ask.sensitive and operator:
        # Nobody but the asking agent sees a sensitive answer, the operator included.
        return {"value": None, "option": None, "note": None, "hidden": True}
    value = formats.value_of(ask, ask.answer_value)
    answer = {"value": value, "option": ask.answer_option, "note": ask.answer_note}
    if formats.format_of(ask) == formats.MULTI:
        answer["options"] = formats.picked(ask, value)
    return answer


def question(ask: AskRow) -> str:
    """An approval stores the operation; the API words it as a question."""
    if is_start(ask):
        title = (ask.call_input or {}).get("title") if isinstance(ask.call_input, dict) else None
        where = identity.work_key(ask.work) or "this work"
        return f"May {ask.agent} start on {where}?" + (f" ({title})" if title else "")
    if is_approval(ask) and ask.operation:
        return f"Approve {ask.operation}?"
    return ask.question


def context(ask: AskRow) -> str | None:
    if is_approval(ask) and ask.operation:
        shown = identity.input_shown(ask.call_input, INPUT_SHOWN_MAX)
        return f"Input: {shown.text}" + ("" if shown.whole else "…")
    return ask.context


def ask_view(ask: AskRow) -> dict[str, Any]:
    """What the agent that asked sees: never where it went or who answered."""
    view: dict[str, Any] = {
        "id": ask.id,
        "ref": refs.ref(ask),
        "kind": ask.kind,
        "status": ask.status,
        "question": question(ask),
        "options": ask.options,
        "format": formats.format_of(ask),
        "context": context(ask),
        "deadline": iso(ask.deadline),
        "work": ask.work,
        "created_at": iso(ask.created_at),
        "sensitive": ask.sensitive,
        "answer": _answer(ask, operator=False),
    }
    if ask.danger:  # destructive: surfaces ask to confirm its affirmative answer
        view["danger"] = True
    for key, value in (("schema", ask.form_schema), ("min", ask.pick_min), ("max", ask.pick_max),
                       ("media", ask.media), ("callback_url", ask.callback_url),
                       ("verifier", ask.verifier)):
        if value is not None:
            view[key] = value
    if is_approval(ask):
        view["operation"] = ask.operation
        view["input"] = ask.call_input
        if ask.status != vocabulary.OPEN:
            view["outcome"] = ask.outcome
            if ask.outcome == vocabulary.APPROVAL_REFUSED:
                view["by"] = ask.answered_by
        if ask.run_outcome is not None:
            view["run"] = {"outcome": ask.run_outcome, "detail": ask.run_detail,
                           "at": iso(ask.run_at)}
    return view


def operator_view(
    ask: AskRow, history: list[dict[str, Any]] | None, remembered_for: float | None = None
) -> dict[str, Any]:
    """The agent's view plus who and how; `remembered_for`: how long the gate remembers a
    refusal of this approval's call (shown as `remembered_until` once it is refused)."""
    view = ask_view(ask)
    view["answer"] = _answer(ask, operator=True)
    view.update(
        agent=ask.agent,
        responders=list(ask.responders),
        answered_by=ask.answered_by,
        surface=ask.answer_surface,
        closed_at=iso(ask.closed_at),
    )
    if is_approval(ask):
        # Each named as what it is, as every surface shows them (core.domain.identity).
        view["input_sha256"] = identity.input_sha256(ask.call_input)
        view["call_sha256"] = ask.call_hash
    if ask.escalate_responders:
        view["escalation"] = {
            "responders": list(ask.escalate_responders),
            "at": iso(ask.escalate_at),
            "escalated_at": iso(ask.escalated_at),
        }
    if (ask.approvals_needed or 1) > 1:
        view["approvals"] = {"needed": ask.approvals_needed, "approvers": list(ask.approvers or [])}
    if ask.self_check:
        view["prevent_self_approval"] = True
    if (state := external.ticket_state(ask)) is not None:
        view["ticket"] = state  # never the ticket itself
    if ask.remind_at is not None:
        view["remind_at"], view["reminded_at"] = iso(ask.remind_at), iso(ask.reminded_at)
    if remembered_for and ask.outcome == vocabulary.APPROVAL_REFUSED and ask.closed_at is not None:
        view["remembered_until"] = iso(ask.closed_at + remembered_for)
    if history is not None:
        view["history"] = [_entry(entry) for entry in history]
    return view


def _entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A history entry with its times (`at`, an escalation's `until`) in ISO 8601."""
    out = dict(entry)
    for key in ("at", "until"):
        if isinstance(out.get(key), int | float):
            out[key] = iso(out[key])
    return out


def decision_body(
    decision: CallDecision, remembered_for: float | None = None
) -> tuple[dict[str, Any], int]:
    """A gate's decision on a call or a start, as the contract words it: the body and its
    HTTP status (POST /v1/calls and /v1/starts send it; MCP's request_approval returns the
    body itself)."""
    if decision.decision == "allow":
        out: dict[str, Any] = {"decision": "allow"}
        if decision.approval:
            out["approval"] = decision.approval
        if decision.receipt:
            out["receipt"] = decision.receipt
        return out, 200
    if decision.decision == "pending" and decision.ask is not None:
        return {"decision": "pending", "ask": ask_view(decision.ask)}, 202
    earlier = decision.ask
    if decision.repeat and earlier is not None:
        # `remembered_for`: how long its gate remembers a refusal, so the message says until when.
        until = (iso(earlier.closed_at + remembered_for)
                 if remembered_for and earlier.closed_at is not None else None)
        return {
            "decision": "refuse", "error": "approval_refused",
            "message": "this exact call was refused; it is not asked again until "
                       + (until or "the refusal is forgotten"),
            "by": earlier.answered_by, "note": earlier.answer_note, "repeat": True,
            "approval": earlier.id, **({"receipt": decision.receipt} if decision.receipt else {}),
        }, 403
    if decision.error is not None and earlier is not None:
        refused = decision.error == START_REFUSED
        said = "this start was refused" if refused else "nobody approved this start in time"
        return {
            "decision": "refuse", "error": decision.error,
            "message": f"{said}: the work is cancelled for this agent",
            "by": earlier.answered_by if refused else None,
            "note": earlier.answer_note, "approval": earlier.id,
        }, 403
    return {
        "decision": "refuse", "error": "approval_unavailable",
        "message": "no responder of this gate can be reached for this work",
    }, 403
