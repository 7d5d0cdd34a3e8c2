"""The GitHub surface's pure parts: the `/answer` grammar, choosing the ask, payload facts,
comment texts, fault handling and token expiry. No network, no store."""

from __future__ import annotations

from typing import Any

import gidgethub
import pytest
from gidgethub import sansio

from core.domain import rules
from core.domain.answering import Ambiguous, Nothing, Target, choose
from handlers.github.auth import REFRESH_BEFORE_S, token_from_reply
from handlers.github.facts import MalformedPayload, comment_said, review_said
from handlers.github.faults import disposition
from handlers.github.messages import (
    closed_comment,
    github_logins,
    has_github_responder,
    marker,
    question_comment,
    who_answered,
)
from handlers.github.parsing import Command, parse_command, reaction_for
from store.models import AskRow
from tests import builders
from tests.fake_github import issue_comment_event, pull_request_review_event

# -- the /answer grammar -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "text", "ref", "ref_answer", "note"),
    [
        ("/answer 2", "2", None, None, None),
        ("/answer yes please", "yes please", None, None, None),
        ("/answer q7 yes", "q7 yes", "q7", "yes", None),
        ("/answer A1Z refuse", "A1Z refuse", "a1z", "refuse", None),
        ("/answer q7", "q7", None, None, None),  # a lone ref-like word is the answer itself
        ("/ANSWER  yes ", "yes", None, None, None),
        ("/answer\tyes", "yes", None, None, None),
        ("/answer yes\r\nBecause.\r\n", "yes", None, None, "Because."),
        ("\n\n/answer 1\nline one\n\nline two\n", "1", None, None, "line one\n\nline two"),
        ("/answer 1\n\n  \n", "1", None, None, None),
        ("/answer", "", None, None, None),
        ("/answer x7 go", "x7 go", None, None, None),  # x is no ref prefix
    ],
)
def test_answer_commands(
    body: str, text: str, ref: str | None, ref_answer: str | None, note: str | None
) -> None:
    assert parse_command(body) == Command(text=text, note=note, ref=ref, ref_answer=ref_answer)


@pytest.mark.parametrize(
    "body",
    [None, "", "LGTM", "/answered yes", "answer yes", "Looks fine\n/answer yes", "`/answer yes`"],
)
def test_not_commands(body: str | None) -> None:
    assert parse_command(body) is None


def test_reactions() -> None:
    assert (reaction_for(True), reaction_for(False)) == ("+1", "confused")


# -- choosing the ask ------------------------------------------------------------------------


ON_ISSUE: dict[str, Any] = {
    "question": "Deploy?", "work": {"github": {"repo": "owner/name", "number": 42}},
    "responders": ["github:octocat", "operator:local"],
}


def ask_row(seq: int, **more: Any) -> AskRow:
    """A question on owner/name#42 (tests/builders.py), its id following `seq`."""
    return builders.question(**{"seq": seq, **ON_ISSUE, **more})


def test_one_open_ask_takes_the_whole_text() -> None:
    one = ask_row(7)
    cmd = parse_command("/answer q9 is fine")
    assert cmd is not None
    assert choose(cmd, [one], None) == Target(one, "q9 is fine")


def test_a_ref_naming_an_ask_of_the_work_wins() -> None:
    open_ask, closed = ask_row(7), ask_row(3, status=rules.ANSWERED)
    cmd = parse_command("/answer q3 yes")
    assert cmd is not None
    assert choose(cmd, [open_ask], closed) == Target(closed, "yes")
    assert choose(cmd, [], closed) == Target(closed, "yes")


def test_a_ref_naming_another_issues_ask_is_refused_not_taken_as_text() -> None:
    here = ask_row(7, options=None)
    cmd = parse_command("/answer q3 yes")
    assert cmd is not None
    assert choose(cmd, [here], None, elsewhere=True) == Nothing()
    assert choose(cmd, [here], None, elsewhere=False) == Target(here, "q3 yes")


def test_several_open_without_a_ref_is_ambiguous_and_none_is_nothing() -> None:
    a, b = ask_row(1), ask_row(2)
    cmd = parse_command("/answer yes")
    assert cmd is not None
    assert choose(cmd, [a, b], None) == Ambiguous([a, b])
    assert choose(cmd, [], None) == Nothing()


# -- payloads ----------------------------------------------------------------------------


def test_comment_facts() -> None:
    payload = issue_comment_event(body="/answer yes", login="octocat", repo="Octo/Widgets",
                                  number=5, comment_id=77, installation_id=9)
    said = comment_said(payload)
    assert (said.repo, said.number, said.login, said.by_bot) == ("Octo/Widgets", 5, "octocat", False)
    assert (said.comment_id, said.installation_id, said.body) == (77, 9, "/answer yes")
    assert said.work_key == rules.work_key({"github": {"repo": "octo/widgets", "number": 5}})


