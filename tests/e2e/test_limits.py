"""Per-agent limits (max_open, asks_per_minute): counted by the store, across processes on
PostgreSQL, refused with 429 and Retry-After before anything is created or posted."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from pydantic import ValidationError

from ask_api.tokens import TokenBook
from bot.config import Config
from core.app.timing import ManualClock
from tests.conftest import OPERATOR_HEADERS, OPERATOR_TOKEN, Aye, StartAye, eventually
from tests.e2e.test_gates import RecordingSurface

AGENT = {"Authorization": "Bearer token-lim"}


def limited(monkeypatch: pytest.MonkeyPatch, **limits: Any) -> Config:
    monkeypatch.setenv("AYE_TOKEN_LIM", "token-lim")
    return Config.model_validate({
        "agents": [{"name": "lim", "token_env": "AYE_TOKEN_LIM", **limits}],
        "gates": [{"operations": ["deploy."], "responders": ["operator:local"]}],
    })


async def start(start_aye: StartAye, url: str, cfg: Config, clock: ManualClock | None = None) -> Aye:
    return await start_aye(url, cfg, clock, tokens=TokenBook.build(cfg, OPERATOR_TOKEN, None))


async def create(aye: Aye, question: str = "q?") -> Any:
    resp = await aye.client.post("/v1/asks", json={"question": question}, headers=AGENT)
    return resp.status, resp.headers.get("Retry-After"), await resp.json()


async def test_max_open_refuses_until_one_closes(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await start(start_aye, database_url, limited(monkeypatch, max_open=2))
    surface = QuestionsPosted()
    aye.asks.add_surface(surface)
    first = (await create(aye))[2]
    second = (await create(aye))[2]
    status, retry, body = await create(aye, "one too many")
    assert (status, body["error"]) == (429, "too_many_open_asks") and retry is not None
    listed = await (await aye.client.get("/v1/asks", headers=AGENT)).json()
    assert len(listed["asks"]) == 2  # nothing created
    # Nothing posted: once the outbox has sent everything it holds, only the two asks made were.
    await eventually(lambda: outbox_empty(aye))
    assert sorted(surface.delivered) == sorted([(first["id"], "post"), (second["id"], "post")])
    assert "one too many" not in surface.questions
    await aye.answer(first["ref"], "done")
    assert (await create(aye))[0] == 201


class QuestionsPosted(RecordingSurface):
    """Records the question of every ask it is handed, too (a refused one has no id)."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[str] = []

    async def deliver(self, ask: Any, action: str, payload: dict[str, Any] | None) -> None:
        self.questions.append(ask.question)
        await super().deliver(ask, action, payload)


async def outbox_empty(aye: Aye) -> bool:
    """The operator's /metrics says no outbox row waits to be delivered."""
    resp = await aye.client.get("/metrics", headers=OPERATOR_HEADERS)
    found = re.search(r"^aye_outbox_pending (\S+)$", await resp.text(), re.M)
    return found is not None and float(found.group(1)) == 0


async def test_asks_calls_and_starts_share_the_minute(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manual_clock.advance(-(manual_clock.now() % 60) + 1)  # one second into a minute
    aye = await start(start_aye, database_url, limited(monkeypatch, asks_per_minute=3), manual_clock)
    assert (await create(aye))[0] == 201
    resp = await aye.client.post("/v1/calls", json={"operation": "read.only"}, headers=AGENT)
    assert resp.status == 200  # not gated, but counted
    resp = await aye.client.post("/v1/starts", headers=AGENT,
                                 json={"work": {"github": {"repo": "o/r", "number": 1}}})
    assert resp.status == 200
    status, retry, body = await create(aye)
    assert (status, body["error"], retry) == (429, "rate_limited", "59")
    resp = await aye.client.post("/v1/calls", json={"operation": "deploy.prod"}, headers=AGENT)
    assert resp.status == 429 and resp.headers["Retry-After"] == "59"
    manual_clock.advance(60)
    assert (await create(aye))[0] == 201


async def test_the_count_is_the_stores_across_processes(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "postgresql" not in database_url:
        pytest.skip("one process per SQLite file (a second aye serve refuses to start)")
    cfg = limited(monkeypatch, asks_per_minute=5)
    one, two = await start(start_aye, database_url, cfg), await start(start_aye, database_url, cfg)
    results = await asyncio.gather(*(create(one if i % 2 else two, f"q{i}") for i in range(12)))
    assert [status for status, _, _ in results].count(201) == 5
    listed = await (await one.client.get("/v1/asks", headers=AGENT)).json()
    assert len(listed["asks"]) == 5


@pytest.mark.parametrize("keys", [{"max_open": 0}, {"asks_per_minute": 0}, {"max_open": "5"}])
def test_limits_are_checked_at_start(monkeypatch: pytest.MonkeyPatch, keys: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        limited(monkeypatch, **keys)


async def test_the_open_count_follows_every_close(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from store import rates

    aye = await start(start_aye, database_url, limited(monkeypatch, max_open=3), manual_clock)
    asks = [(await create(aye, f"q{i}"))[2] for i in range(3)]
    await aye.answer(asks[0]["ref"], "done")
    await aye.client.delete(f"/v1/asks/{asks[1]['id']}", headers=AGENT)
    resp = await aye.client.post("/v1/asks", json={"question": "soon", "timeout_s": 60}, headers=AGENT)
    assert resp.status == 201
    manual_clock.advance(61)
    await aye.tick()
    async with aye.asks.parts.store.write() as conn:
        kept = await rates.bump_open(conn, "lim", 0, aye.asks.parts.store.is_postgres)
        counted = await rates.open_count(conn, "lim")
    assert kept == counted == 1
    assert [(await create(aye, f"r{i}"))[0] for i in range(3)] == [201, 201, 429]
