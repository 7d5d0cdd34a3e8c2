"""POST /v1/asks/wait: parking on several asks at once, woken by push (in one process and
across two on PostgreSQL), in the order asked; bad input named by field."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ask_api.tokens import TokenBook
from bot.config import Config
from tests.conftest import AGENT_HEADERS, OPERATOR_TOKEN, Aye, StartAye


async def wait_many(aye: Aye, ids: list[str], expect: int = 200, headers: Any = None,
                    **body: Any) -> Any:
    resp = await aye.client.post("/v1/asks/wait", json={"ids": ids, **body},
                                 headers=headers or AGENT_HEADERS)
    data = await resp.json()
    assert resp.status == expect, data
    return data


async def three(aye: Aye) -> list[dict[str, Any]]:
    return [await aye.ask(question=f"q{i}?", options=["yes", "no"]) for i in range(3)]


async def test_all_waits_for_every_ask_in_the_order_asked(aye: Aye) -> None:
    asks = await three(aye)
    ids = [asks[2]["id"], asks[0]["ref"], asks[1]["id"]]
    waiting = asyncio.create_task(wait_many(aye, ids, until="all", timeout=30))
    await aye.parked(3)
    await aye.answer(asks[0]["ref"], "yes")
    await aye.answer(asks[2]["ref"], "no")
    await asyncio.sleep(0.05)
    assert not waiting.done()  # one is still open
    await aye.answer(asks[1]["ref"], "yes")
    got = await asyncio.wait_for(waiting, 3)
    assert [a["id"] for a in got["asks"]] == [asks[2]["id"], asks[0]["id"], asks[1]["id"]]
    assert [a["answer"]["value"] for a in got["asks"]] == ["no", "yes", "yes"]


async def test_any_returns_on_the_first(aye: Aye) -> None:
    asks = await three(aye)
    waiting = asyncio.create_task(wait_many(aye, [a["id"] for a in asks], until="any", timeout=30))
    await aye.parked(3)
    await aye.answer(asks[1]["ref"], "no")
    got = await asyncio.wait_for(waiting, 3)
    assert [a["status"] for a in got["asks"]] == ["open", "answered", "open"]


async def test_a_timeout_returns_them_as_they_stand(aye: Aye) -> None:
    asks = await three(aye)
    got = await wait_many(aye, [a["id"] for a in asks], timeout=0)
    assert [a["status"] for a in got["asks"]] == ["open"] * 3
    got = await wait_many(aye, [asks[0]["id"]], timeout=1)
    assert got["asks"][0]["status"] == "open"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"ids": []}, "ids"), ({"ids": ["x"] * 101}, "ids"), ({"ids": ["q1"], "until": "most"}, "until"),
     ({"ids": ["q1"], "timeout": 301}, "timeout"), ({"ids": [1]}, "ids[0]")],
)
async def test_bad_bodies_name_the_field(aye: Aye, body: dict[str, Any], field: str) -> None:
    await aye.ask(question="q?")
    resp = await aye.client.post("/v1/asks/wait", json=body, headers=AGENT_HEADERS)
    data = await resp.json()
    assert (resp.status, data["field"]) == (422, field), data


async def test_an_unknown_or_another_agents_id_is_404_naming_it(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AYE_TOKEN_A", "token-a")
    monkeypatch.setenv("AYE_TOKEN_B", "token-b")
    config = Config.model_validate({"agents": [
        {"name": "a", "token_env": "AYE_TOKEN_A"}, {"name": "b", "token_env": "AYE_TOKEN_B"}]})
    aye = await start_aye(database_url, config, tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    a, b = {"Authorization": "Bearer token-a"}, {"Authorization": "Bearer token-b"}
    mine = await aye.ask(headers=b, question="b's")
    theirs = await aye.ask(headers=a, question="a's")
    got = await wait_many(aye, [mine["id"], theirs["id"]], 404, headers=b)
    assert got["field"] == "ids[1]"
    got = await wait_many(aye, ["q99999", mine["id"]], 404, headers=b)
    assert got["field"] == "ids[0]"


async def test_woken_across_two_processes(start_aye: StartAye, database_url: str) -> None:
    if "postgresql" not in database_url:
        pytest.skip("one process per SQLite file (a second aye serve refuses to start)")
    one, two = await start_aye(database_url), await start_aye(database_url)
    asks = await three(one)
    waiting = asyncio.create_task(wait_many(two, [a["id"] for a in asks], until="all", timeout=30))
    await two.parked(3)
    for ask in asks:
        await one.answer(ask["ref"], "yes")
    got = await asyncio.wait_for(waiting, 3)
    assert [a["status"] for a in got["asks"]] == ["answered"] * 3
