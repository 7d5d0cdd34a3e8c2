"""Creates made at the same time share one transaction (core/app/batch.py): each still gets the
answer it would have had alone — a limit crossed mid-batch, a repeated key, a pending approval of
the same call — and every ask made is posted, counted and streamed once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.app import batch
from tests.conftest import OPERATOR_HEADERS, StartAye, eventually
from tests.e2e.test_gates import RecordingSurface
from tests.e2e.test_limits import AGENT, create, limited, start


async def test_a_limit_crossed_inside_a_batch_refuses_only_the_asks_past_it(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await start(start_aye, database_url, limited(monkeypatch, max_open=5))
    surface = RecordingSurface()
    aye.asks.add_surface(surface)
    results = await asyncio.gather(*(create(aye, f"q{i}?") for i in range(12)))
    statuses = sorted(status for status, _, _ in results)
    assert statuses == [201] * 5 + [429] * 7
    listed = await (await aye.client.get("/v1/asks", headers=AGENT)).json()
    assert len(listed["asks"]) == 5
    made = {body["id"] for status, _, body in results if status == 201}

    async def posted() -> bool:
        return {ask_id for ask_id, _ in surface.delivered} >= made

    await eventually(posted)
    assert {ask_id for ask_id, _ in surface.delivered} == made  # each posted once


async def test_a_rate_crossed_inside_a_batch_refuses_only_the_asks_past_it(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await start(start_aye, database_url, limited(monkeypatch, asks_per_minute=5))
    results = await asyncio.gather(*(create(aye, f"q{i}?") for i in range(12)))
    assert sorted(status for status, _, _ in results) == [201] * 5 + [429] * 7
    assert {body["error"] for status, _, body in results if status == 429} == {"rate_limited"}


async def test_the_same_key_at_once_makes_one_ask(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await start(start_aye, database_url, limited(monkeypatch))
    body = {"question": "Once?", "key": "k-1"}
    replies = await asyncio.gather(*(
        aye.client.post("/v1/asks", json=body, headers=AGENT) for _ in range(8)
    ))
    seen = [(r.status, (await r.json())["id"]) for r in replies]
    assert sorted(s for s, _ in seen) == [200] * 7 + [201]
    assert len({i for _, i in seen}) == 1
    # Other asks made in the same instant are not held back by the repeated key.
    others = await asyncio.gather(*(create(aye, f"other {i}?") for i in range(6)))
    assert [s for s, _, _ in others] == [201] * 6


async def test_asks_made_together_get_distinct_refs_and_one_event_each(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await start(start_aye, database_url, limited(monkeypatch))
    results = await asyncio.gather(*(create(aye, f"q{i}?") for i in range(40)))
    made: list[dict[str, Any]] = [body for _, _, body in results]
    assert len({a["ref"] for a in made}) == 40
    # Refs are decimal, so none reads like a word; each one, in any case, finds its ask.
    assert all(a["ref"][0] == "q" and a["ref"][1:].isdigit() for a in made)
    for ask in made[-3:]:
        assert (await aye.get(ask["ref"].upper(), operator=True))["id"] == ask["id"]
    for ask in made[:5]:
        view = await aye.get(ask["id"], operator=True)
        assert [e["event"] for e in view["history"]] == ["created"]
        assert view["question"] == ask["question"]
    resp = await aye.client.get("/v1/events?last_event_id=0", headers=OPERATOR_HEADERS)
    seen: list[str] = []
    async for line in resp.content:
        if line.startswith(b"data:"):
            seen.append(line.decode())
        if len(seen) == 40:
            break
    resp.close()
    assert sum(ask["id"] in frame for ask in made for frame in seen) == 40


async def test_a_batch_is_one_transaction(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await start(start_aye, database_url, limited(monkeypatch))
    writes = 0
    real = aye.asks.parts.store.write

    def counting() -> Any:
        nonlocal writes
        writes += 1
        return real()

    monkeypatch.setattr(aye.asks.parts.store, "write", counting)
    results = await asyncio.gather(*(create(aye, f"q{i}?") for i in range(30)))
    assert [s for s, _, _ in results] == [201] * 30
    assert writes < 30 and batch.MAX_BATCH >= 30


async def test_batches_of_several_agents_in_two_processes_never_deadlock(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    if "postgresql" not in database_url:
        pytest.skip("one process per SQLite file (a second aye serve refuses to start)")
    from ask_api.tokens import TokenBook
    from bot.config import Config
    from tests.conftest import OPERATOR_TOKEN

    monkeypatch.setenv("AYE_TOKEN_A", "token-a")
    monkeypatch.setenv("AYE_TOKEN_B", "token-b")
    cfg = Config.model_validate({"agents": [{"name": "a", "token_env": "AYE_TOKEN_A"},
                                            {"name": "b", "token_env": "AYE_TOKEN_B"}]})
    one, two = [await start_aye(database_url, cfg, tokens=TokenBook.build(cfg, OPERATOR_TOKEN, None))
                for _ in range(2)]
    caplog.set_level("INFO", logger="aye.asks")

    async def make(aye: Any, token: str, i: int) -> int:
        resp = await aye.client.post("/v1/asks", json={"question": f"q{i}?"},
                                     headers={"Authorization": f"Bearer {token}"})
        return resp.status

    for round_ in range(10):
        # Each process sees the agents in the opposite order: locks taken in the order seen
        # would cross.
        order = [("token-a", "token-b"), ("token-b", "token-a")]
        statuses = await asyncio.gather(*(
            make(aye, token, round_ * 10 + i)
            for aye, tokens in zip((one, two), order, strict=True)
            for i, token in enumerate(tokens * 2)
        ))
        assert statuses == [201] * 8
    assert not [r for r in caplog.records if "fell back" in r.getMessage()]
