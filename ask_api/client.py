"""A small client for agents: ask a person and wait, or run an operation only once approved.

    from ask_api.client import AyeClient, ApprovalRefused

    async with AyeClient("http://127.0.0.1:8080", token) as aye:
        answer = await aye.ask("Spend $40 on a GPU tonight?", options=["yes", "no"])
        colours = await aye.ask("Which?", options=["red", "blue"], format="multi")  # a list
        go = await aye.ask("Go on?", format="confirm")                               # a bool
        async with aye.gated("deploy.prod", {"version": "1.4.2"}, timeout_s=600):
            await deploy("1.4.2")          # runs only after a person approved this exact call

        @aye.gated("db.migrate")           # as a decorator: the call's arguments are its input
        async def migrate(revision: str) -> None: ...
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import aiohttp

WAIT_SLICE_S = 60  # one `wait` request; the client keeps waiting across as many as it takes
# While aye restarts (connection refused or cut, 502/503/504 from a proxy): try again after a
# jittered, growing pause, for as long as the ask can still be answered.
RETRY_FIRST_S = 0.2
RETRY_MAX_S = 5.0
RETRY_STATUSES = (502, 503, 504)
# Without a deadline to bound them (creating an ask, a gated call), retries stop after this.
RETRY_WITHOUT_DEADLINE_S = 300.0
# A gated call's own bound (`timeout_s`) is kept by the server, which expires the approval then;
# the client stops waiting this much later should no expiry come.
TIMEOUT_GRACE_S = 30.0
# What `ask` returns: the answer's value, typed by the ask's format (bot.core.formats): text
# and a choice's option as a string, a multi's options as a list, confirm and ack as a bool,
# a form as a dict.
Answer = str | bool | list[str] | dict[str, Any]
P = ParamSpec("P")
R = TypeVar("R")


class AyeError(Exception):
    """The server refused a request; `code` is the API's error code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message


class AskClosed(AyeError):
    """The question expired or was withdrawn before anyone answered."""


class ApprovalRefused(AyeError):
    """A person refused the call; `note` is the reason they gave, if any. `repeat` is True
    when aye refused it at once, remembering an earlier refusal of this exact call (nobody
    was asked again: asking again soon would only be refused the same way)."""

    def __init__(
        self, operation: str, by: str | None, note: str | None = None, repeat: bool = False
    ) -> None:
        again = " (remembered: not asked again)" if repeat else ""
        super().__init__(403, "approval_refused", f"{operation} was refused by {by}{again}")
        self.operation, self.by, self.note, self.repeat = operation, by, note, repeat


class ApprovalTimedOut(AyeError):
    def __init__(self, operation: str) -> None:
        super().__init__(403, "approval_timed_out", f"nobody approved {operation} in time")
        self.operation = operation


class ApprovalUnavailable(AyeError):
    def __init__(self, operation: str) -> None:
        super().__init__(403, "approval_unavailable", f"nobody can approve {operation} here")
        self.operation = operation


class _Unavailable(Exception):
    """A proxy's 502/503/504 while aye restarts: tried again like a refused connection."""


def _loop_time_of(deadline: str | None, now_loop: float) -> float | None:
    """The ask's ISO deadline as event-loop time, to bound retries by it."""
    if not deadline:
        return None
    moment = datetime.fromisoformat(deadline.replace("Z", "+00:00")).timestamp()
    return now_loop + (moment - time.time())


