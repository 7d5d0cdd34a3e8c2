"""A small client for agents: ask a person and wait, or run an operation only once approved.

    from aye_client import AyeClient, ApprovalRefused

    async with AyeClient("http://127.0.0.1:8080", token) as aye:
        answer = await aye.ask("Spend $40 on a GPU tonight?", options=["yes", "no"])
        colours = await aye.ask("Which?", options=["red", "blue"], format="multi")  # a list
        go = await aye.ask("Go on?", format="confirm")                               # a bool
        async with aye.gated("deploy.prod", {"version": "1.4.2"}, timeout_s=600) as grant:
            await deploy("1.4.2")          # runs only after a person approved this exact call
        verify_receipt(grant.receipt, await aye.keys())  # who approved what, signed by aye

        @aye.gated("db.migrate")           # as a decorator: the call's arguments are its input
        async def migrate(revision: str) -> None: ...

        a, b = await aye.wait_all([await aye.create("A?"), await aye.create("B?")])
        await aye.start({"github": {"repo": "octo/app", "number": 7}}, title="Fix the login")
        signed = await aye.ask_external("Contract signed?", schema=PINNED, verifier="docsign")
        send_to_esign_tool(signed["answer_url"]); payload = answer_value(await aye.wait(signed["id"]))

The exceptions and helpers live in aye_client.errors (and verify_callback, for a callback
receiver, and sign_external, for an outside system's side, in aye_client.verify); every name is
importable from `aye_client` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, overload

import aiohttp

from aye_client import many
from aye_client.errors import (
    Answer,
    ApprovalRefused,
    ApprovalTimedOut,
    ApprovalUnavailable,
    AskClosed,
    AyeError,
    StartRefused,
    _Unavailable,
    answer_value,
    loop_time_of,
    refusal,
)
from aye_client.gated import Gated, Grant
from aye_client.verify import (
    BadReceipt,
    BadSignature,
    sign_external,
    verify_callback,
    verify_receipt,
)

__all__ = [
    "Answer", "ApprovalRefused", "ApprovalTimedOut", "ApprovalUnavailable", "AskClosed",
    "AyeClient", "AyeError", "BadReceipt", "BadSignature", "Grant", "StartRefused",
    "answer_value", "connect", "sign_external", "verify_callback", "verify_receipt",
]

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
                data = data if isinstance(data, dict) else {}
                raise AyeError(resp.status, data.get("error", "http"), data.get("message", ""),
                               data.get("field"))
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
            until = loop_time_of(ask.get("deadline"), loop.time())

    @overload
    async def ask(
        self, question: str, *, format: str | None = None, schema: dict[str, Any] | None = None,
        min: int | None = None, max: int | None = None, media: list[dict[str, Any]] | None = None,
        callback_url: None = None, **fields: Any,
    ) -> Answer: ...

    @overload
    async def ask(
        self, question: str, *, format: str | None = None, schema: dict[str, Any] | None = None,
        min: int | None = None, max: int | None = None, media: list[dict[str, Any]] | None = None,
        callback_url: str, **fields: Any,
    ) -> dict[str, Any]: ...

    async def ask(
        self, question: str, *, format: str | None = None, schema: dict[str, Any] | None = None,
        min: int | None = None, max: int | None = None, media: list[dict[str, Any]] | None = None,
        callback_url: str | None = None, **fields: Any,
    ) -> Answer | dict[str, Any]:
        """Ask and wait for the answer's value, typed by the format (see answer_value);
        AskClosed when it expired or was withdrawn. `format`, `schema` (a form's JSON Schema),
        `min` and `max` (a multi's bounds) and `media` are sent only when given, like every
        other field of POST /v1/asks in `fields`. With `callback_url`, aye POSTs the ask there
        when it closes, and ask() returns the ask just made at once, without waiting."""
        given = {"format": format, "schema": schema, "min": min, "max": max, "media": media,
                 "callback_url": callback_url}
        fields.update({k: v for k, v in given.items() if v is not None})
        made = await self.create(question, **fields)
        if callback_url is not None:
            return made
        return answer_value(await self.wait(made["id"]))

    async def ask_external(
        self, question: str, *, schema: dict[str, Any], verifier: str, **fields: Any
    ) -> dict[str, Any]:
        """An ask an outside system answers: returns it at once, with its `answer_url` (hand
        that to the system; it POSTs its payload there, signed as `verifier` expects, and it
        must fit `schema`); then `wait(ask["id"])` and read `answer_value`: the payload.
        Should a create's response be lost and its retry return the ask without the URL (aye
        shows a ticket only once), that ask is withdrawn and a new one made."""
        for _ in range(3):
            made = await self.create(question, format="external", schema=schema,
                                     verifier=verifier, **fields)
            if "answer_url" in made:
                return made
            with contextlib.suppress(AyeError):
                await self._request("DELETE", f"/v1/asks/{made['id']}")
            fields.pop("key", None)
        raise AyeError(502, "no_answer_url", "aye did not return the ask's answer URL")

    async def wait_all(
        self, asks_or_ids: Iterable[str | Mapping[str, Any]], timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """Park until every one of the asks (ids, refs, or asks as create() returns them; up
        to 100) is closed, or `timeout` seconds have passed; the asks in the order given (read
        a value with answer_value). Across as many requests, and restarts of aye, as needed."""
        return await many.wait_many(self, asks_or_ids, "all", timeout, WAIT_SLICE_S)

    async def wait_any(
        self, asks_or_ids: Iterable[str | Mapping[str, Any]], timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """As wait_all, until at least one of them is closed: the others come back open."""
        return await many.wait_many(self, asks_or_ids, "any", timeout, WAIT_SLICE_S)

    async def start(
        self, work: dict[str, Any], title: str | None = None, links: list[str] | None = None,
        trigger: str | None = None, *, wait: bool = True, timeout: float | None = None,
        callback_url: str | None = None,
    ) -> dict[str, Any]:
        """May this agent start on `work`? POST /v1/starts, waiting on a pending approval;
        returns the decision, `{"decision": "allow", …}`, once allowed. With `wait=False`, or
        once `timeout` seconds have passed, a start still waiting for its approval returns
        `{"decision": "pending", "ask": {…}}` (start again later: it is the same approval).
        StartRefused when refused, timed out or unavailable (its `error` says which)."""
        what = {"title": title, "links": links, "trigger": trigger, "callback_url": callback_url}
        return await many.start(self, work, what, wait, timeout)

    async def call(
        self, operation: str, input: Any = None, work: dict[str, Any] | None = None,
        timeout_s: int | None = None, callback_url: str | None = None,
    ) -> str | None:
        """Wait until this exact call may run; the approval's id (None when not gated).
        `decide()` gives its signed receipt too."""
        approval, _ = await self.decide(operation, input, work, timeout_s, callback_url)
        return approval

    async def decide(
        self, operation: str, input: Any = None, work: dict[str, Any] | None = None,
        timeout_s: int | None = None, callback_url: str | None = None,
    ) -> tuple[str | None, str | None]:
        """Wait until this exact call may run: (the approval's id, its signed receipt), both
        None when not gated. ApprovalRefused and ApprovalTimedOut carry the refusal's receipt.
        `timeout_s` bounds the wait: the server asks for the approval with a deadline no later
        than that; `callback_url`: aye also POSTs the approval there when it closes (each is
        sent only when given)."""
        body: dict[str, Any] = {"operation": operation, "input": input, "work": work}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        if callback_url is not None:
            body["callback_url"] = callback_url
        loop = asyncio.get_running_loop()
        end = None if timeout_s is None else loop.time() + timeout_s + TIMEOUT_GRACE_S
        while True:
            _, reply = await self._request("POST", "/v1/calls", body)
            if reply["decision"] == "allow":
                return reply.get("approval"), reply.get("receipt")
            if reply["decision"] == "refuse":
                raise with_receipt(refusal(operation, reply), reply)
            left = None if end is None else max(0.0, end - loop.time())
            ask = await self.wait(reply["ask"]["id"], timeout=left)
            outcome = ask.get("outcome")
            if outcome == "approval_refused":
                raise with_receipt(ApprovalRefused(
                    operation, ask.get("by"), (ask.get("answer") or {}).get("note")), ask)
            if outcome == "approval_timed_out" or ask["status"] != "answered":
                raise with_receipt(ApprovalTimedOut(operation), ask)
            # Approved: the same call again uses the approval up and is allowed.

    def gated(
        self, operation: str, input: Any = None, work: dict[str, Any] | None = None,
        timeout_s: int | None = None, callback_url: str | None = None,
    ) -> Gated:
        """`async with aye.gated(op, input) as grant:` or `@aye.gated(op)` on an async
        function; `timeout_s` and `callback_url`: see call(). It waits for the approval either
        way, and afterwards reports what ran (`ran`, or `failed` with the exception's type).
        `grant` is the approval's id with its signed `.receipt` (None when not gated)."""
        return Gated(self, operation, input, work, timeout_s, callback_url)

    async def report(self, approval: str, outcome: str, detail: str | None = None
                     ) -> dict[str, Any]:
        """POST /v1/calls/outcome: what ran after this agent used `approval` (`ran`, `failed`
        or `not_run`; `not_run` within the grant's window makes it usable once more)."""
        body: dict[str, Any] = {"approval": approval, "outcome": outcome}
        if detail is not None:
            body["detail"] = detail[:500]
        _, reply = await self._once("POST", "/v1/calls/outcome", body)
        return dict(reply)

    async def keys(self) -> dict[str, Any]:
        """GET /v1/keys: the JWKS that verifies receipts (see verify_receipt)."""
        _, found = await self._request("GET", "/v1/keys")
        return dict(found)


def with_receipt(error: AyeError, reply: Mapping[str, Any]) -> AyeError:
    """The refusal with its signed receipt (`error.receipt`; None when it has none)."""
    error.receipt = reply.get("receipt")
    return error


@contextlib.asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[AyeClient]:
    """`async with connect(url, token) as aye:` an AyeClient, closed on the way out."""
    async with AyeClient(url, token) as client:
        yield client
