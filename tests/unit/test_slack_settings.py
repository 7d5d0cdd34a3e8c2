"""Slack's settings from the environment: half-set, swapped or wrong-kind tokens are one line."""

from __future__ import annotations

import pytest

from core.app.ports import SurfaceConfigError
from handlers.slack.settings import read_settings


def test_both_tokens_of_the_right_kinds_turn_slack_on() -> None:
    found = read_settings({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert found is not None and found.api_url == "https://slack.com/api/"
    assert "xoxb" not in repr(found) and "xapp" not in repr(found)
    assert read_settings({}) is None


@pytest.mark.parametrize(
    ("bot", "app", "says"),
    [
        ("xapp-1", "xoxb-1", "SLACK_BOT_TOKEN and SLACK_APP_TOKEN are swapped"),
        ("xoxp-1", "xapp-1", "SLACK_BOT_TOKEN is not a bot token"),
        ("xoxb-1", "xoxb-2", "SLACK_APP_TOKEN is not an app-level token"),
        ("xoxb-1", "", "only one is set"),
    ],
)
def test_wrong_tokens_stop_start_up_in_one_line(bot: str, app: str, says: str) -> None:
    with pytest.raises(SurfaceConfigError) as stopped:
        read_settings({"SLACK_BOT_TOKEN": bot, "SLACK_APP_TOKEN": app})
    line = str(stopped.value)
    assert says in line and "\n" not in line
    assert bot not in line and (not app or app not in line)
