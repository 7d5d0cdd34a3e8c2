"""The Python client and remembered refusals, through the real app on SQLite and PostgreSQL:
after a person refuses a gated call, the identical call raises ApprovalRefused at once, with
`repeat`, who refused and why, without a new ask or any wait; another input is asked anew."""

from __future__ import annotations

import asyncio

import pytest

from aye_client import ApprovalRefused, connect
from bot.config import Config
from tests.conftest import AGENT_TOKEN, OPERATOR_HEADERS, Aye, StartAye
from tests.e2e.test_client_formats import open_ref

NOTE = "Not on a Friday."


async def asks_made(aye: Aye) -> int:
    resp = await aye.client.get("/v1/asks", headers=OPERATOR_HEADERS)
    return len((await resp.json())["asks"])


async def test_gated_after_a_refusal_raises_at_once_with_repeat(
    start_aye: StartAye, database_url: str
) -> None:
    gates = Config.model_validate({"gates": [{"operations": ["deploy."], "timeout": "2h"}]})
    aye = await start_aye(database_url, gates)
    async with connect(aye.url, AGENT_TOKEN) as client:
        async def deploy(version: str) -> None:
            async with client.gated("deploy.prod", {"version": version}):
                raise AssertionError("ran without an approval")

        first = asyncio.create_task(deploy("1.4.2"))
        assert (await aye.answer(await open_ref(aye), "refuse", note=NOTE))[0] == 200
        with pytest.raises(ApprovalRefused) as asked:
            await asyncio.wait_for(first, 10)
        assert asked.value.repeat is False

        # The identical call, here through the decorator (its arguments are the same input).
        @client.gated("deploy.prod")
        async def again(version: str) -> None:
            raise AssertionError("ran after a refusal")

        with pytest.raises(ApprovalRefused) as remembered:
            await asyncio.wait_for(again("1.4.2"), 2)
        refused = remembered.value
        assert (refused.repeat, refused.by, refused.note) == (True, "operator:local", NOTE)
        assert (refused.status, refused.code, refused.operation) == (
            403, "approval_refused", "deploy.prod")
        assert await asks_made(aye) == 1 and not aye.asks.parts.signals.waiters

        other = asyncio.create_task(deploy("1.4.3"))  # another input: asked anew
        await open_ref(aye)
        assert await asks_made(aye) == 2
        other.cancel()
        await asyncio.gather(other, return_exceptions=True)
