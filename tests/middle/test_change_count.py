"""Limits counted one way, `Change.count`, on a real store, both stores: the counts go with the
change's transaction (a change rolled back counts nothing), and a call's hit, counted in a
change of its own, stands whatever the call then meets."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.app import gating
from core.app.parts import Parts
from core.app.timing import ManualClock
from core.domain.limits import RATE_LIMITED, TOO_MANY_OPEN, Limited, window
from core.domain.policy import Defaults, Gate
from core.domain.types import AgentInfo
from store.db import Store
from store.rates import OPEN, RATES

AGENT = AgentInfo("a", max_open=1, asks_per_minute=3)
GATE = Gate.model_validate({"operations": ["deploy"], "responders": ["operator:local"]})


@pytest.fixture
async def parts(database_url: str) -> AsyncIterator[Parts]:
    store = Store(database_url)
    await store.open()
    clock = ManualClock(start=600_000.0)  # the start of a minute: every count below is in it
    built = Parts.build(store, Defaults(), gates=[GATE], clock=clock)
    try:
        yield built
    finally:
        await built.batcher.close()
        await store.close()


async def counts(parts: Parts, agent: str = "a") -> tuple[int, int]:
    """The agent's hits this minute and its open asks, as the store holds them."""
    async with parts.store.read() as conn:
        hits = await conn.scalar(RATES.select().with_only_columns(RATES.c.hits).where(
            RATES.c.agent == agent, RATES.c.window == window(parts.clock.now())))
        open_ = await conn.scalar(OPEN.select().with_only_columns(OPEN.c.open).where(
            OPEN.c.agent == agent))
    return int(hits or 0), int(open_ or 0)


async def test_a_change_counts_hits_and_open_asks_alone_or_at_once(parts: Parts) -> None:
    async with parts.change() as ch:
        await ch.count("a", AGENT, hits=1)
    assert await counts(parts) == (1, 0)
    async with parts.change() as ch:
        await ch.count("a", AGENT, hits=2, new_open=1)
    assert await counts(parts) == (3, 1)
    async with parts.change() as ch:  # an ask of no agent's limits: its open ask, no hit
        await ch.count("a", None, hits=5, new_open=-1)
    assert await counts(parts) == (3, 0)


async def test_a_count_past_a_limit_rolls_its_change_back(parts: Parts) -> None:
    async with parts.change() as ch:
        await ch.count("a", AGENT, hits=3, new_open=1)
    with pytest.raises(Limited) as rate:
        async with parts.change() as ch:
            await ch.count("a", AGENT, hits=1)
    assert rate.value.code == RATE_LIMITED
    with pytest.raises(Limited) as open_:
        async with parts.change() as ch:
            await ch.count("a", AGENT, new_open=1)
    assert open_.value.code == TOO_MANY_OPEN
    assert await counts(parts) == (3, 1)  # neither refusal counted


async def test_a_calls_hit_stands_when_the_call_is_refused_or_shares_an_ask(parts: Parts) -> None:
    first = await gating.call(parts, AGENT, "deploy", {"n": 1}, None)
    assert first.decision == gating.PENDING and await counts(parts) == (1, 1)
    with pytest.raises(Limited) as full:  # its approval would pass max_open: not made
        await gating.call(parts, AGENT, "deploy", {"n": 2}, None)
    assert full.value.code == TOO_MANY_OPEN and await counts(parts) == (2, 1)
    shared = await gating.call(parts, AGENT, "deploy", {"n": 1}, None)
    assert shared.decision == gating.PENDING and shared.ask is not None
    assert first.ask is not None and shared.ask.id == first.ask.id
    assert await counts(parts) == (3, 1)
    with pytest.raises(Limited) as rate:
        await gating.call(parts, AGENT, "deploy", {"n": 1}, None)
    assert rate.value.code == RATE_LIMITED and await counts(parts) == (3, 1)
