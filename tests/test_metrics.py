"""GET /metrics: the operator's token, the counters the event hub feeds, gauges of the shared
store (agreeing across two processes on one PostgreSQL), route patterns as labels, and the
scrape's time with 10,000 open asks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from ask_api.tokens import TokenBook
from bot.app import ASKS, create_app
from bot.config import Config
from bot.core.asks import new_ask_values
from bot.core.clock import Clock, ManualClock
from bot.core.responders import OPERATOR
from bot.metrics import METRICS, Metrics, read_store, setup
from store.asks import ASK_INSERT
from tests.conftest import (
    AGENT_HEADERS,
    AGENT_TOKEN,
    OPERATOR_HEADERS,
    OPERATOR_TOKEN,
    Aye,
    eventually,
    postgres_url,
    settings_for,
)

ESCALATING = {"gates": [{"operations": ["db."], "responders": ["operator:local"], "timeout": "1h",
                         "escalate": {"responders": ["operator:local"], "timeout": "1h"}}]}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
StartMetered = Callable[..., Awaitable[Aye]]


@pytest.fixture
async def start_metered() -> AsyncIterator[StartMetered]:
    """Like conftest's start_aye, with the metrics set up where create_app does not yet."""
    started: list[TestClient[Any, Any]] = []

    async def start(database_url: str, config: Config | None = None,
                    clock: Clock | None = None) -> Aye:
        config, clock = config or Config(), clock or Clock()
        book = TokenBook.build(config, OPERATOR_TOKEN, AGENT_TOKEN)
        app = create_app(settings_for(database_url), config, book, clock)
        if METRICS not in app:
            setup(app, app[ASKS], book)
        client: TestClient[Any, Any] = TestClient(TestServer(app))
        await client.start_server()
        started.append(client)
        return Aye(client, app, clock)

    yield start
    for client in reversed(started):
        await client.close()


def metrics_of(aye: Aye) -> Metrics:
    return aye.app[METRICS]


def parse(text: str) -> tuple[Samples, dict[str, str]]:
    """Every sample by (name, labels), and every family's type."""
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples, types


async def scrape(aye: Aye) -> Samples:
    resp = await aye.client.get("/metrics", headers=OPERATOR_HEADERS)
    assert resp.status == 200, await resp.text()
    return parse(await resp.text())[0]


def sample(aye: Aye, name: str, **labels: str) -> float | None:
    """One sample read straight from the app's registry (no store read, no HTTP)."""
    return metrics_of(aye).registry.get_sample_value(name, labels)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def routes(samples: Samples) -> set[str]:
    return {v for (name, labels) in samples if name == "aye_http_requests_total"
            for k, v in labels if k == "route"}


async def test_a_scrape_takes_the_operator_token_only(
    start_metered: StartMetered, database_url: str
) -> None:
    aye = await start_metered(database_url)
    for headers in ({}, AGENT_HEADERS, {"Authorization": f"Basic {OPERATOR_TOKEN}"},
                    {"Authorization": "Bearer wrong"}):
        resp = await aye.client.get("/metrics", headers=headers)
        assert resp.status == 401, headers
        assert (await resp.json())["error"] == "unauthorized"
        assert resp.headers["WWW-Authenticate"] == "Bearer"
    resp = await aye.client.get("/metrics", headers=OPERATOR_HEADERS)
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples, types = parse(await resp.text())
    assert value(samples, "aye_store_up") == 1
    assert value(samples, "aye_asks_open", kind="question") == 0
    assert types["aye_answer_seconds"] == "histogram"
    assert types["aye_http_request_seconds"] == "histogram"
    assert types["aye_asks_created"] == "counter"
    assert ("aye_answer_seconds_bucket", frozenset({("kind", "question"), ("le", "+Inf")})) in samples


