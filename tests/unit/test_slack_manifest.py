"""app-manifest.yml creates a Slack app with what the Slack surface uses, and nothing more."""

from __future__ import annotations

from pathlib import Path

MANIFEST = Path(__file__).resolve().parents[2] / "app-manifest.yml"
# Each scope, and the Web API methods of handlers/slack that need it.
SCOPES = {
    "chat:write": "chat.postMessage, chat.update, chat.postEphemeral",
    "channels:history": "conversations.replies/history in public channels",
    "groups:history": "… in private channels",
    "im:history": "… in direct messages",
    "mpim:history": "… in group direct messages",
}


def _lines() -> list[str]:
    # PyYAML is not a dependency: the manifest is simple enough to read line by line.
    return [line.split("#")[0].rstrip() for line in MANIFEST.read_text().splitlines()]


def _listed(lines: list[str], key: str) -> list[str]:
    start = lines.index(key)
    found = []
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        if not line.startswith("      - "):
            break
        found.append(line.removeprefix("      - "))
    return found


def test_bot_scopes_are_exactly_those_used() -> None:
    assert sorted(_listed(_lines(), "    bot:")) == sorted(SCOPES)


def test_user_scopes_are_exactly_those_sign_in_with_slack_asks() -> None:
    # OpenID Connect: the member's id and workspace (openid), name (profile), address (email).
    assert sorted(_listed(_lines(), "    user:")) == ["email", "openid", "profile"]
    lines = _lines()
    redirect = lines[lines.index("  redirect_urls:") + 1].strip()
    assert redirect.startswith("- https://") and redirect.endswith("/login/slack/callback")


def test_socket_mode_and_interactivity_are_on_and_no_events_are_subscribed() -> None:
    lines = _lines()

    assert "  socket_mode_enabled: true" in lines
    assert lines[lines.index("  interactivity:") + 1] == "    is_enabled: true"
    assert not any(line.strip().startswith("event_subscriptions") for line in lines)
    assert not any("request_url" in line for line in lines)  # Socket Mode needs no URL
