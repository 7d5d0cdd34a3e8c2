"""Where an answer is decided (core/domain/answering.py), as pure functions on asks built in
memory: who may answer, open or late, whether it fits, the approval policy (a quorum counts
distinct approvers, no self-approval, failing closed when the author is unknown)."""

from __future__ import annotations

from core.domain import answering, rules
from core.domain.answering import Attempt
from core.domain.ask import is_approval, is_external, is_question, is_start
from core.domain.people import People
from core.domain.policy import START
from core.domain.responders import OPERATOR, Responder
from tests import builders

NOW = builders.CREATED_AT + 60
ALICE = Responder("slack", "U0123ABCD")
OCTO = Responder("github", "octocat")
STRANGER = Responder("slack", "U0999ZZZZ")


def test_a_responder_s_fitting_answer_is_taken() -> None:
    verdict = answering.judge(builders.question(options=["yes", "no"]), Attempt(ALICE), "yes", NOW)
    assert verdict == answering.Taken("yes", 1, None)


def test_someone_not_asked_is_refused_whatever_they_answer() -> None:
    verdict = answering.judge(builders.question(options=["yes", "no"]), Attempt(STRANGER), "yes", NOW)
    assert verdict == answering.Refused(answering.NOT_A_RESPONDER)


def test_a_person_the_surface_cannot_vouch_for_is_refused_even_if_listed() -> None:
    verdict = answering.judge(builders.question(options=["yes", "no"]),
                              Attempt(ALICE, member=False), "yes", NOW)
    assert verdict == answering.Refused(answering.NOT_A_RESPONDER)


def test_an_answer_just_after_the_winner_is_late_and_later_is_refused() -> None:
    closed = builders.question(options=["yes", "no"], status=rules.ANSWERED, closed_at=NOW)
    late = answering.judge(closed, Attempt(ALICE), "no", NOW + 1)
    refused = answering.judge(closed, Attempt(ALICE), "no", NOW + answering.LATE_WINDOW_S + 1)
    assert (late.event, refused.event) == (answering.LATE, answering.REFUSED)  # type: ignore[union-attr]


def test_a_sensitive_ask_refuses_a_public_answer() -> None:
    verdict = answering.judge(builders.question(sensitive=True), Attempt(ALICE, public=True),
                              "s3cret", NOW)
    assert verdict == answering.Refused(answering.SENSITIVE)


def test_an_answer_that_does_not_fit_names_what_did_not() -> None:
    verdict = answering.judge(builders.question(options=["yes", "no"]), Attempt(ALICE), "maybe", NOW)
    assert isinstance(verdict, answering.Refused) and verdict.reason == answering.INVALID_ANSWER
    assert verdict.misfit is not None


def test_an_approval_s_approve_has_the_approved_outcome() -> None:
    verdict = answering.judge(builders.approval(), Attempt(ALICE), "approve", NOW)
    assert isinstance(verdict, answering.Taken) and verdict.outcome == rules.APPROVED


def test_the_policy_weighs_approvals_only_under_a_quorum_or_a_self_check() -> None:
    plain, quorum = builders.approval(), builders.approval(approvals_needed=2)
    approve = answering.Taken("approve", 1, rules.APPROVED)
    refuse = answering.Taken("refuse", 2, rules.APPROVAL_REFUSED)
    assert not answering.policed(plain, approve)
    assert answering.policed(quorum, approve) and not answering.policed(quorum, refuse)
    assert answering.policed(builders.approval(self_check=True), approve)


def test_a_quorum_counts_each_approver_once() -> None:
    row = builders.approval(approvals_needed=2, approvers=[str(ALICE)])
    assert answering.not_countable(row, ALICE, NOW) == (answering.ALREADY_APPROVED,
                                                         answering.REFUSED)
    assert answering.not_countable(row, OCTO, NOW) == (None, "")


def test_an_approval_of_a_closed_ask_does_not_count() -> None:
    row = builders.approval(status=rules.EXPIRED, closed_at=NOW)
    assert answering.not_countable(row, ALICE, NOW)[0] == rules.closed_reason(rules.EXPIRED)


