"""The first hour's config and Slack rules: an impossible quorum is one line naming the gate
(exit 2 at `aye serve`), a gate can be marked destructive, and a destructive ask's affirmative
Slack button is danger-styled with a confirm dialog (checked by slack_sdk's own models)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from ask_api import schemas
from bot import app
from bot.config import ConfigError, load_config
from bot.settings import Settings
from core.domain import formats
from handlers.slack import blocks, buttons
from handlers.slack.library_logs import TOKEN_UNUSED, library_logger
from tests import builders
from tests.fake_slack import block_problems

ASK_ID = "0123456789abcdef0123456789abcdef"
ADA = '[[people]]\nname = "ada"\nids = ["slack:U0123ABCD", "github:ada-l"]\n'


def _load(tmp_path: Path, text: str) -> str | None:
    path = tmp_path / "aye.toml"
    path.write_text(text)
    try:
        load_config(path)
    except ConfigError as exc:
        return str(exc).removeprefix(f"{path}: ")
    return None


@pytest.mark.parametrize(("text", "said"), [
    ('[[gates]]\noperations = ["deploy."]\napprovals = 2\n',
     "gates[1].approvals: needs 2 distinct approvers, but its responders (escalation included) "
     "are 1 person: lower approvals or add responders"),
    # Two identities of one person are one approver.
    (ADA + '[[gates]]\noperations = ["a."]\n'
           'responders = ["slack:U0123ABCD", "github:ada-l"]\napprovals = 2\n',
     "gates[1].approvals: needs 2 distinct approvers, but its responders (escalation included) "
     "are 1 person: lower approvals or add responders"),
    ('[[gates]]\noperations = ["a."]\n\n[[gates]]\noperations = ["b."]\n'
     'responders = ["operator:local", "github:bob"]\napprovals = 3\n',
     "gates[2].approvals: needs 3 distinct approvers, but its responders (escalation included) "
     "are 2 people: lower approvals or add responders"),
])
def test_an_impossible_quorum_names_the_gate(tmp_path: Path, text: str, said: str) -> None:
    assert _load(tmp_path, text) == said


@pytest.mark.parametrize("text", [
    '[[gates]]\noperations = ["a."]\nresponders = ["operator:local", "github:bob"]\napprovals = 2\n',
    # The escalation's people count too; a bare kind is anyone of it.
    '[[gates]]\noperations = ["a."]\napprovals = 2\n'
    'escalate = { responders = ["slack:U0456EFGH"], timeout = "1h" }\n',
    '[[gates]]\noperations = ["a."]\nresponders = ["github"]\napprovals = 5\n',
    ADA + '[[gates]]\noperations = ["a."]\nresponders = ["person:ada", "operator:local"]\n'
          'approvals = 2\n',
])
def test_a_possible_quorum_is_taken(tmp_path: Path, text: str) -> None:
    assert _load(tmp_path, text) is None


def test_a_gate_is_marked_destructive_with_a_boolean_only(tmp_path: Path) -> None:
    path = tmp_path / "aye.toml"
    path.write_text('[[gates]]\noperations = ["db.drop"]\ndanger = true\n')
    assert load_config(path).gates[0].danger is True
    assert _load(tmp_path, '[[gates]]\noperations = ["a."]\ndanger = "yes"\n') == (
        "gates[1].danger: Input should be a valid boolean")


def _buttons(ask: Any) -> list[dict[str, Any]]:
    message = blocks.question_message(ask, "q7")
    assert block_problems(message.blocks) == []  # slack_sdk's models take it
    return [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


def _shown(found: list[dict[str, Any]]) -> list[tuple[str, str | None, bool]]:
    return [(b["text"]["text"], b.get("style"), "confirm" in b) for b in found]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"kind": "approval"}, [("Approve", "danger", True), ("Refuse", None, False)]),
    ({"format": formats.CONFIRM}, [("Yes", "danger", True), ("No", None, False)]),
    ({"format": formats.ACK}, [("Continue", "danger", True)]),
    ({"options": ["wipe", "keep"]}, [("wipe", "danger", True), ("keep", "danger", True)]),
    ({"format": formats.TEXT}, [("Answer", "danger", True)]),
])
def test_a_destructive_asks_affirmative_slack_button_is_danger_with_a_confirm(
    fields: dict[str, Any], expected: list[tuple[str, str | None, bool]]
) -> None:
    build = builders.approval if fields.get("kind") == "approval" else builders.question
    ask = build(id=ASK_ID, danger=True, **{k: v for k, v in fields.items() if k != "kind"})
    found = _buttons(ask)
    assert _shown(found) == expected
    dialog = next(b["confirm"] for b in found if "confirm" in b)
    assert dialog["style"] == "danger" and dialog["confirm"]["text"] == "Yes, go ahead"


def test_an_ordinary_approval_keeps_its_colours_and_asks_nothing() -> None:
    found = _buttons(builders.approval(id=ASK_ID))
    assert _shown(found) == [("Approve", "primary", False), ("Refuse", "danger", False)]
    assert buttons.affirmative(found[0]) and not buttons.affirmative(found[1])


# -- wording ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "said"), [
    ({"type": "too_short", "ctx": {"min_length": 1}, "loc": ("ids",)}, "needs at least 1 id"),
    ({"type": "too_short", "ctx": {"min_length": 2}, "loc": ("options",)}, "needs at least 2 options"),
    ({"type": "too_long", "ctx": {"max_length": 1}, "loc": ("links",)}, "takes at most 1 link"),
    ({"type": "too_short", "ctx": {"min_length": 1}, "loc": ("thing",)}, "needs at least 1 item"),
])
def test_a_count_and_its_noun_agree(error: dict[str, Any], said: str) -> None:
    assert schemas.words(error) == said


def test_the_start_up_lines_say_where_things_are_and_warn_of_a_silent_slack(tmp_path: Path) -> None:
    config_path = tmp_path / "aye.toml"
    config_path.write_text('[defaults]\nresponders = ["operator:local"]\n')
    env = {"AYE_CONFIG": str(config_path), "AYE_PORT": "18080"}
    settings = Settings.from_env(env)
    assert app.where(settings, 18080) == [
        f"config {config_path.resolve()}", "inbox http://127.0.0.1:18080/inbox",
        "mcp http://127.0.0.1:18080/mcp (agents: see the README's MCP section)"]
    config = load_config(config_path)
    assert app.surface_warnings(settings, config) == []  # Slack off: nothing to warn of
    slack_on = Settings.from_env({**env, "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert app.surface_warnings(slack_on, config) == [
        "warning: Slack is on but no responder in the config is on Slack (slack:U… or a "
        "[[people]] id): Slack will show nothing"]
    config_path.write_text(ADA + '[[gates]]\noperations = ["a."]\nresponders = ["person:ada"]\n')
    assert app.surface_warnings(slack_on, load_config(config_path)) == []
    missing = Settings.from_env({"AYE_CONFIG": str(tmp_path / "none.toml")})
    assert app.where(missing, 8080)[0] == (
        f"no config file at {(tmp_path / 'none.toml').resolve()}; using the defaults")


async def test_bolt_says_nothing_of_the_token_it_does_not_use(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-not-used")
    with caplog.at_level(logging.WARNING, logger="slack_bolt"):
        AsyncApp(client=AsyncWebClient(token="xoxb-used"), logger=library_logger())
    assert [r.getMessage() for r in caplog.records] == []
    assert TOKEN_UNUSED == "As you gave `client` as well, `token` will be unused."