async def test_counters_move_as_asks_are_created_answered_withdrawn_and_expire(
    start_metered: StartMetered, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_metered(database_url, Config.model_validate(ESCALATING), manual_clock)
    one = await aye.ask(question="Ship?", options=["yes", "no"])
    two = await aye.ask(question="Why?")
    await aye.ask(question="Soon?", timeout_s=60)
    resp = await aye.client.post("/v1/calls", json={"operation": "db.drop"}, headers=AGENT_HEADERS)
    assert resp.status == 202
    manual_clock.advance(5)
    assert (await aye.answer(one["ref"], "yes"))[0] == 200
    await aye.client.delete(f"/v1/asks/{two['id']}", headers=AGENT_HEADERS)
    manual_clock.advance(3600)
    await aye.tick()  # "Soon?" expires 3545 s late; the approval escalates on time

    async def counted() -> bool:
        return sample(aye, "aye_clock_lag_seconds_count", action="escalate") == 1

    await eventually(counted)
    samples = await scrape(aye)
    assert value(samples, "aye_asks_created_total", kind="question") == 3
    assert value(samples, "aye_asks_created_total", kind="approval") == 1
    assert value(samples, "aye_asks_closed_total", kind="question", status="answered") == 1
    assert value(samples, "aye_asks_closed_total", kind="question", status="withdrawn") == 1
    assert value(samples, "aye_asks_closed_total", kind="question", status="expired") == 1
    assert value(samples, "aye_answer_seconds_count", kind="question") == 1
    assert value(samples, "aye_answer_seconds_sum", kind="question") == pytest.approx(5)
    assert value(samples, "aye_clock_lag_seconds_sum", action="expire") == pytest.approx(3545)
    assert value(samples, "aye_asks_open", kind="approval") == 1
    assert value(samples, "aye_asks_open", kind="question") == 0
    assert value(samples, "aye_clock_overdue_seconds") == 0


async def test_parked_waits_and_streams_are_this_process_own(
    start_metered: StartMetered, database_url: str
) -> None:
    aye = await start_metered(database_url)
    asked = await aye.ask(question="Hold on?")
    samples = await scrape(aye)
    assert value(samples, "aye_waits_parked") == 0
    assert value(samples, "aye_event_streams") == 0  # the metrics' own reader is not a stream
    waiting = asyncio.create_task(aye.wait(asked["id"], timeout=30))
    async with aye.client.get("/v1/events", headers=OPERATOR_HEADERS) as stream:
        assert stream.status == 200
        await aye.parked(1)
        samples = await scrape(aye)
        assert value(samples, "aye_waits_parked") == 1
        assert value(samples, "aye_event_streams") == 1
        await aye.answer(asked["ref"], "now")
        assert (await asyncio.wait_for(waiting, 5))["status"] == "answered"


async def test_route_labels_are_patterns_and_every_status_is_seen(
    start_metered: StartMetered, database_url: str
) -> None:
    aye = await start_metered(database_url)
    asked = await aye.ask(question="Which?")
    await aye.get(asked["ref"])
    await aye.get(asked["id"])
    assert (await aye.client.get("/v1/asks/nothing", headers=AGENT_HEADERS)).status == 404
    assert (await aye.client.get("/v1/asks")).status == 401  # refused by the auth middleware
    assert (await aye.client.get(f"/not/{asked['id']}")).status == 404
    samples = await scrape(aye)
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/v1/asks/{id}", status="200") == 2
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/v1/asks/{id}", status="404") == 1
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/v1/asks", status="401") == 1
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="(no route)", status="404") == 1
    assert value(samples, "aye_http_request_seconds_count", route="/v1/asks/{id}") == 3
    assert not any(asked["id"] in r or asked["ref"] in r for r in routes(samples))


async def test_surface_call_results_are_counted(start_metered: StartMetered, database_url: str) -> None:
    aye = await start_metered(database_url)
    metrics_of(aye).surface_call("slack", "rate_limited")
    metrics_of(aye).surface_call("slack", "ok")
    metrics_of(aye).surface_call("slack", "ok")
    samples = await scrape(aye)
    assert value(samples, "aye_surface_calls_total", surface="slack", result="ok") == 2
    assert value(samples, "aye_surface_calls_total", surface="slack", result="rate_limited") == 1


async def test_the_open_gauge_agrees_across_two_processes_on_postgresql(
    start_metered: StartMetered, pg_session_url: str | None
) -> None:
    url = await postgres_url(pg_session_url)
    one, two = await start_metered(url), await start_metered(url)
    for _ in range(3):
        await one.ask(question="On one?")
    asked = await two.ask(question="On two?")
    await one.answer(asked["ref"], "yes")
    first, second = await scrape(one), await scrape(two)
    assert value(first, "aye_asks_open", kind="question") == 3
    assert value(second, "aye_asks_open", kind="question") == 3

    # Each process counts every change it sees on the store (its own and the other's):
    # counters agree across processes rather than add up.
    async def both_saw_all() -> bool:
        return all(sample(aye, "aye_asks_created_total", kind="question") == 4
                   and sample(aye, "aye_asks_closed_total", kind="question", status="answered") == 1
                   for aye in (one, two))

    await eventually(both_saw_all)


OPEN_ASKS = 10_000


async def test_scrape_time_with_10000_open_asks(
    start_metered: StartMetered, database_url: str
) -> None:
    aye = await start_metered(database_url)
    now = aye.clock.now()
    rows = [
        {**new_ask_values("default", "question", None, [OPERATOR], now, now + 3600),
         "question": f"Open {n}?", "sensitive": False, "erased": False}
        for n in range(OPEN_ASKS)
    ]
    async with aye.asks.store.write() as conn:
        await conn.execute(ASK_INSERT, rows)
    await scrape(aye)  # warm: connections, statement caches
    store_ms, scrape_ms = [], []
    for _ in range(5):
        started = time.perf_counter()
        await read_store(aye.asks)
        store_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        samples = await scrape(aye)
        scrape_ms.append((time.perf_counter() - started) * 1000)
    assert value(samples, "aye_asks_open", kind="question") == OPEN_ASKS
    store = "postgresql" if aye.asks.store.is_postgres else "sqlite"
    print(f"\n/metrics with {OPEN_ASKS} open asks on {store}: store reads "
          f"{min(store_ms):.1f}-{max(store_ms):.1f} ms, whole scrape over HTTP "
          f"{min(scrape_ms):.1f}-{max(scrape_ms):.1f} ms")
