"""GitHub's recorded deliveries dispatched straight into the webhook's router, with a desk that
records what reaches it: which events and actions answer, and the facts read from each payload.
No HTTP, no signature, no store (tests/e2e/test_github_e2e.py covers those)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from gidgethub import sansio

from handlers.github.facts import MalformedPayload, Written
from handlers.github.webhook import router
from tests.fake_github import load_event

REPO = "Codertocat/Hello-World"  # the repository of the recorded deliveries
COMMENT_ID = 492700400
REVIEW_ID = 237895671
LOGIN = "Codertocat"
# When the recorded comment and review were written, as GitHub stamps them (whole seconds).
COMMENTED_AT = datetime(2019, 5, 15, 15, 20, 21, tzinfo=UTC).timestamp()
REVIEWED_AT = datetime(2019, 5, 15, 15, 20, 38, tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Handled:
    said: Written
    delivery_id: str
    react: bool


@dataclass
class RecordingDesk:
    """Stands in for handlers.github.answer_desk.AnswerDesk: records each call to `handle`."""

    calls: list[Handled] = field(default_factory=list)

    async def handle(self, said: Written, delivery_id: str, react: bool) -> None:
        self.calls.append(Handled(said, delivery_id, react))


@pytest.fixture
def desk() -> RecordingDesk:
    return RecordingDesk()


async def dispatch(desk: RecordingDesk, kind: str, data: dict[str, Any], delivery: str = "d-1") -> None:
    await router.dispatch(sansio.Event(data, event=kind, delivery_id=delivery), desk)


# -- comments -----------------------------------------------------------------------------------


async def test_a_new_comment_reaches_the_desk_with_its_facts_and_a_reaction(
    desk: RecordingDesk,
) -> None:
    data = load_event("issue_comment.created.with-installation")
    data["comment"]["body"] = "/answer yes\nafter lunch"

    await dispatch(desk, "issue_comment", data, delivery="delivery-1")

    assert desk.calls == [
        Handled(
            Written(repo=REPO, number=1, login=LOGIN, by_bot=False, body="/answer yes\nafter lunch",
                 installation_id=1, comment_id=COMMENT_ID, key=f"comment:{COMMENT_ID}",
                 at=COMMENTED_AT),
            "delivery-1",
            True,
        )
    ]


async def test_any_new_comment_reaches_the_desk_which_decides_if_it_is_an_answer(
    desk: RecordingDesk,
) -> None:
    # The recorded comment as it is: no /answer, no installation in the delivery.
    await dispatch(desk, "issue_comment", load_event("issue_comment.created.1"))

    [call] = desk.calls
    assert call.said.body == "You are totally right! I'll get this fixed right away."
    assert (call.said.installation_id, call.said.comment_id, call.react) == (None, COMMENT_ID, True)


async def test_a_comment_by_a_bot_is_marked_so(desk: RecordingDesk) -> None:
    data = load_event("issue_comment.created.with-installation")
    data["comment"]["body"] = "/answer yes"
    data["sender"]["type"] = "Bot"

    await dispatch(desk, "issue_comment", data)

    [call] = desk.calls
    assert call.said.by_bot


async def test_a_comment_on_a_pull_request_is_read_from_its_issue(desk: RecordingDesk) -> None:
    data = load_event("issue_comment.created.with-installation")
    data["issue"]["number"] = 8
    data["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/8"}

    await dispatch(desk, "issue_comment", data)

    [call] = desk.calls
    assert (call.said.number, call.said.work_key) == (8, "github:codertocat/hello-world#8")


@pytest.mark.parametrize("fixture", ["issue_comment.edited", "issue_comment.deleted"])
async def test_an_edited_or_deleted_comment_reaches_nothing(
    desk: RecordingDesk, fixture: str
) -> None:
    data = load_event(fixture)
    data["comment"]["body"] = "/answer yes"  # even one that reads as an answer

    await dispatch(desk, "issue_comment", data)

    assert desk.calls == []


# -- reviews ------------------------------------------------------------------------------------


async def test_a_submitted_review_reaches_the_desk_without_a_reaction(desk: RecordingDesk) -> None:
    data = load_event("pull_request_review.submitted")
    data["review"]["body"] = "/answer approve"

    await dispatch(desk, "pull_request_review", data, delivery="delivery-2")

    assert desk.calls == [
        Handled(
            Written(repo=REPO, number=2, login=LOGIN, by_bot=False, body="/answer approve",
                 installation_id=1, comment_id=None, key=f"review:{REVIEW_ID}",
                 at=REVIEWED_AT),
            "delivery-2",
            False,
        )
    ]


async def test_a_review_with_no_body_still_reaches_the_desk(desk: RecordingDesk) -> None:
    await dispatch(desk, "pull_request_review", load_event("pull_request_review.submitted"))

    [call] = desk.calls
    assert (call.said.body, call.said.comment_id, call.react) == (None, None, False)


@pytest.mark.parametrize("action", ["edited", "dismissed"])
async def test_a_review_edited_or_dismissed_reaches_nothing(desk: RecordingDesk, action: str) -> None:
    data = load_event("pull_request_review.submitted")
    data["action"] = action
    data["review"]["body"] = "/answer approve"

    await dispatch(desk, "pull_request_review", data)

    assert desk.calls == []


async def test_other_events_reach_nothing(desk: RecordingDesk) -> None:
    # The webhook answers a ping itself; the router has nothing for it, nor for other events.
    await dispatch(desk, "ping", load_event("ping.with-app_id"))
    await dispatch(desk, "issues", {"action": "opened"})

    assert desk.calls == []


# -- malformed payloads -------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["comment", "issue", "repository", "sender"])
async def test_a_comment_payload_missing_a_part_is_malformed(
    desk: RecordingDesk, missing: str
) -> None:
    data = load_event("issue_comment.created.with-installation")
    del data[missing]

    with pytest.raises(MalformedPayload):
        await dispatch(desk, "issue_comment", data)
    assert desk.calls == []


@pytest.mark.parametrize("missing", ["review", "pull_request", "repository", "sender"])
async def test_a_review_payload_missing_a_part_is_malformed(
    desk: RecordingDesk, missing: str
) -> None:
    data = load_event("pull_request_review.submitted")
    del data[missing]

    with pytest.raises(MalformedPayload):
        await dispatch(desk, "pull_request_review", data)
    assert desk.calls == []


@pytest.mark.parametrize(
    ("part", "key", "value"),
    [
        ("issue", "number", "1"),
        ("comment", "id", None),
        ("comment", "body", 42),
        ("repository", "full_name", "Hello-World"),
    ],
    ids=["number-as-text", "no-comment-id", "body-not-text", "repo-without-owner"],
)
async def test_a_comment_payload_with_a_wrong_field_is_malformed(
    desk: RecordingDesk, part: str, key: str, value: Any
) -> None:
    data = load_event("issue_comment.created.with-installation")
    data[part][key] = value

    with pytest.raises(MalformedPayload):
        await dispatch(desk, "issue_comment", data)
    assert desk.calls == []


async def test_an_author_left_out_is_the_sender(desk: RecordingDesk) -> None:
    data = load_event("issue_comment.created.with-installation")
    del data["comment"]["user"]
    data["sender"]["login"] = "octocat"

    await dispatch(desk, "issue_comment", data)

    [call] = desk.calls
    assert call.said.login == "octocat"
