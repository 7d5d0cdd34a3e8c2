"""Pure extraction of the facts aye needs from GitHub webhook payloads, checked for shape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.core.rules import work_key

BOT_TYPE = "Bot"


class MalformedPayload(ValueError):
    """A signed delivery whose payload lacks what its event always carries."""


@dataclass(frozen=True, slots=True)
class Said:
    """Something a person wrote on an issue or pull request (a comment or a review)."""

    repo: str  # owner/name, as GitHub spells it
    number: int
    login: str
    by_bot: bool
    body: str | None
    installation_id: int | None
    comment_id: int | None  # None for a review: reactions go on issue comments only

    @property
    def work(self) -> dict[str, Any]:
        return {"github": {"repo": self.repo, "number": self.number}}

    @property
    def work_key(self) -> str:
        key = work_key(self.work)
        assert key is not None
        return key


def comment_said(data: Mapping[str, Any]) -> Said:
    """From an `issue_comment` payload (on an issue or a pull request alike)."""
    comment = _object(data, "comment")
    issue = _object(data, "issue")
    return _said(data, _int(issue, "number"), comment, _int(comment, "id"))


def review_said(data: Mapping[str, Any]) -> Said:
    """From a `pull_request_review` payload."""
    review = _object(data, "review")
    pull_request = _object(data, "pull_request")
    return _said(data, _int(pull_request, "number"), review, None)


def _said(
    data: Mapping[str, Any], number: int, written: Mapping[str, Any], comment_id: int | None
) -> Said:
    repository = _object(data, "repository")
    sender = _object(data, "sender")
    # The author of the comment or review; the sender is the same person for the events
    # handled here, and stands in where a payload leaves the author out.
    user = written.get("user")
    author: Mapping[str, Any] = user if isinstance(user, Mapping) else sender
    login = _str(author, "login")
    body = written.get("body")
    if body is not None and not isinstance(body, str):
        raise MalformedPayload("body is not a string")
    installation = data.get("installation")
    installation_id = None
    if isinstance(installation, Mapping) and isinstance(installation.get("id"), int):
        installation_id = int(installation["id"])
    full_name = _str(repository, "full_name")
    if full_name.count("/") != 1:
        raise MalformedPayload("repository.full_name is not owner/name")
    by_bot = sender.get("type") == BOT_TYPE or author.get("type") == BOT_TYPE
    return Said(full_name, number, login, by_bot, body, installation_id, comment_id)


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise MalformedPayload(f"{key} is missing")
    return value


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedPayload(f"{key} is not a number")
    return value


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise MalformedPayload(f"{key} is missing")
    return value
