"""The Python client keeps an agent parked across a restart of aye, and never asks twice."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp

from aye_client import AyeClient
from tests.e2e.test_process import AGENT, OP, Api, free_port, start_server


async def test_a_parked_ask_survives_a_restart_and_is_created_once(tmp_path: Path, sqlite_url: str) -> None:
    url = sqlite_url
    port = free_port()
    first = await start_server(tmp_path, url, name="first", port=port)
    async with AyeClient(first.url, AGENT) as aye, aiohttp.ClientSession() as session:
        api = Api(session, first.url)
        asked = asyncio.create_task(aye.ask("Ship it?", options=["yes", "no"]))
        await _until(lambda: _parked(api), "the agent parked")
        first.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(first.proc.wait, 10) == 0
        # aye is down: the client keeps trying (refused connections), without failing the ask.
        done, _ = await asyncio.wait({asked}, timeout=0.5)
        assert not done
        second = await start_server(tmp_path, url, name="second", port=port)
        try:
            status, listed = await api.call("GET", "/v1/asks", token=OP)
            assert status == 200 and [a["question"] for a in listed["asks"]] == ["Ship it?"]
            ref = listed["asks"][0]["ref"]
            assert (await api.call("POST", f"/v1/asks/{ref}/answer", token=OP,
                                   json={"answer": "yes"}))[0] == 200
            assert await asyncio.wait_for(asked, 15) == "yes"
        finally:
            second.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(second.proc.wait, 10)


async def _parked(api: Api) -> bool:
    try:
        status, health = await api.call("GET", "/healthz")
    except aiohttp.ClientError:
        return False
    return status == 200 and health["parked"] >= 1


async def _until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(500):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not in time: {what}")
