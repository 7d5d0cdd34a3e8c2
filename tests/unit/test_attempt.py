"""An answer attempt is one value (core.domain.answering.Attempt): who, through which surface,
what the surface vouches for, and the event it came from. `judge` reads it alone."""

from __future__ import annotations

import dataclasses

import pytest

from core.domain import answering, rules
from core.domain.answering import Attempt
from core.domain.responders import OPERATOR, Responder
from core.domain.types import FollowUp, Seen
from tests import builders

NOW = builders.CREATED_AT + 60
ALICE = Responder("slack", "U0123ABCD")


def test_a_bare_attempt_is_the_api_s_private_vouched_for_and_without_a_session() -> None:
    attempt = Attempt(OPERATOR)
    assert (attempt.surface, attempt.public, attempt.member) == ("api", False, True)
    assert (attempt.signed_in_at, attempt.follow_up, attempt.seen) == (None, None, None)


def test_an_attempt_cannot_be_changed_once_made() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Attempt(ALICE).surface = "github"  # type: ignore[misc]


def test_where_the_attempt_came_from_and_what_follows_it_do_not_change_the_verdict() -> None:
    ask = builders.question(options=["yes", "no"])
    plain = answering.judge(ask, Attempt(ALICE, "slack"), "yes", NOW)
    traced = Attempt(ALICE, "slack", follow_up=FollowUp("slack", "react", {"name": "eyes"}),
                     seen=Seen("action:1", "slack"))
    assert answering.judge(ask, traced, "yes", NOW) == plain == answering.Taken("yes", 1, None)


def test_each_part_the_surface_vouches_for_decides_as_before() -> None:
    secret = builders.question(sensitive=True, options=None)
    assert answering.judge(secret, Attempt(ALICE, "github", public=True), "x", NOW) == (
        answering.Refused(answering.SENSITIVE))
    assert isinstance(answering.judge(secret, Attempt(ALICE, "slack"), "x", NOW), answering.Taken)
    listed = builders.question(options=["yes", "no"])
    assert answering.judge(listed, Attempt(ALICE, "slack", member=False), "yes", NOW) == (
        answering.Refused(answering.NOT_A_RESPONDER))
    step_up = builders.approval(sign_in_within=900.0)
    fresh = answering.judge(step_up, Attempt(ALICE, "web", signed_in_at=NOW - 60), "approve", NOW)
    assert isinstance(fresh, answering.Taken) and fresh.outcome == rules.APPROVED
    assert answering.judge(step_up, Attempt(ALICE, "web"), "approve", NOW) == (
        answering.Refused(answering.SIGN_IN_REQUIRED))