class AyeClient:
    def __init__(self, url: str, token: str, session: aiohttp.ClientSession | None = None) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._session = session
        self._own_session = session is None

    async def __aenter__(self) -> AyeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None

    async def _request(
        self, method: str, path: str, body: Any = None, until: float | None = None
    ) -> tuple[int, Any]:
        """One request, tried again across a restart of aye until `until` (loop time; by
        default RETRY_WITHOUT_DEADLINE_S from now). Only requests that are safe to repeat come
        here: reads, waits, creates with a `key`, and gated calls."""
        loop = asyncio.get_running_loop()
        end = until if until is not None else loop.time() + RETRY_WITHOUT_DEADLINE_S
        pause = RETRY_FIRST_S
        while True:
            try:
                return await self._once(method, path, body)
            except (aiohttp.ClientConnectionError, _Unavailable, TimeoutError):
                if loop.time() + pause > end:
                    raise
            await asyncio.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, RETRY_MAX_S)

    async def _once(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        timeout = aiohttp.ClientTimeout(total=WAIT_SLICE_S + 30)
        async with self._session.request(
            method, self.url + path, json=body, headers=self._headers, timeout=timeout
        ) as resp:
            if resp.status in RETRY_STATUSES:
                raise _Unavailable(resp.status)
            data = await resp.json(content_type=None)
            if resp.status >= 400 and not (resp.status == 403 and "decision" in (data or {})):
                data = data or {}
                raise AyeError(resp.status, data.get("error", "http"), data.get("message", ""))
            return resp.status, data

    async def create(self, question: str, **fields: Any) -> dict[str, Any]:
        """POST /v1/asks; returns the ask without waiting. A `key` is sent (one is made when
        none is given), so a create retried across a restart never asks twice."""
        fields.setdefault("key", uuid.uuid4().hex)
        _, ask = await self._request("POST", "/v1/asks", {"question": question, **fields})
        return dict(ask)

    async def wait(self, ask_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Park until the ask closes (or `timeout` seconds pass), across as many waits as
        needed, and across restarts of aye until the ask's deadline."""
        loop = asyncio.get_running_loop()
        end = None if timeout is None else loop.time() + timeout
        until = None
        while True:
            left = WAIT_SLICE_S if end is None else max(0.0, min(WAIT_SLICE_S, end - loop.time()))
            _, ask = await self._request(
                "GET", f"/v1/asks/{ask_id}/wait?timeout={left:.0f}", until=until
            )
            if ask["status"] != "open" or (end is not None and loop.time() >= end):
                return dict(ask)
            until = _loop_time_of(ask.get("deadline"), loop.time())

    async def ask(
        self, question: str, *, format: str | None = None, schema: dict[str, Any] | None = None,
        min: int | None = None, max: int | None = None, media: list[dict[str, Any]] | None = None,
        **fields: Any,
    ) -> Answer:
        """Ask and wait for the answer's value, typed by the format (see Answer); AskClosed
        when it expired or was withdrawn. `format`, `schema` (a form's JSON Schema), `min` and
        `max` (a multi's bounds) and `media` are sent only when given, like every other field
        of POST /v1/asks in `fields`."""
        given = {"format": format, "schema": schema, "min": min, "max": max, "media": media}
        fields.update({k: v for k, v in given.items() if v is not None})
        ask = await self.wait((await self.create(question, **fields))["id"])
        if ask["status"] == "answered":
            value = ask["answer"]["value"]
            if isinstance(value, bool | list | dict):
                return value
            return str(value)
        raise AskClosed(409, ask["status"], f"the question was {ask['status']}")

    async def call(
        self, operation: str, input: Any = None, work: dict[str, Any] | None = None,
        timeout_s: int | None = None,
    ) -> str | None:
        """Wait until this exact call may run; the approval's id (None when not gated).
        `timeout_s` bounds the wait: the server asks for the approval with a deadline no later
        than that (it is sent only when given)."""
        body: dict[str, Any] = {"operation": operation, "input": input, "work": work}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        loop = asyncio.get_running_loop()
        end = None if timeout_s is None else loop.time() + timeout_s + TIMEOUT_GRACE_S
        while True:
            _, reply = await self._request("POST", "/v1/calls", body)
            if reply["decision"] == "allow":
                return reply.get("approval")  # type: ignore[no-any-return]
            if reply["decision"] == "refuse":
                raise _refusal(operation, reply)
            left = None if end is None else max(0.0, end - loop.time())
            ask = await self.wait(reply["ask"]["id"], timeout=left)
            outcome = ask.get("outcome")
            if outcome == "approval_refused":
                raise ApprovalRefused(operation, ask.get("by"), (ask.get("answer") or {}).get("note"))
            if outcome == "approval_timed_out" or ask["status"] != "answered":
                raise ApprovalTimedOut(operation)
            # Approved: the same call again uses the approval up and is allowed.

    def gated(
        self, operation: str, input: Any = None, work: dict[str, Any] | None = None,
        timeout_s: int | None = None,
    ) -> _Gated:
        """`async with aye.gated(op, input):` or `@aye.gated(op)` on an async function;
        `timeout_s`: see call()."""
        return _Gated(self, operation, input, work, timeout_s)


def _refusal(operation: str, reply: dict[str, Any]) -> AyeError:
    """A 403 decision: refused by a person (now, or remembered from before), timed out, or
    nobody who could approve it can be reached."""
    error = reply.get("error")
    if error == "approval_refused":
        return ApprovalRefused(operation, reply.get("by"), reply.get("note"),
                               reply.get("repeat") is True)
    if error == "approval_timed_out":
        return ApprovalTimedOut(operation)
    if error == "approval_unavailable" or not error:
        return ApprovalUnavailable(operation)
    return AyeError(403, str(error), str(reply.get("message") or error))


@contextlib.asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[AyeClient]:
    """`async with connect(url, token) as aye:` an AyeClient, closed on the way out."""
    async with AyeClient(url, token) as client:
        yield client


class _Gated:
    def __init__(
        self, client: AyeClient, operation: str, input: Any, work: Any, timeout_s: int | None
    ) -> None:
        self.client, self.operation, self.input, self.work = client, operation, input, work
        self.timeout_s = timeout_s
        self.approval: str | None = None

    async def __aenter__(self) -> str | None:
        self.approval = await self.client.call(self.operation, self.input, self.work,
                                               self.timeout_s)
        return self.approval

    async def __aexit__(self, *exc: object) -> None:
        return None

    def __call__(self, func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        if not inspect.iscoroutinefunction(func):
            raise TypeError("gated() decorates async functions")
        signature = inspect.signature(func)

        @functools.wraps(func)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = self.input if self.input is not None else dict(bound.arguments)
            await self.client.call(self.operation, given, self.work, self.timeout_s)
            return await func(*args, **kwargs)

        return run

