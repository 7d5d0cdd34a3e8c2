"""decide_call: which rule decides a gated call, each one beating every rule after it."""

from __future__ import annotations

import pytest

from core.domain.gate_decision import (
    Allow,
    Ask,
    CallFacts,
    Decision,
    Refuse,
    Unreachable,
    Wait,
    decide_call,
)
from core.domain.policy import Gate

GATE = Gate.model_validate({"operations": ["deploy"], "timeout": "10m"})
FORGETS = Gate.model_validate({"operations": ["deploy"], "timeout": "10m",
                              "remember_refusal": "0s"})
# Every fact there could be, each a distinct ask.
ALL = CallFacts(reachable=True, refusal="refused", grant="granted", pending="pending")


def test_a_call_no_fact_decides_is_asked_for() -> None:
    assert decide_call(GATE, CallFacts[str]()) == Ask()


@pytest.mark.parametrize(
    ("facts", "decision"),
    [
        (CallFacts(reachable=False, refusal="refused", grant="granted", pending="pending"),
         Unreachable()),
        (ALL, Refuse("refused")),
        (CallFacts(grant="granted", pending="pending"), Allow("granted")),
        (CallFacts(pending="pending"), Wait("pending")),
    ],
    ids=["unreachable", "remembered refusal", "grant", "pending"],
)
def test_each_rule_beats_every_rule_after_it(facts: CallFacts[str], decision: Decision[str]) -> None:
    assert decide_call(GATE, facts) == decision


def test_an_unreachable_call_is_refused_even_with_nothing_else_known() -> None:
    assert decide_call(GATE, CallFacts[str](reachable=False)) == Unreachable()


def test_a_gate_that_remembers_no_refusal_lets_the_next_rule_decide() -> None:
    assert decide_call(FORGETS, ALL) == Allow("granted")
    assert decide_call(FORGETS, CallFacts(refusal="refused")) == Ask()


def test_a_refusal_beats_a_grant_and_a_pending_ask_alone() -> None:
    assert decide_call(GATE, CallFacts(refusal="refused", grant="granted")) == Refuse("refused")
    assert decide_call(GATE, CallFacts(refusal="refused", pending="pending")) == Refuse("refused")


def test_the_decision_hands_back_the_ask_it_names_untouched() -> None:
    granted = object()
    decided = decide_call(GATE, CallFacts(grant=granted))
    assert isinstance(decided, Allow) and decided.grant is granted