def test_review_and_bot_facts() -> None:
    review = review_said(pull_request_review_event(body=None, login="x", number=8,
                                                   installation_id=None))
    assert (review.number, review.body, review.comment_id, review.installation_id) == (
        8, None, None, None
    )
    bot = comment_said(issue_comment_event(body="/answer 1", login="ci", sender_type="Bot"))
    assert bot.by_bot


@pytest.mark.parametrize("broken", ["comment", "issue", "repository", "sender"])
def test_a_payload_missing_a_part_is_malformed(broken: str) -> None:
    payload = issue_comment_event(body="/answer yes", login="octocat")
    del payload[broken]
    with pytest.raises(MalformedPayload):
        comment_said(payload)


def test_a_non_numeric_issue_number_is_malformed() -> None:
    payload = issue_comment_event(body="/answer yes", login="octocat")
    payload["issue"]["number"] = "42"
    with pytest.raises(MalformedPayload):
        comment_said(payload)


# -- what aye writes -------------------------------------------------------------------------


def test_the_question_comment_says_how_to_answer() -> None:
    ask = ask_row(7, context="Staging is green.")
    text = question_comment(ask, "q7")
    assert text.splitlines()[0] == "**Question** from an agent (ref `q7`)"
    assert "> Deploy?" in text and "> Staging is green." in text
    assert "1. yes\n2. no" in text
    assert "`/answer 1` or `/answer yes`" in text and "`/answer q7 …`" in text
    assert "@octocat" in text and "operator" not in text
    assert text.endswith(marker(ask.id))


def test_free_text_approval_and_sensitive_comments() -> None:
    free = question_comment(ask_row(1, options=None, responders=["github"]), "q1")
    assert "`/answer <your answer>`" in free and "Anyone on GitHub" in free
    approval = question_comment(
        ask_row(2, kind=rules.APPROVAL, options=["approve", "refuse"]), "a2"
    )
    assert approval.startswith("**Approval needed**") and "`/answer approve`" in approval
    sensitive = question_comment(ask_row(3, sensitive=True), "q3")
    assert "cannot be given in a public comment" in sensitive and "/answer 1" not in sensitive


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"status": "answered", "answer_value": "yes", "answered_by": "github:octocat"},
         "answered by @octocat: **yes**"),
        ({"status": "answered", "answer_value": "s3cr3t", "answered_by": "slack:U123",
          "sensitive": True}, "answered by someone in Slack."),
        ({"status": "answered", "answer_value": "approve", "answered_by": "operator:local",
          "kind": rules.APPROVAL, "outcome": rules.APPROVED}, "approved by the operator."),
        ({"status": "expired"}, "expired with no answer."),
        ({"status": "withdrawn"}, "withdrawn."),
    ],
)
def test_closed_comments(changes: dict[str, Any], line: str) -> None:
    text = closed_comment(ask_row(7, **changes), "q7")
    assert line in text.splitlines()[0]
    assert "s3cr3t" not in text and text.endswith(marker(f"{7:032x}"))


def test_who_may_answer_on_github() -> None:
    assert github_logins(["github:a", "slack:U123", "operator:local"]) == ["a"]
    assert github_logins(["github:a", "github"]) is None
    assert not has_github_responder(ask_row(1, responders=["slack:U123"]))
    assert has_github_responder(ask_row(1, responders=["slack:U123"],
                                        escalate_responders=["github:b"]))
    assert who_answered(None) == "someone"


# -- faults and tokens -----------------------------------------------------------------------


def bad(status: int, headers: dict[str, str] | None = None) -> gidgethub.BadRequest:
    import http

    return gidgethub.BadRequest(http.HTTPStatus(status), headers=headers or {})


def test_dispositions() -> None:
    import http

    now = 1000.0
    assert disposition(gidgethub.GitHubBroken(http.HTTPStatus(502)), now).retry
    assert disposition(bad(403, {"retry-after": "30"}), now).wait == 30.0
    assert disposition(bad(429, {"retry-after": "2"}), now).wait == 2.0
    assert disposition(bad(429), now).wait == 60.0
    assert disposition(bad(401), now).reauth
    for permanent in (404, 410, 422, 403):
        assert disposition(bad(permanent), now).give_up
    limit = sansio.RateLimit(limit=5000, remaining=0, reset_epoch=now + 90)
    exhausted = gidgethub.RateLimitExceeded(limit)
    assert disposition(exhausted, now).wait == 90.0


def test_tokens_are_renewed_before_they_expire() -> None:
    now = 1_700_000_000.0
    reply = {"token": "ghs_x", "expires_at": "2023-11-14T23:13:20Z"}  # now + 1h
    token = token_from_reply(reply, now)
    assert token.expires_at == now + 3600
    assert token.refresh_at == now + 3600 - REFRESH_BEFORE_S
    short = token_from_reply({"token": "t", "expires_at": "2023-11-14T22:15:20Z"}, now)
    assert short.refresh_at == now  # used once, never cached
    with pytest.raises(ValueError):
        token_from_reply({"token": "t"}, now)
