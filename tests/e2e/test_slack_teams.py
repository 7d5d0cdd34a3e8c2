"""Slack Connect: only aye's own workspace (its bot token's team, from auth.test) and the teams
listed in `[slack] teams` may answer. A member of another organisation in a shared channel is
refused as not a responder, recorded in the ask's history, and told why.

Through the real surface (slack-bolt/slack-sdk against the fake Slack), on both stores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import Config, ConfigError, load_config
from handlers.slack import replies
from handlers.slack.settings import SlackSection
from tests.conftest import Aye, StartAye, eventually
from tests.e2e.test_slack_surface import (
    DEFAULT_CHANNEL,
    RESPONDER,
    button,
    ok,
    posted,
    start,
    told,
)
from tests.fake_slack import TEAM_ID, FakeSlack

OTHER_TEAM = "T0456OTHER"  # another organisation, in a Slack Connect channel
NOT_YOURS = "you are not one of the people this is for"


def config(teams: list[str] | None = None, responders: list[str] | None = None) -> Config:
    slack: dict[str, Any] = {"default_channel": DEFAULT_CHANNEL}
    if teams is not None:
        slack["teams"] = teams
    return Config.model_validate({
        "defaults": {"responders": responders or [f"slack:{RESPONDER}", "operator:local"]},
        "slack": slack,
    })


async def press_as(
    fake: FakeSlack, user: str, team: str, label: str, after: int = 0
) -> dict[str, Any]:
    """Press the button `label` on aye's newest post, as `user` of `team`."""
    call = await posted(fake, after=after)
    message = fake.message(DEFAULT_CHANNEL, call.response["ts"])
    assert message is not None
    action_id, value = button(message, label)
    return await fake.press_button(
        user, action_id, value, DEFAULT_CHANNEL, call.response["ts"], team_id=team
    )


async def refusals(aye: Aye, ref: str) -> list[dict[str, Any]]:
    history = (await aye.get(ref, operator=True))["history"]
    return [
        {k: v for k, v in e.items() if k in ("event", "by", "why", "surface")}
        for e in history if e["event"] == "refused"
    ]


def refused_as(user: str) -> dict[str, str]:
    return {"event": "refused", "by": f"slack:{user}", "why": "not_a_responder", "surface": "slack"}


# -- presses --------------------------------------------------------------------------------------


@pytest.mark.parametrize("responders", [[f"slack:{RESPONDER}"], ["slack"]], ids=["named", "anyone"])
async def test_a_press_from_another_organisation_is_refused_recorded_and_explained(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str, responders: list[str]
) -> None:
    # Even the named responder's id, pressed from another team, is not taken: ids are only
    # unique within a workspace, and a bare `slack` means anyone of aye's workspace(s).
    aye = await start(start_aye, database_url, fake_slack, config=config(responders=responders))
    ask = await aye.ask(question="Deploy now?", options=["yes", "no"])

    await press_as(fake_slack, RESPONDER, OTHER_TEAM, "yes")
    reply = await told(fake_slack, RESPONDER)

    assert reply.args["text"] == (
        f"Your answer to `{ask['ref']}` was not taken: {NOT_YOURS}: only members of aye's own "
        "Slack workspace (or of a workspace its operator allows) can answer here."
    )
    assert (await aye.get(ask["id"]))["status"] == "open"
    assert await refusals(aye, ask["ref"]) == [refused_as(RESPONDER)]
    assert fake_slack.calls_to("chat.update") == []
    # The same person from aye's own workspace answers.
    await press_as(fake_slack, RESPONDER, TEAM_ID, "yes")
    assert (await aye.wait(ask["id"]))["answer"]["value"] == "yes"


async def test_a_listed_team_may_answer(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=config(teams=[OTHER_TEAM]))
    ask = await aye.ask(question="Deploy now?", options=["yes", "no"])
    first = await posted(fake_slack)
    other = await aye.ask(question="Roll back?", options=["yes", "no"])
    after = fake_slack.calls.index(first) + 1

    await press_as(fake_slack, RESPONDER, OTHER_TEAM, "no")
    await press_as(fake_slack, RESPONDER, "T0THIRD1", "yes", after=after)  # listing one lists no other

    await fake_slack.wait_for_calls("chat.postEphemeral", 2, ok)  # told once each is recorded
    got = await aye.wait(ask["id"])
    assert (got["status"], got["answer"]["value"]) == ("answered", "no")
    assert (await aye.get(ask["ref"], operator=True))["answered_by"] == f"slack:{RESPONDER}"
    assert (await aye.get(other["id"]))["status"] == "open"
    assert await refusals(aye, other["ref"]) == [refused_as(RESPONDER)]


# -- the free-text form ---------------------------------------------------------------------------


async def test_answer_from_another_organisation_opens_no_form(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="Which region?")

    await press_as(fake_slack, RESPONDER, OTHER_TEAM, "Answer")
    reply = await told(fake_slack, RESPONDER)

    assert reply.args["text"] == replies.outsider_reply(ask["ref"])
    assert fake_slack.calls_to("views.open") == []
    assert await refusals(aye, ask["ref"]) == [refused_as(RESPONDER)]


async def test_a_form_submitted_from_another_organisation_is_refused_in_the_form(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask = await aye.ask(question="Which region?")
    await press_as(fake_slack, RESPONDER, TEAM_ID, "Answer")
    await fake_slack.wait_for_call("views.open", ok)

    ack = await fake_slack.submit_view(RESPONDER, {"answer": {"text": "eu"}}, team_id=OTHER_TEAM)

    assert ack["payload"] == {
        "response_action": "errors",
        "errors": {"answer": f"Not taken: {NOT_YOURS}: only members of aye's own Slack workspace "
                             "(or of a workspace its operator allows) can answer here."},
    }
    # The refusal is recorded just after the ack (which had to come within 3 s).
    await eventually(lambda: _refused_once(aye, ask["ref"]))
    assert (await aye.get(ask["id"]))["status"] == "open"
    # From aye's own workspace, the same form answers.
    await fake_slack.submit_view(RESPONDER, {"answer": {"text": "eu"}})
    assert (await aye.wait(ask["id"]))["answer"]["value"] == "eu"


async def _refused_once(aye: Aye, ref: str) -> bool:
    return await refusals(aye, ref) == [refused_as(RESPONDER)]


# -- the config key -------------------------------------------------------------------------------


def test_teams_is_an_optional_list_of_team_ids(tmp_path: Path) -> None:
    path = tmp_path / "aye.toml"
    path.write_text('[slack]\nteams = ["T0456OTHER", "T0789"]\n')

    section = load_config(path).section("slack")

    assert isinstance(section, SlackSection) and section.teams == ["T0456OTHER", "T0789"]
    assert SlackSection().teams == []


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ('["t0456other"]', "slack.teams[1]"),
        ('["T0456OTHER", "U0123ABCD"]', "slack.teams[2]"),
        ('[" T0456OTHER"]', "slack.teams[1]"),
        ('["T"]', "slack.teams[1]"),
        ('"T0456OTHER"', "slack.teams"),  # strict: one string is not a list
        ("[7]", "slack.teams[1]"),
    ],
)
def test_a_bad_team_id_stops_start_naming_the_key(tmp_path: Path, value: str, key: str) -> None:
    path = tmp_path / "aye.toml"
    path.write_text(f"[slack]\nteams = {value}\n")

    with pytest.raises(ConfigError) as raised:
        load_config(path)

    assert f": {key}: " in str(raised.value)
