"""Pure extraction of the facts aye needs from GitHub webhook payloads, checked for shape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from core.domain.identity import work_key

BOT_TYPE = "Bot"
# GitHub's ids and numbers are positive 64-bit integers at most (the store's, too).
MAX_ID = 2**63 - 1
# A repository name that an HTTP client would resolve as a path segment (`a/..`).
DOT_NAMES = frozenset({".", ".."})


class MalformedPayload(ValueError):
    """A signed delivery whose payload lacks what its event always carries."""


@dataclass(frozen=True, slots=True)
class Written:
    """Something a person wrote on an issue or pull request (a comment or a review)."""

    repo: str  # owner/name, as GitHub spells it
    number: int
    login: str
    by_bot: bool
    body: str | None
    installation_id: int | None
    comment_id: int | None  # None for a review: reactions go on issue comments only
    key: str  # the comment or review itself (`comment:<id>`, `review:<id>`): it acts once
    at: float  # when GitHub says it was written (epoch seconds, whole)

    @property
    def work(self) -> dict[str, Any]:
        return {"github": {"repo": self.repo, "number": self.number}}

    @property
    def work_key(self) -> str:
        key = work_key(self.work)
        assert key is not None
        return key


def comment_said(data: Mapping[str, Any]) -> Written:
    """From an `issue_comment` payload (on an issue or a pull request alike)."""
    comment = _object(data, "comment")
    issue = _object(data, "issue")
    comment_id = _int(comment, "id")
    return _said(data, _int(issue, "number"), comment, comment_id, f"comment:{comment_id}",
                 _time(comment, "created_at"))


def review_said(data: Mapping[str, Any]) -> Written:
    """From a `pull_request_review` payload."""
    review = _object(data, "review")
    pull_request = _object(data, "pull_request")
    return _said(data, _int(pull_request, "number"), review, None, f"review:{_int(review, 'id')}",
                 _time(review, "submitted_at"))


def _said(
    data: Mapping[str, Any], number: int, written: Mapping[str, Any], comment_id: int | None,
    key: str, at: float,
) -> Written:
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
    if isinstance(installation, Mapping) and _is_id(installation.get("id")):
        installation_id = int(installation["id"])
    full_name = _str(repository, "full_name")
    owner, _, name = full_name.partition("/")
    if not owner or "/" in name or name in DOT_NAMES or not name:
        raise MalformedPayload("repository.full_name is not owner/name")
    by_bot = sender.get("type") == BOT_TYPE or author.get("type") == BOT_TYPE
    return Written(full_name, number, login, by_bot, storable(body), installation_id, comment_id,
                key, at)


def storable(text: str | None) -> str | None:
    """What a person wrote, as a store can keep it: no NUL (PostgreSQL refuses it in text),
    and no lone surrogate (no UTF-8 for it), each replaced by U+FFFD."""
    if text is None:
        return None
    if text.isascii() and "\x00" not in text:
        return text
    clean = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return clean.replace("\x00", "\ufffd")


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise MalformedPayload(f"{key} is missing")
    return value


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or not _is_id(value):
        raise MalformedPayload(f"{key} is not a number")
    return value


def _str(data: Mapping[str, Any], key: str) -> str:
    """A name GitHub gives (a login, owner/name): printable, storable text."""
    value = data.get(key)
    # Not printable: a NUL, a control character or a lone surrogate, none of which GitHub sends.
    if not isinstance(value, str) or not value or not value.isprintable() or len(value) > 200:
        raise MalformedPayload(f"{key} is missing")
    return value


def _time(data: Mapping[str, Any], key: str) -> float:
    """GitHub's ISO 8601 time (`2019-05-15T15:20:21Z`) as epoch seconds."""
    value = data.get(key)
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    except (ValueError, OverflowError):
        raise MalformedPayload(f"{key} is not a time") from None
