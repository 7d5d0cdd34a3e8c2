"""core.domain.refs read directly, and what rules.py still re-exports of refs, words and hashing."""

from __future__ import annotations

from core.domain import identity, refs, rules, vocabulary


def test_a_ref_made_is_a_ref_read_back() -> None:
    for seq in (1, 7, 1043, 10**7 - 1, 10**7, 36**6 - 1):
        made = refs.ref_for(seq, vocabulary.QUESTION)
        parsed = refs.parse_ref(made)
        assert parsed is not None and parsed.kind == vocabulary.QUESTION, made
        assert refs.RefCandidate(seq, False) in parsed.candidates, made


def test_decimal_refs_until_the_bound_then_a_zero_and_base_36() -> None:
    assert refs.ref_for(7, vocabulary.APPROVAL) == "a7"
    assert refs.ref_for(10**7, vocabulary.QUESTION).startswith("q0")
    assert refs.ref_for(10, vocabulary.QUESTION, base36=True) == "qa"


def test_what_is_not_a_ref_is_none() -> None:
    for text in ("", "x7", "q", "q-1", "q123456789"):
        assert refs.parse_ref(text) is None, text


def test_rules_still_names_what_moved_out_of_it() -> None:
    assert rules.REASONS is vocabulary.REASONS and rules.OPEN == vocabulary.OPEN
    assert rules.ref_for is refs.ref_for and rules.parse_ref is refs.parse_ref
    assert rules.digest is identity.digest and rules.canonical_json is identity.canonical_json


def test_a_body_digest_ignores_key_order() -> None:
    assert identity.digest({"a": 1, "b": [2]}) == identity.digest({"b": [2], "a": 1})
    assert identity.canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
