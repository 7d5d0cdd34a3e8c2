"""The HTTP API as `aye tui` calls it: the operator's reads and answers over one aiohttp session
(the TUI runs on an event loop, where the CLI's blocking urllib client would freeze the screen).
The URL and the token are the CLI's own (bot.cli finds and checks them before the TUI starts)."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

import aiohttp

CALL_TIMEOUT_S = 30.0
PAGE = 200  # the API's largest page
MOST_LISTED = 1000  # as `aye asks`: the newest thousand; older ones are for `aye show`
FIELD_PREFIX = "answer."


class ApiDown(Exception):
    """The server could not be reached (or went away mid-call): the sentence to show."""


@dataclass(frozen=True)
class Reply:
    """What the server said to a call: its status and JSON body."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status == 200

    @property
    def error(self) -> str | None:
        return _get(self.body, "error")

    @property
    def message(self) -> str:
        return _get(self.body, "message") or f"HTTP {self.status}"

    @property
    def field(self) -> str | None:
        return _get(self.body, "field")

    def misfit(self) -> str | None:
        """Which part of the answer did not fit (422 invalid_answer): `""` for the answer as a
        whole, `count` for a form's field `answer.count`; None for any other reply."""
        if self.status != 422 or self.error != "invalid_answer":
            return None
        where = self.field or ""
        return where.removeprefix(FIELD_PREFIX) if where.startswith(FIELD_PREFIX) else ""


def _get(body: Any, key: str) -> str | None:
    value = body.get(key) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self._session: aiohttp.ClientSession | None = None

    @property
    def headers(self) -> dict[str, str]:
        # X-Aye-Client: an answer is recorded as the TUI's (`via tui`), as the CLI's are its own.
        return {"Authorization": f"Bearer {self.token}", "X-Aye-Client": "tui"}

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def call(self, method: str, path: str, body: Any = None) -> Reply:
        timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)
        try:
            async with self.session().request(
                method, self.url + path, json=body, headers=self.headers, timeout=timeout,
            ) as resp:
                raw = await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise ApiDown(f"aye at {self.url} cannot be reached ({_why(exc)})") from None
        try:
            return Reply(resp.status, json.loads(raw or b"null"))
        except ValueError:
            return Reply(resp.status, {"error": "http", "message": f"HTTP {resp.status}"})

    async def asks(self, everything: bool) -> list[dict[str, Any]]:
        """The open asks (or every ask), newest first, up to MOST_LISTED."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while len(found) < MOST_LISTED:
            query = {"limit": str(PAGE)} | ({} if everything else {"status": "open"})
            if cursor:
                query["cursor"] = cursor
            reply = await self.call("GET", "/v1/asks?" + urllib.parse.urlencode(query))
            if not reply.ok or not isinstance(reply.body, dict):
                raise ApiDown(f"aye did not list the asks: {reply.message}")
            found.extend(a for a in reply.body.get("asks") or [] if isinstance(a, dict))
            cursor = reply.body.get("next_cursor")
            if not cursor:
                break
        return found[:MOST_LISTED]

    async def ask(self, ident: str) -> Reply:
        return await self.call("GET", f"/v1/asks/{urllib.parse.quote(ident, safe='')}")

    async def answer(self, ident: str, answer: Any, note: str | None) -> Reply:
        body: dict[str, Any] = {"answer": answer} | ({"note": note} if note else {})
        return await self.call("POST", f"/v1/asks/{urllib.parse.quote(ident, safe='')}/answer", body)


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).lower().split())