def test_the_author_cannot_approve_and_an_unknown_author_fails_closed() -> None:
    assert answering.self_approval(OCTO, "github:OctoCat") == answering.SELF_APPROVAL
    assert answering.self_approval(ALICE, "github:octocat") is None
    assert answering.self_approval(ALICE, None) is None  # a work nobody opened
    assert answering.self_approval(ALICE, None, known=False) == answering.AUTHOR_UNKNOWN


def test_the_kinds_of_ask_are_read_from_the_typed_view() -> None:
    question = builders.question()
    external = builders.question(verifier="docsign")
    start = builders.approval(operation=START)
    assert is_question(question) and not is_external(question) and not is_approval(question)
    assert is_external(external)
    assert is_approval(start) and is_start(start) and not is_start(builders.approval())


def test_the_operator_may_answer_where_listed() -> None:
    verdict = answering.judge(builders.question(options=["yes", "no"]), Attempt(OPERATOR), "no", NOW)
    assert verdict == answering.Taken("no", 2, None)


# -- people: one human counts once, and is known by every identity ----------------------------

ADA_SLACK, ADA_GITHUB = Responder("slack", "U0ADA0001"), Responder("github", "ada-l")
ADA_EMAIL = Responder.parse("email:Ada@Example.com")
PEOPLE = People.of([("ada", [ADA_SLACK, ADA_GITHUB, ADA_EMAIL]), ("bob", [ALICE])])


def test_person_in_responders_admits_each_of_her_identities_and_nobody_else() -> None:
    ask = builders.question(options=["yes", "no"], responders=["person:ada"])
    for ada in (ADA_SLACK, ADA_GITHUB, Responder.parse("email:ada@example.com")):
        assert isinstance(answering.judge(ask, Attempt(ada), "yes", NOW, people=PEOPLE), answering.Taken)
    refused = answering.judge(ask, Attempt(OCTO), "yes", NOW, people=PEOPLE)
    assert refused == answering.Refused(answering.NOT_A_RESPONDER)
    # Without the directory, `person:ada` admits nobody (never a guess).
    alone = answering.judge(ask, Attempt(ADA_SLACK), "yes", NOW)
    assert alone == answering.Refused(answering.NOT_A_RESPONDER)


def test_a_quorum_counts_people_not_identities() -> None:
    row = builders.approval(approvals_needed=2, approvers=[str(ADA_SLACK)])
    assert answering.not_countable(row, ADA_GITHUB, NOW, PEOPLE)[0] == answering.ALREADY_APPROVED
    assert answering.not_countable(row, Responder("github", "ADA-L"), NOW, PEOPLE)[0] == (
        answering.ALREADY_APPROVED)
    assert answering.not_countable(row, OCTO, NOW, PEOPLE) == (None, "")


def test_the_author_is_known_by_every_identity_of_their_person() -> None:
    for ada in (ADA_SLACK, ADA_EMAIL, ADA_GITHUB):
        assert answering.self_approval(ada, "github:Ada-L", people=PEOPLE) == answering.SELF_APPROVAL
    assert answering.self_approval(ALICE, "github:ada-l", people=PEOPLE) is None


def test_step_up_counts_an_approval_only_from_a_fresh_inbox_sign_in() -> None:
    ask = builders.approval(sign_in_within=900.0)
    approve = answering.judge(ask, Attempt(ALICE), "approve", NOW)  # Slack, the API: no inbox session
    assert approve == answering.Refused(answering.SIGN_IN_REQUIRED)
    stale = answering.judge(ask, Attempt(ALICE, signed_in_at=NOW - 901), "approve", NOW)
    assert stale == answering.Refused(answering.SIGN_IN_REQUIRED)
    fresh = answering.judge(ask, Attempt(ALICE, signed_in_at=NOW - 60), "approve", NOW)
    assert isinstance(fresh, answering.Taken) and fresh.outcome == rules.APPROVED
    refuse = answering.judge(ask, Attempt(ALICE), "refuse", NOW)  # a refusal counts from anywhere
    assert isinstance(refuse, answering.Taken) and refuse.outcome == rules.APPROVAL_REFUSED
