"""One human counts once across surfaces, end to end, on both stores: Ada has a Slack and a
GitHub identity ([[people]]); the real slack-bolt against the fake Slack and the real gidgethub
against the fake GitHub, with one aye between them. Her approval from Slack and her approval
from GitHub are one approval (the second refused `already_approved`, 😕 on GitHub); the author
of the issue (her GitHub login) cannot approve it from Slack either (`self_approval`); and under
step-up Slack links to the inbox instead of approving."""

from __future__ import annotations

from typing import Any

from bot.config import Config
from tests.conftest import AGENT_HEADERS, Aye, StartAye
from tests.e2e.test_github_e2e import NUMBER, REPO, WORK, Hub, app_env
from tests.e2e.test_slack_surface import DEFAULT_CHANNEL, button, poke_outbox, posted, press, slack_env, told
from tests.fake_github import FakeGitHub
from tests.fake_slack import FakeSlack

ADA_SLACK, ADA_GITHUB, BOB_GITHUB = "U0ADA0001", "ada-l", "bob-b"


def config(**gate: Any) -> Config:
    return Config.model_validate({
        "people": [{"name": "ada", "ids": [f"slack:{ADA_SLACK}", f"github:{ADA_GITHUB}"]},
                   {"name": "bob", "ids": [f"github:{BOB_GITHUB}"]}],
        "slack": {"default_channel": DEFAULT_CHANNEL},
        "gates": [{"operations": ["deploy."], "responders": ["person:ada", "person:bob"],
                   "timeout": "1h", **gate}],
    })


async def started(
    start_aye: StartAye, database_url: str, slack: FakeSlack, github: FakeGitHub, **gate: Any
) -> Hub:
    env = {**slack_env(slack), **app_env(github)}
    return Hub(await start_aye(database_url, config(**gate), env=env), github)


async def pending(aye: Aye, slack: FakeSlack) -> tuple[dict[str, Any], Any]:
    after = len(slack.calls)
    body = {"operation": "deploy.prod", "input": {"version": "1.4.2"}, "work": WORK}
    resp = await aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    assert resp.status == 202, await resp.text()
    poke_outbox(aye)
    return (await resp.json())["ask"], await posted(slack, after=after)


async def slack_says(slack: FakeSlack, user: str, post: Any, label: str = "Approve") -> str:
    after = len(slack.calls)
    await press(slack, user, post, label)
    return str((await told(slack, user, after=after)).args["text"])


async def github_reacts(hub: Hub, login: str, body: str = "/answer approve") -> str:
    _, comment = await hub.say(body, login=login)
    return str((await hub.reaction(comment)).json_body["content"])


async def refusals(hub: Hub, ref: str) -> list[tuple[str, str]]:
    return [(e["by"], e["why"]) for e in await hub.history(ref) if e["event"] == "refused"]


async def test_a_person_approving_on_slack_and_on_github_counts_once(
    start_aye: StartAye, database_url: str, fake_slack: FakeSlack, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="carol")
    hub = await started(start_aye, database_url, fake_slack, fake_github, approvals=2)
    ask, post = await pending(hub.aye, fake_slack)
    await slack_says(fake_slack, ADA_SLACK, post)  # counted: one of two
    assert await github_reacts(hub, ADA_GITHUB) == "confused"
    assert await refusals(hub, ask["ref"]) == [(f"github:{ADA_GITHUB}", "already_approved")]
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    assert await github_reacts(hub, BOB_GITHUB) == "+1"
    view = await hub.aye.get(ask["id"], operator=True)
    assert view["status"] == "answered"
    assert view["approvals"]["approvers"] == [f"slack:{ADA_SLACK}", f"github:{BOB_GITHUB}"]


async def test_the_author_cannot_approve_from_another_surface_of_theirs(
    start_aye: StartAye, database_url: str, fake_slack: FakeSlack, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login=ADA_GITHUB)
    hub = await started(start_aye, database_url, fake_slack, fake_github,
                        prevent_self_approval=True)
    ask, post = await pending(hub.aye, fake_slack)
    told_ada = await slack_says(fake_slack, ADA_SLACK, post)
    assert "you opened this work" in told_ada
    assert await refusals(hub, ask["ref"]) == [(f"slack:{ADA_SLACK}", "self_approval")]
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    assert await github_reacts(hub, BOB_GITHUB) == "+1"
    assert (await hub.aye.get(ask["id"]))["status"] == "answered"


async def test_under_step_up_slack_links_to_the_inbox_and_github_gets_confused(
    start_aye: StartAye, database_url: str, fake_slack: FakeSlack, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="carol")
    hub = await started(start_aye, database_url, fake_slack, fake_github, sign_in_within="15m")
    ask, post = await pending(hub.aye, fake_slack)
    message = fake_slack.message(post.args["channel"], post.response["ts"])
    assert message is not None
    approve = next(e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]
                   if e["text"]["text"] == "Approve in the inbox")
    assert approve["url"].endswith(f"/inbox/{ask['ref']}")
    assert button(message, "Refuse")  # a refusal still counts from anywhere
    assert await github_reacts(hub, ADA_GITHUB) == "confused"
    assert await refusals(hub, ask["ref"]) == [(f"github:{ADA_GITHUB}", "sign_in_required")]
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
