"""An ask as the domain sees it: a typed view of the stored row (store.models.AskRow has
exactly these columns), and what kind of ask it is. The domain decides on this view alone, so
it needs nothing of the store; surfaces ask `is_external(ask)` rather than testing a column.

The kinds of ask:
- a question (`is_question`): an agent asked people; answered in its format (core.domain.formats);
- an external ask (`is_external`): a question an outside system answers through its signed door;
- an approval (`is_approval`): a gated call, let through once when approved (core.domain.policy);
- a start (`is_start`): an approval of an agent's first act on a work (an issue, a thread).
"""

from __future__ import annotations

from typing import Any, Protocol, TypedDict

from core.domain import vocabulary
from core.domain.policy import START


class Ask(Protocol):
    """The columns of one ask (store.models.AskRow)."""

    seq: int | None
    id: str
    agent: str
    kind: str
    status: str
    question: str
    options: list[str] | None
    format: str | None
    form_schema: dict[str, Any] | None
    pick_min: int | None
    pick_max: int | None
    media: list[dict[str, Any]] | None
    context: str | None
    work: dict[str, Any] | None
    work_key: str | None
    responders: list[str]
    escalate_responders: list[str] | None
    escalate_at: float | None
    escalated_at: float | None
    deadline: float
    due_at: float | None
    created_at: float
    closed_at: float | None
    idem_key: str | None
    body_hash: str | None
    sensitive: bool
    answer_value: str | None
    answer_option: int | None
    answer_note: str | None
    answered_by: str | None
    answer_surface: str | None
    outcome: str | None
    read_at: float | None
    erased: bool
    operation: str | None
    call_input: Any
    call_hash: str | None
    approval_used_at: float | None
    approvals_needed: int | None
    approvers: list[str] | None
    self_check: bool | None
    remind_at: float | None
    reminded_at: float | None
    callback_url: str | None
    verifier: str | None
    ticket_hash: str | None
    delivery_digest: str | None
    sign_in_within: float | None
    run_outcome: str | None
    run_detail: str | None
    run_at: float | None
    approval_uses: int | None
    receipt: str | None
    danger: bool | None
    ref_base36: bool | None


class AskValues(TypedDict, total=False):
    """The columns a new ask is written with (core.app.asking, core.app.gating): each typed as
    the row has it; what is decided later (the answer, its reading, the clock's marks) is not
    among them, and the store fills those with their defaults."""

    id: str
    agent: str
    kind: str
    status: str
    question: str
    options: list[str] | None
    format: str | None
    form_schema: dict[str, Any] | None
    pick_min: int | None
    pick_max: int | None
    media: list[dict[str, Any]] | None
    context: str | None
    work: dict[str, Any] | None
    work_key: str | None
    responders: list[str]
    escalate_responders: list[str] | None
    escalate_at: float | None
    deadline: float
    due_at: float | None
    created_at: float
    idem_key: str | None
    body_hash: str | None
    sensitive: bool
    operation: str | None
    call_input: Any
    call_hash: str | None
    approvals_needed: int | None
    self_check: bool | None
    remind_at: float | None
    callback_url: str | None
    verifier: str | None
    ticket_hash: str | None
    sign_in_within: float | None
    danger: bool | None


def is_question(ask: Ask) -> bool:
    return ask.kind == vocabulary.QUESTION


def is_external(ask: Ask) -> bool:
    """A question an outside system answers through its door (core.app.external_asks)."""
    return ask.verifier is not None


def is_approval(ask: Ask) -> bool:
    return ask.kind == vocabulary.APPROVAL


def is_start(ask: Ask) -> bool:
    return ask.kind == vocabulary.APPROVAL and ask.operation == START


def said(ask: Ask, key: str) -> str | None:
    """What a start's agent gave as `key` (title, trigger), unescaped; None when blank."""
    given = ask.call_input if isinstance(ask.call_input, dict) else {}
    value = given.get(key)
    return value if isinstance(value, str) and value.strip() else None


def starter(ask: Ask) -> str:
    """The agent that would start (as the start recorded it), unescaped."""
    return said(ask, "agent") or ask.agent


def links(ask: Ask) -> list[str]:
    """The links a start's agent gave, unescaped."""
    given = ask.call_input if isinstance(ask.call_input, dict) else {}
    return [link for link in given.get("links") or [] if isinstance(link, str)]
