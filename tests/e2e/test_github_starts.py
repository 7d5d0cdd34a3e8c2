"""Approving a start on GitHub, end to end: with post_questions on, the approval is posted on the
issue (or pull request) itself in inert words (the agent, the title, the links, the trigger),
never `human.start` and its JSON, saying how to approve or refuse with a reason; a `/answer
refuse` with a reason line cancels the work (403 `start_refused` for the agent's next start);
a quorum counts on the comment. Signed webhooks over HTTP, the real gidgethub against the fake
GitHub, SQLite and PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ask_api.tokens import TokenBook
from bot.config import Config
from handlers.github import messages
from handlers.github.messages import marker
from tests import builders
from tests.conftest import OPERATOR_TOKEN, StartAye
from tests.e2e.test_github_e2e import COMMENT, ISSUE_COMMENTS, NUMBER, REPO, WORK, Hub, app_env
from tests.e2e.test_github_shown import outside_code_is_inert
from tests.fake_github import FakeGitHub

TRIAGE = {"Authorization": "Bearer triage-token"}
HOSTILE_TITLE = "Fix @org/team's <img src=x onerror=alert(1)> bug, see #1 and ![x](https://e.x/p.png)"
LINKS = ["https://github.com/owner/name/issues/42", "https://evil.example/a)](https://b.example"]
# aye's own links to the start's links, taken out before checking that the rest is inert.
START_LINK = r"^(  - )\[(.*)\]\(https://[^\s()<>\\\"']+\) \("


def gated(**gate: Any) -> Config:
    return Config.model_validate({
        "agents": [{"name": "triage", "token_env": "AYE_TOKEN_TRIAGE"}],
        "github": {"post_questions": True},
        "gates": [{"kinds": ["github."], "agents": ["triage"], "timeout": "1h",
                   "responders": ["github:octocat", "operator:local"], **gate}],
    })


async def started(
    start_aye: StartAye, database_url: str, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch,
    **gate: Any,
) -> Hub:
    monkeypatch.setenv("AYE_TOKEN_TRIAGE", "triage-token")
    config = gated(**gate)
    aye = await start_aye(database_url, config, env=app_env(fake),
                          tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    aye.headers = dict(TRIAGE)
    return Hub(aye, fake)


async def start(hub: Hub, work: dict[str, Any], **what: Any) -> tuple[int, dict[str, Any]]:
    resp = await hub.aye.client.post("/v1/starts", json={"work": work, **what}, headers=TRIAGE)
    return resp.status, await resp.json()


async def posted(hub: Hub) -> str:
    call = await hub.fake.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    return str(call.json_body["body"])


async def test_a_start_is_posted_inertly_and_a_refusal_with_a_reason_cancels_the_work(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = await started(start_aye, database_url, fake_github, monkeypatch)
    status, pending = await start(hub, WORK, title=HOSTILE_TITLE, links=LINKS,
                                  trigger="labelled agent:triage by @mallory")
    assert status == 202, pending
    ask = pending["ask"]

    body = await posted(hub)

    outside_code_is_inert(re.sub(START_LINK, r"\1\2 (", body, flags=re.M))
    assert body.startswith(f"**Start approval needed** from an agent (ref `{ask['ref']}`)")
    assert "**May triage start on this issue?**" in body
    assert ("- Title: Fix @\u200dorg/team's &lt;img src=x onerror=alert(1)&gt; bug, see "
            "#\u200d1 and !\\[x\\](https:\u200d//e.x/p.png)") in body
    assert "- Trigger: labelled agent:triage by @\u200dmallory" in body
    assert ("  - [https:\u200d//github.com/owner/name/issues/42]"
            "(https://github.com/owner/name/issues/42) (github.com)") in body
    # A link's address cannot end its Markdown link early: its `)` is percent-encoded.
    assert "(https://evil.example/a%29%5D%28https://b.example) (evil.example)" in body
    assert "`/answer approve` or `/answer refuse`" in body
    assert "To refuse, write the reason on the lines after `/answer refuse`" in body
    assert "@octocat" in body and "human.start" not in body and '"agent"' not in body
    assert "<img" not in body and "![" not in body and body.endswith(marker(ask["id"]))

    _, comment = await hub.say("/answer refuse\nNot this sprint: the team is on the release.")
    assert (await hub.reaction(comment)).json_body == {"content": "+1"}
    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    closed = str(edited.json_body["body"])
    assert closed.splitlines()[0] == (f"**Start approval** from an agent (ref `{ask['ref']}`): "
                                      "refused by @octocat. The work is cancelled for triage.")
    assert "**May triage start on this issue?**" in closed

    for _ in range(2):  # cancelled for good: every later start of this issue by triage
        status, body403 = await start(hub, WORK)
        assert (status, body403["error"], body403["by"]) == (403, "start_refused", "github:octocat")
        assert body403["note"] == "Not this sprint: the team is on the release."
    assert len(hub.fake.calls_matching("POST", ISSUE_COMMENTS)) == 1


async def test_a_start_on_a_pull_request_counts_a_quorum_then_lets_the_agent_start(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = await started(start_aye, database_url, fake_github, monkeypatch, approvals=2,
                        responders=["github", "operator:local"])
    pull = {"github": {"repo": REPO, "number": NUMBER, "type": "pull"}}
    status, pending = await start(hub, pull)
    assert status == 202, pending

    body = await posted(hub)
    assert "**May triage start on this pull request?**" in body and "- Title: none given" in body
    assert "This needs 2 approvals from different people." in body
    assert "Anyone on GitHub: answer with a comment" in body

    _, first = await hub.say("/answer approve", login="bob")
    assert (await hub.reaction(first)).json_body == {"content": "+1"}
    counted = await hub.fake.wait_for_call("PATCH", COMMENT, lambda c: c.status == 200)
    assert "So far 1 of 2 approvals: `bob`." in counted.json_body["body"]
    assert "`/answer approve` or `/answer refuse`" in counted.json_body["body"]  # still open

    _, second = await hub.say("/answer approve", login="carol")
    await hub.reaction(second)
    closed = await hub.fake.wait_for_call(
        "PATCH", COMMENT, lambda c: "approved by" in c.json_body["body"])
    assert "approved by @bob, @carol. triage may start." in closed.json_body["body"]
    status, allowed = await start(hub, pull)
    assert (status, allowed["decision"]) == (200, "allow")


# -- the words, pure ----------------------------------------------------------------------------


def test_a_timed_out_start_says_the_work_is_cancelled_and_a_huge_one_fits_a_comment() -> None:
    what = {"agent": "triage", "work": WORK, "title": "\u202e" * 200, "trigger": "\u0000" * 200,
            "links": ["https://x.example/" + "(" * 1980] * 5}
    ask = builders.approval(operation="human.start", question="human.start", call_input=what,
                            work=WORK, agent="triage", responders=["github:octocat"])
    body = messages.question_comment(ask, "a7")
    assert len(body.encode()) <= messages.COMMENT_BUDGET
    assert "\u202e" not in body and r"- Title: \[U+202E\]\[U+202E\]" in body  # shown
    assert "this request contains hidden or reordering characters" in body
    assert body.count("its address is too long to link here") == 0  # all five fit, encoded

    timed_out = ask.model_copy(update={"status": "expired", "outcome": "approval_timed_out"})
    first = messages.closed_comment(timed_out, "a7").splitlines()[0]
    assert first.endswith("expired with no answer. The work is cancelled for triage.")
