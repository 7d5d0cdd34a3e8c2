"""core.domain.replay: an ask's row held to its history in the audit chain. Strict on what the
history recorded (an outcome, approvers, uses, what ran, a receipt's hash, an erasure), and
tolerant of what an earlier aye did not record (an `answered` entry without its outcome or
approvers, a use without its number, a row without the newer columns)."""

from __future__ import annotations

import hashlib
from typing import Any

from core.domain.replay import contradictions

AT = 1_800_000_000.0


def entries(*made: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"seq": n, "at": AT + n, "event": event, **detail}
            for n, (event, detail) in enumerate(made, start=1)]


def approval(**row: Any) -> dict[str, Any]:
    base = {"seq": 1, "id": "x", "kind": "approval", "status": "answered", "outcome": "approved",
            "answer_value": "approve", "answered_by": "operator:local", "answer_surface": "api",
            "approvers": ["operator:local"], "erased": False, "approval_used_at": None,
            "approval_uses": None, "run_outcome": None, "run_detail": None, "receipt": None}
    return {**base, **row}


BY = {"by": "operator:local", "surface": "api"}
APPROVED = ("answered", {**BY, "outcome": "approved", "approvers": ["operator:local"]})


def test_a_row_that_matches_its_history_holds() -> None:
    receipt = "eyJh.eyJi.c2ln"
    history = entries(("created", {}), ("answered", {
        **BY, "outcome": "approved", "approvers": ["operator:local"],
        "receipt_sha256": hashlib.sha256(receipt.encode()).hexdigest()}),
        ("used", {"use": 1}), ("outcome", {"outcome": "not_run", "detail": None,
                                           "usable_again": True, "use": 1}),
        ("used", {"use": 2}), ("outcome", {"outcome": "ran", "detail": "done",
                                           "usable_again": False, "use": 2}))
    row = approval(receipt=receipt, approval_uses=2, approval_used_at=AT + 5,
                   run_outcome="ran", run_detail="done")
    assert contradictions(row, history) == []


def test_a_quorum_open_holds_its_approvals_so_far_and_closes_with_them_all() -> None:
    two = ["slack:U1", "github:bob"]
    partial = entries(("created", {}), ("approved", {"by": "slack:U1", "count": 1, "needed": 2}))
    open_row = approval(status="open", outcome=None, answer_value=None, answered_by=None,
                        answer_surface=None, approvers=["slack:U1"])
    assert contradictions(open_row, partial) == []
    assert contradictions({**open_row, "approvers": two}, partial) == [
        "its row says approvers slack:U1, github:bob, its history slack:U1"]
    closed = [*partial, {"seq": 3, "at": AT + 3, "event": "answered", "by": "github:bob",
                         "surface": "github", "outcome": "approved", "approvers": two}]
    assert contradictions(approval(answered_by="github:bob", answer_surface="github",
                                   approvers=two), closed) == []


def test_what_an_earlier_aye_did_not_record_is_not_held_against_the_row() -> None:
    legacy = entries(("created", {}), ("answered", BY), ("used", {"agent": "default"}),
                     ("outcome", {"outcome": "not_run", "usable_again": True}),
                     ("used", {"agent": "default"}))
    row = approval(approval_used_at=AT + 5, run_outcome="not_run")
    assert contradictions(row, legacy) == []
    newer_columns_absent = {k: v for k, v in row.items() if k not in ("receipt", "approval_uses")}
    assert contradictions(newer_columns_absent, legacy) == []


def test_each_edit_outside_aye_is_named() -> None:
    refused = entries(("created", {}), ("answered", {**BY, "outcome": "approval_refused"}))
    assert contradictions(approval(approvers=None), refused) == [
        "its row says outcome approved, its history approval_refused"]
    granted = entries(("created", {}), APPROVED, ("used", {"use": 1}))
    in_use = approval(approval_uses=1, approval_used_at=AT + 3)
    assert contradictions(in_use, granted) == []
    assert contradictions({**in_use, "approval_used_at": None}, granted) == [
        "its row says its grant is free, its history in use"]
    assert contradictions({**in_use, "approval_uses": None, "approval_used_at": None},
                          granted)[0] == "its row says uses none, its history 1"
    assert contradictions({**in_use, "run_outcome": "ran"}, granted) == [
        "its row says what ran ran, its history none"]
    sealed = entries(("created", {}), ("answered", {**APPROVED[1], "receipt_sha256": "0" * 64}))
    assert contradictions(approval(receipt=None), sealed) == [
        "its receipt is not the one its decision recorded"]
    question = {"seq": 2, "id": "q", "kind": "question", "status": "expired", "outcome": None,
                "answer_value": "planted", "answered_by": None, "answer_surface": None,
                "approvers": None, "erased": False}
    assert contradictions(question, entries(("created", {}), ("expired", {}))) == [
        "its row holds an answer its history never recorded"]
    assert contradictions({**question, "status": "answered"},
                          entries(("created", {}), ("expired", {})))[0] == (
        "its row says status answered, its history expired")
    assert contradictions(question, []) == ["it has no history in the chain"]
