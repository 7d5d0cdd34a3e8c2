"""GET /metrics in the real app: the operator's token, the counts of what this process did (fed
by the core and the delivery loop through the Tally it subscribes to the service, never by
reading the event hub), gauges
of the shared store (agreeing across two processes on one PostgreSQL, while each counts its own
work), route patterns as labels, surface delivery results against the fake Slack and GitHub,
and the scrape's time with 10,000 open asks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ask_api.tokens import TokenBook
from bot.app import create_app
from bot.config import Config
from bot.connections import Limits, serve
from bot.metrics import METRICS, Metrics, read_store
from core.app.asking import new_ask_values
from core.app.ports import POST, GiveUp, RetryLater
from core.app.timing import ManualClock
from core.domain.responders import OPERATOR
from handlers.slack import pacing
from handlers.slack.pacing import Pace
from store.asks import ASK_INSERT
from store.models import AskRow
from tests.conftest import (
    AGENT_HEADERS,
    AGENT_TOKEN,
    OPERATOR_HEADERS,
    OPERATOR_TOKEN,
    Aye,
    StartAye,
    eventually,
    postgres_url,
    settings_for,
)
from tests.e2e.test_gates import RecordingSurface
from tests.e2e.test_github_e2e import ISSUE_COMMENTS, WORK, app_env
from tests.e2e.test_github_e2e import config as gh_config
from tests.e2e.test_slack_surface import start as start_slack
from tests.fake_github import FakeGitHub
from tests.fake_slack import FakeSlack

ESCALATING = {
    "defaults": {"question_remind_after": "10m"},
    "gates": [{"operations": ["db."], "responders": ["operator:local"], "timeout": "1h",
               "escalate": {"responders": ["operator:local"], "timeout": "1h"}}],
}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


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


def calls(aye: Aye, surface: str) -> dict[str, float]:
    """aye_surface_calls_total of `surface` by result, those above zero."""
    return {result: n for result in ("ok", "rate_limited", "paced", "error", "gave_up",
                                     "not_running")
            if (n := sample(aye, "aye_surface_calls_total", surface=surface, result=result))}


async def test_a_scrape_takes_the_operator_token_only(start_aye: StartAye, database_url: str) -> None:
    aye = await start_aye(database_url)
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
    # Every surface's results start at zero; the 401s above were counted.
    assert value(samples, "aye_surface_calls_total", surface="callback", result="rate_limited") == 0
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/metrics", status="401") == 4
    # Not part of the /v1 API: its document does not name it.
    document = await (await aye.client.get("/v1/openapi.json", headers=OPERATOR_HEADERS)).json()
    assert "/metrics" not in document["paths"]


async def test_counters_move_as_asks_are_created_answered_withdrawn_and_expire(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_aye(database_url, Config.model_validate(ESCALATING), manual_clock)
    one = await aye.ask(question="Ship?", options=["yes", "no"])
    two = await aye.ask(question="Why?")
    await aye.ask(question="Soon?", timeout_s=60)
    await aye.ask(question="Later?")  # reminded after 10 minutes
    resp = await aye.client.post("/v1/calls", json={"operation": "db.drop"}, headers=AGENT_HEADERS)
    assert resp.status == 202
    manual_clock.advance(5)
    assert (await aye.answer(one["ref"], "yes"))[0] == 200
    await aye.client.delete(f"/v1/asks/{two['id']}", headers=AGENT_HEADERS)
    manual_clock.advance(3600)
    # "Soon?" expires 3545 s late, "Later?" is reminded 3005 s late, the approval escalates
    # 5 s late: each once, by this tick or by the clock loop, whichever gets there first.
    await aye.tick()

    async def fired() -> bool:
        return all(sample(aye, "aye_clock_lag_seconds_count", action=action) == 1
                   for action in ("expire", "remind", "escalate"))

    await eventually(fired)
    samples = await scrape(aye)
    assert value(samples, "aye_asks_created_total", kind="question") == 4
    assert value(samples, "aye_asks_created_total", kind="approval") == 1
    assert value(samples, "aye_asks_closed_total", kind="question", status="answered") == 1
    assert value(samples, "aye_asks_closed_total", kind="question", status="withdrawn") == 1
    assert value(samples, "aye_asks_closed_total", kind="question", status="expired") == 1
    assert value(samples, "aye_answer_seconds_count", kind="question") == 1
    assert value(samples, "aye_answer_seconds_sum", kind="question") == pytest.approx(5)
    assert value(samples, "aye_clock_lag_seconds_sum", action="expire") == pytest.approx(3545)
    assert value(samples, "aye_clock_lag_seconds_sum", action="remind") == pytest.approx(3005)
    assert value(samples, "aye_clock_lag_seconds_sum", action="escalate") == pytest.approx(5)
    assert value(samples, "aye_asks_open", kind="approval") == 1
    assert value(samples, "aye_asks_open", kind="question") == 1
    assert value(samples, "aye_clock_overdue_seconds") == 0
    # Counted as the core said it, not by reading the event hub: with no stream open, the
    # hub has nobody to read the store for.
    assert metrics_of(aye).counts in aye.asks.parts.tally
    assert not aye.asks.parts.stream.subscribers


async def test_parked_waits_and_streams_are_this_process_own(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url)
    asked = await aye.ask(question="Hold on?")
    samples = await scrape(aye)
    assert value(samples, "aye_waits_parked") == 0
    assert value(samples, "aye_event_streams") == 0
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
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url)
    asked = await aye.ask(question="Which?")
    await aye.get(asked["ref"])
    await aye.get(asked["id"])
    assert (await aye.client.get("/v1/asks/nothing", headers=AGENT_HEADERS)).status == 404
    assert (await aye.client.get("/v1/asks")).status == 401  # refused by the auth middleware
    assert (await aye.client.get(f"/not/{asked['id']}")).status == 404
    bad = await aye.client.post("/v1/asks", data=b"{not json", headers=AGENT_HEADERS)
    assert bad.status == 400  # answered by the errors middleware
    samples = await scrape(aye)
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/v1/asks/{id}", status="200") == 2
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/v1/asks/{id}", status="404") == 1
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="/v1/asks", status="401") == 1
    assert value(samples, "aye_http_requests_total",
                 method="GET", route="(no route)", status="404") == 1
    assert value(samples, "aye_http_requests_total",
                 method="POST", route="/v1/asks", status="400") == 1
    assert value(samples, "aye_http_request_seconds_count", route="/v1/asks/{id}") == 3
    assert not any(asked["id"] in r or asked["ref"] in r for r in routes(samples))


async def test_a_body_too_slow_for_the_guard_is_counted_408(tmp_path: Path) -> None:
    """As `aye serve` runs it: the connections' guard outside the metrics' middleware."""
    config = Config()
    app = create_app(settings_for(f"sqlite+aiosqlite:///{tmp_path}/aye.db"), config,
                     TokenBook.build(config, OPERATOR_TOKEN, AGENT_TOKEN))
    runner, site = await serve(app, "127.0.0.1", 0, Limits(100, 0.5, 0.5), access_log=None,
                               shutdown_timeout=0.5)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        writer.write(f"POST /v1/asks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {AGENT_TOKEN}"
                     "\r\nContent-Length: 1000\r\n\r\n{".encode())
        stalled = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        async with aiohttp.ClientSession(headers=OPERATOR_HEADERS) as session:
            async with session.get(f"http://127.0.0.1:{site.port}/metrics") as resp:
                samples = parse(await resp.text())[0]
    finally:
        await runner.cleanup()
    assert stalled.startswith(b"HTTP/1.1 408 ")
    assert value(samples, "aye_http_requests_total",
                 method="POST", route="/v1/asks", status="408") == 1


class Scripted(RecordingSurface):
    """A surface whose deliveries end as scripted: each raises the next exception given (None:
    delivered); past the script, delivered."""

    name = "scripted"

    def __init__(self, *outcomes: Exception | None) -> None:
        super().__init__()
        self.outcomes = list(outcomes)

    def reaches(self, responder: Any, work: dict[str, Any] | None) -> bool:
        return False

    def wants(self, ask: AskRow, action: str) -> bool:
        return action == POST

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome


async def test_each_delivery_s_result_is_counted(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_aye(database_url, clock=manual_clock)
    aye.asks.add_surface(Scripted(RuntimeError("down"), None, GiveUp("gone"),
                                  RetryLater(3600, "the far side is busy")))

    async def counted(**expected: float) -> None:
        async def check() -> bool:
            aye.asks.parts.signals.outbox_poke.set()  # a ManualClock ends the loop's sleep only when poked
            return calls(aye, "scripted") == expected

        await eventually(check)

    await aye.ask(question="First?")
    await counted(error=1)  # retried with backoff, 2 s on
    manual_clock.advance(10)
    await counted(error=1, ok=1)
    await aye.ask(question="Second?")
    await counted(error=1, ok=1, gave_up=1)
    await aye.ask(question="Third?")
    await counted(error=2, ok=1, gave_up=1)
    aye.asks.parts.places.remove("scripted")  # off here: its rows wait for a process running it
    manual_clock.advance(3601)
    await counted(error=2, ok=1, gave_up=1, not_running=1)


async def test_slack_s_429_and_its_pacing_are_counted_apart(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Strict pacing held in place for 0.1 s at most: a burst's later posts go back to the
    # outbox for their slot (paced, no call made), and the fake refuses anything faster.
    monkeypatch.setattr(pacing, "DEFAULT_PACE", Pace(interval=0.2, burst=1, max_wait=0.1))
    fake_slack.pace_posts(0.2, burst=1)
    aye = await start_slack(start_aye, database_url, fake_slack)
    for n in range(4):
        await aye.ask(question=f"Burst {n}?")

    async def all_posted() -> bool:
        return calls(aye, "slack").get("ok") == 4

    await eventually(all_posted, timeout=10)
    assert calls(aye, "slack")["paced"] >= 1
    assert "rate_limited" not in calls(aye, "slack") and fake_slack.rate_limited() == []

    # A 429 whose Retry-After is too long to wait out in place goes back to the outbox.
    fake_slack.fail_next("chat.postMessage", retry_after=30)
    await aye.ask(question="Refused?")

    async def limited() -> bool:
        return calls(aye, "slack").get("rate_limited") == 1

    await eventually(limited)
    assert len(fake_slack.rate_limited()) == 1


async def test_github_s_rate_limit_is_counted(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await start_aye(database_url, config=gh_config(post_questions=True),
                          env=app_env(fake_github))
    fake_github.fail_next("POST", ISSUE_COMMENTS, secondary_rate_limit=True, retry_after=1)
    await aye.ask(question="Which region?", options=["eu", "us"], work=WORK)

    async def posted() -> bool:
        return calls(aye, "github") == {"rate_limited": 1, "ok": 1}

    await eventually(posted, timeout=10)


async def test_two_processes_on_postgresql_agree_on_the_store_and_count_their_own(
    start_aye: StartAye, pg_session_url: str | None
) -> None:
    url = await postgres_url(pg_session_url)
    one, two = await start_aye(url), await start_aye(url)
    # Only `one` runs this surface, whose rows stay pending: `two` sees them in the store.
    one.asks.add_surface(Scripted(*[RetryLater(3600, "busy")] * 3))
    for _ in range(3):
        await one.ask(question="On one?")
    asked = await two.ask(question="On two?")
    await one.answer(asked["ref"], "yes")
    first, second = await scrape(one), await scrape(two)
    for samples in (first, second):
        assert value(samples, "aye_asks_open", kind="question") == 3
        assert value(samples, "aye_outbox_pending") == 3
        assert value(samples, "aye_outbox_oldest_pending_seconds", surface="scripted") >= 0
    # Counters are per process: each counts what it did (aggregate with sum).
    assert value(first, "aye_asks_created_total", kind="question") == 3
    assert value(second, "aye_asks_created_total", kind="question") == 1
    assert value(first, "aye_asks_closed_total", kind="question", status="answered") == 1
    assert value(second, "aye_asks_closed_total", kind="question", status="answered") == 0
    assert not one.asks.parts.stream.subscribers and not two.asks.parts.stream.subscribers


OPEN_ASKS = 10_000


async def test_scrape_time_with_10000_open_asks(start_aye: StartAye, database_url: str) -> None:
    aye = await start_aye(database_url)
    now = aye.clock.now()
    rows = [
        {**new_ask_values("default", "question", None, [OPERATOR], now, now + 3600),
         "question": f"Open {n}?", "sensitive": False, "erased": False}
        for n in range(OPEN_ASKS)
    ]
    async with aye.asks.parts.store.write() as conn:
        await conn.execute(ASK_INSERT, rows)
    await scrape(aye)  # warm: connections, statement caches
    store_ms, scrape_ms = [], []
    for _ in range(5):
        started = time.perf_counter()
        await read_store(aye.asks.parts)
        store_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        samples = await scrape(aye)
        scrape_ms.append((time.perf_counter() - started) * 1000)
    assert value(samples, "aye_asks_open", kind="question") == OPEN_ASKS
    store = "postgresql" if aye.asks.parts.store.is_postgres else "sqlite"
    print(f"\n/metrics with {OPEN_ASKS} open asks on {store}: store reads "
          f"{min(store_ms):.1f}-{max(store_ms):.1f} ms, whole scrape over HTTP "
          f"{min(scrape_ms):.1f}-{max(scrape_ms):.1f} ms")
