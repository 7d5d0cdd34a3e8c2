"""core.domain.bounds.between: a field's bounds in words, shared by the CLI and GitHub's guide."""

from __future__ import annotations

from core.domain.bounds import between


def test_both_bounds_are_a_range_with_its_unit() -> None:
    assert between(1, 5, " characters") == "1 to 5 characters"
    assert between(1, 5, lead="from ") == "from 1 to 5"


def test_one_bound_says_at_least_or_at_most_without_the_lead() -> None:
    assert between(2, None, " picked", lead="from ") == "at least 2 picked"
    assert between(None, 9, lead="from ") == "at most 9"


def test_no_bound_is_no_words() -> None:
    assert between(None, None, " characters") == ""


def test_zero_is_a_bound() -> None:
    assert between(0, None) == "at least 0"


def test_each_bound_is_written_by_shown() -> None:
    assert between("a\nb", 3, shown=lambda v: repr(v)) == "'a\\nb' to 3"
