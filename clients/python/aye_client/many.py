"""The client's waits on several asks (`POST /v1/asks/wait`) and its starts (`POST
/v1/starts`), behind AyeClient.wait_all, wait_any and start (aye_client.client)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from aye_client.errors import StartRefused, loop_time_of, start_refusal

MAX_IDS = 100  # the server's limit on one POST /v1/asks/wait


class Client(Protocol):
    """What these need of AyeClient (aye_client.client): its requests and its single wait."""

    async def _request(
        self, method: str, path: str, body: Any = None, until: float | None = None
    ) -> tuple[int, Any]: ...

    async def wait(self, ask_id: str, timeout: float | None = None) -> dict[str, Any]: ...


def ids_of(asks_or_ids: Iterable[str | Mapping[str, Any]]) -> list[str]:
    """Ids or refs as given, or the `id` of each ask (a dict, as create() returns it); one
    id or ask alone is taken as a list of one."""
    if isinstance(asks_or_ids, str | Mapping):
        asks_or_ids = [asks_or_ids]
    ids = [str(a["id"]) if isinstance(a, Mapping) else str(a) for a in asks_or_ids]
    if not 1 <= len(ids) <= MAX_IDS:
        raise ValueError(f"wait on 1 to {MAX_IDS} asks at once, not {len(ids)}")
    return ids


def _retry_until(views: Iterable[dict[str, Any]], end: float | None, now: float) -> float | None:
    """How long to keep trying across a restart of aye: while one of the open asks can still
    be answered (the latest deadline), and never past the caller's own bound."""
    deadlines = [loop_time_of(v.get("deadline"), now) for v in views if v["status"] == "open"]
    known = [d for d in deadlines if d is not None]
    latest = max(known) if known else None
    if end is None:
        return latest
    return end if latest is None else min(latest, end)


async def wait_many(
    client: Client, asks_or_ids: Iterable[str | Mapping[str, Any]], until: str,
    timeout: float | None, slice_s: float,
) -> list[dict[str, Any]]:
    """Park until all (or any) of the asks are closed, or `timeout` seconds have passed;
    each ask as the agent sees it, in the order given. A closed ask is read once and kept:
    only those still open are asked for again (a sensitive answer is erased by its first
    read), in requests of at most `slice_s` each (the server's own cap is 300 s)."""
    ids = ids_of(asks_or_ids)
    loop = asyncio.get_running_loop()
    end = None if timeout is None else loop.time() + max(0.0, timeout)
    closed: dict[int, dict[str, Any]] = {}
    latest: dict[int, dict[str, Any]] = {}
    retry_until = end
    while True:
        waiting = [i for i in range(len(ids)) if i not in closed]
        left = slice_s if end is None else max(0.0, min(slice_s, end - loop.time()))
        body = {"ids": [ids[i] for i in waiting], "until": until, "timeout": math.ceil(left)}
        _, reply = await client._request("POST", "/v1/asks/wait", body, until=retry_until)
        for i, view in zip(waiting, reply["asks"], strict=True):
            (latest if view["status"] == "open" else closed)[i] = dict(view)
        done = len(closed) == len(ids) if until == "all" else bool(closed)
        if done or (end is not None and loop.time() >= end):
            return [closed.get(i) or latest[i] for i in range(len(ids))]
        retry_until = _retry_until(latest.values(), end, loop.time())


async def start(
    client: Client, work: dict[str, Any], what: dict[str, Any], wait: bool,
    timeout: float | None,
) -> dict[str, Any]:
    """POST /v1/starts until the start is decided: the decision when allowed; a pending one
    when not waiting (`wait=False`) or once `timeout` has passed; StartRefused otherwise."""
    body = {"work": work, **{k: v for k, v in what.items() if v is not None}}
    loop = asyncio.get_running_loop()
    end = None if timeout is None else loop.time() + max(0.0, timeout)
    while True:
        _, reply = await client._request("POST", "/v1/starts", body)
        if reply["decision"] == "allow":
            return dict(reply)
        if reply["decision"] == "refuse":
            raise start_refusal(work, reply)
        if not wait:
            return dict(reply)
        left = None if end is None else max(0.0, end - loop.time())
        ask = await client.wait(reply["ask"]["id"], timeout=left)
        if ask["status"] == "open":
            return {"decision": "pending", "ask": ask}
        if ask["status"] == "withdrawn":
            raise StartRefused(work, "approval_withdrawn", approval=ask["id"])
        # Approved, refused or timed out: the same start again says which, with who and why.
