"""The inbox's history in words (handlers/web/history.py): every kind of entry aye writes is a
sentence, and a kind added later is still worded, never showing `None`, `False` or a raw key."""

from __future__ import annotations

from typing import Any

from handlers.web.history import entries

AT = 1_780_000_000.0
SHA = "ab" * 32


def said(event: str, approval: bool = False, **fields: Any) -> tuple[str, list[tuple[str, str]]]:
    [entry] = entries([{"at": AT, "event": event, **fields}], AT, approval)
    return entry.words, entry.details


def test_every_kind_aye_writes_is_a_sentence() -> None:
    cases: list[tuple[tuple[str, bool, dict[str, Any]], str]] = [
        (("created", False, {"agent": "bot"}), "Asked by agent bot"),
        (("created", True, {"agent": "bot", "operation": "human.start"}), "Asked by agent bot to start"),
        (("posted", False, {"surface": "slack", "where": "C1/17.1"}), "Shown on Slack: C1/17.1"),
        (("undelivered", False, {"surface": "email", "action": "post", "why": "550 no such user"}),
         "Could not be shown on email (posting it): 550 no such user"),
        (("answered", False, {"by": "slack:U1", "surface": "slack"}), "Answered by Slack U1 on Slack"),
        (("answered", True, {"by": "github:bob", "surface": "github", "outcome": "approval_refused"}),
         "Refused by GitHub @bob on GitHub"),
        (("answered", True, {"by": "operator:local", "surface": "web", "outcome": "approved",
                             "approvers": ["slack:U1", "operator:local"]}),
         "Approved by the operator on the web inbox, the last of 2 approvals: Slack U1, the operator"),
        (("approved", True, {"by": "slack:U1", "surface": "slack", "count": 1, "needed": 2}),
         "Approved by Slack U1 on Slack: 1 of 2 approvals"),
        (("refused", False, {"by": "slack:U2", "surface": "slack", "why": "not_a_responder"}),
         "Refused answer from Slack U2 on Slack: not one of the people this is for"),
        (("refused", False, {"by": "operator:local", "surface": "web", "why": "invalid_answer",
                             "field": "answer.count", "message": "Nodes must be at most 10"}),
         "Refused answer from the operator on the web inbox: Nodes must be at most 10"),
        (("late", False, {"by": "email:a@b.c", "surface": "email", "why": "answered"}),
         "Late answer from email a@b.c on email, not taken: it was already answered"),
        (("withdrawn", False, {"by": "agent:bot"}), "Withdrawn by agent bot"),
        (("reminded", False, {}), "Reminded"),
        (("expired", False, {}), "Expired: nobody answered in time"),
        (("expired", True, {}), "Timed out: nobody approved it in time"),
        (("read", False, {"erased": True}), "Read by the agent; the sensitive answer was erased"),
        (("read", False, {}), "Read by the agent"),
        (("used", True, {"agent": "bot", "use": 2}), "Used by agent bot (use 2): its call went through"),
        (("outcome", True, {"by": "agent:bot", "outcome": "ran", "detail": None,
                            "usable_again": False}), "Outcome reported by agent bot: ran"),
        (("outcome", True, {"by": "agent:bot", "outcome": "not_run", "detail": "disk full",
                            "usable_again": True, "use": 1}),
         "Outcome of use 1 reported by agent bot: not run: disk full; the approval can be used "
         "once more"),
    ]
    for (event, approval, fields), words in cases:
        assert said(event, approval, **fields) == (words, []), event


def test_an_escalation_names_whom_and_until_when() -> None:
    words, _ = said("escalated", to=["operator:local", "github:bob"], until=AT + 3600)
    assert words == "Escalated to the operator, GitHub @bob, until 2026-05-28 21:26 UTC"


def test_what_was_given_and_the_hashes_are_named_apart_from_their_values() -> None:
    _, details = said("refused", by="operator:local", why="invalid_answer", answer="\u202eevil")
    assert details == [("Given", "[U+202E]evil")]
    _, details = said("answered", True, by="operator:local", surface="web", outcome="approved",
                      receipt_sha256=SHA)
    assert details == [("receipt_sha256", SHA)]
    _, details = said("created", True, agent="bot", operation="deploy.prod",
                      input_sha256=SHA, call_sha256=SHA)
    assert details == [("input_sha256", SHA), ("call_sha256", SHA)]


def test_a_kind_added_later_is_worded_without_raw_values() -> None:
    words, details = said("grant_used", by="slack:U1", surface="slack", usable_again=False,
                          note=None, remaining_uses=3, standing=True, until=AT, why="")
    assert words == "Grant used by Slack U1 on Slack"
    assert details == [("Remaining uses", "3"), ("Standing", "yes"),
                       ("Until", "2026-05-28 20:26 UTC")]
    shown = words + repr(details)
    for raw in ("None", "False", "usable_again", "grant_used", "_"):
        assert raw not in shown
