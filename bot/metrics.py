"""Prometheus metrics at `GET /metrics` (operator token), through prometheus-client.

Each app has a registry of its own, so that several apps in one process (the tests) never
share the library's global one. The numbers come from three places:

- What this process did, told by the core and the delivery loop through the Tally it subscribes
  (core/app/tally.py) after each commit: asks created and closed, how long answers took, how
  late the clock fired, how deliveries to surfaces ended. Per process: with several processes
  on one PostgreSQL each counts its own work, so aggregate them with `sum`. Nothing here reads
  the event hub, whose pump then reads the store only while an event stream is open.
- The store, read at scrape time with one GROUP BY per gauge: open asks, the outbox, how overdue
  the clock's work is. Every process reads the same rows, so these agree across processes.
- This process's state: parked waits, event streams, HTTP requests (by route pattern, never a
  raw path), and what the surfaces count themselves (webhook deliveries, connections).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from ask_api.tokens import TokenBook
from bot.connections import BodyTimeout
from core.app import tally
from core.app.parts import Parts
from core.app.service import Service
from core.app.tally import Tally
from core.domain import vocabulary
from store.asks import ASKS
from store.models import AskRow
from store.outbox import OUTBOX

log = logging.getLogger("aye.metrics")

PATH = "/metrics"
# What generate_latest writes: the classic text format every Prometheus reads (the library's
# own choice when a scraper negotiates nothing; its CONTENT_TYPE_LATEST now names 1.0.0).
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
KINDS = (vocabulary.QUESTION, vocabulary.APPROVAL)
CLOSED = (vocabulary.ANSWERED, vocabulary.EXPIRED, vocabulary.WITHDRAWN)
# A parked wait lasts up to 300 s and an event stream for hours: the top buckets hold them.
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
# People answer in seconds to days.
ANSWER_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400)
# The clock looks at least every second: past a few seconds it is stuck or swamped.
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600)
NO_ROUTE = "(no route)"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# A client that went away before the response (nginx's number for it).
CLIENT_GONE = 499

A, OB = ASKS.c, OUTBOX.c
# Built once: each is one GROUP BY on an indexed column (ix_asks_status_seq, ix_outbox_due).
OPEN_BY_KIND = select(A.kind, func.count()).where(A.status == vocabulary.OPEN).group_by(A.kind)
PENDING_BY_SURFACE = (
    select(OB.surface, func.count(), func.min(OB.created_at))
    .where(OB.due_at.is_not(None)).group_by(OB.surface)
)
# Dead letters have no index: done rows are forgotten, so the outbox stays small.
DEAD_BY_SURFACE = select(OB.surface, func.count()).where(OB.dead_at.is_not(None)).group_by(OB.surface)
# Only open asks have a due time (ix_asks_due).
FIRST_DUE = select(func.min(A.due_at))


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the store says at one scrape."""

    at: float
    open: dict[str, int]
    pending: dict[str, tuple[int, float]]  # surface: rows not yet delivered, oldest created_at
    dead: dict[str, int]
    first_due: float | None


async def read_store(parts: Parts) -> StoreFacts:
    async with parts.store.read() as conn:
        opened = (await conn.execute(OPEN_BY_KIND)).all()
        pending = (await conn.execute(PENDING_BY_SURFACE)).all()
        dead = (await conn.execute(DEAD_BY_SURFACE)).all()
        first_due = await conn.scalar(FIRST_DUE)
    return StoreFacts(
        at=parts.clock.now(),
        open={str(kind): int(n) for kind, n in opened},
        pending={str(s): (int(n), float(oldest)) for s, n, oldest in pending},
        dead={str(s): int(n) for s, n in dead},
        first_due=None if first_due is None else float(first_due),
    )


class StoreCollector(Collector):
    """Gauges of the shared store. prometheus-client collects synchronously, so the scrape
    reads the store first (`refresh`) and the collector hands out what it read."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.facts: StoreFacts | None = None

    async def refresh(self) -> None:
        try:
            self.facts = await read_store(self.parts)
        except (SQLAlchemyError, OSError):
            # The scrape still answers (this process's own numbers), with aye_store_up 0.
            log.warning("metrics: the store did not answer")
            self.facts = None

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("aye_store_up", "1 when the store answered this scrape, else 0")
        up.add_metric([], 0 if self.facts is None else 1)
        yield up
        if self.facts is not None:
            yield from self._asks(self.facts)
            yield from self._outbox(self.facts)

    def _asks(self, facts: StoreFacts) -> Iterator[Metric]:
        opened = GaugeMetricFamily("aye_asks_open", "Open asks in the store", labels=["kind"])
        for kind in sorted(set(KINDS) | set(facts.open)):
            opened.add_metric([kind], facts.open.get(kind, 0))
        overdue = GaugeMetricFamily(
            "aye_clock_overdue_seconds",
            "How long the most overdue deadline, escalation or reminder has waited to fire",
        )
        late = 0.0 if facts.first_due is None else max(facts.at - facts.first_due, 0.0)
        overdue.add_metric([], late)
        return iter((opened, overdue))

    def _outbox(self, facts: StoreFacts) -> Iterator[Metric]:
        surfaces = sorted(set(self.parts.places) | set(facts.pending) | set(facts.dead))
        pending = GaugeMetricFamily("aye_outbox_pending", "Outbox rows not yet delivered")
        pending.add_metric([], sum(n for n, _ in facts.pending.values()))
        oldest = GaugeMetricFamily(
            "aye_outbox_oldest_pending_seconds",
            "Age of the oldest outbox row not yet delivered", labels=["surface"],
        )
        dead = GaugeMetricFamily(
            "aye_outbox_dead_letters", "Outbox rows given up (dead letters)", labels=["surface"]
        )
        for surface in surfaces:
            found = facts.pending.get(surface)
            oldest.add_metric([surface], 0.0 if found is None else max(facts.at - found[1], 0.0))
            dead.add_metric([surface], facts.dead.get(surface, 0))
        return iter((pending, oldest, dead))


class SurfaceCollector(Collector):
    """What the running surfaces count themselves, read from their `health()`."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts

    def collect(self) -> Iterator[Metric]:
        webhooks = CounterMetricFamily(
            "aye_webhook_deliveries", "Webhook deliveries received, by result",
            labels=["surface", "result"],
        )
        connected = GaugeMetricFamily(
            "aye_surface_connected", "1 while the surface's connection is up", labels=["surface"]
        )
        for name, surface in sorted(self.parts.places.items()):
            health = surface.health()
            if isinstance(health.get("deliveries"), int):
                webhooks.add_metric([name, "accepted"], health["deliveries"])
                webhooks.add_metric([name, "bad_signature"], health.get("bad_signatures", 0))
            if isinstance(health.get("connected"), bool):
                connected.add_metric([name], int(health["connected"]))
        return iter((webhooks, connected))


def route_of(request: web.Request) -> str:
    """The route's pattern (`/v1/asks/{id}`), never the path: one series per route."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else NO_ROUTE


class Counts(Tally):
    """The counters of what this process did, told of each commit (core/app/tally.py)."""

    def __init__(self, registry: CollectorRegistry, surfaces: Iterable[str]) -> None:
        r = registry
        self.asks_created = Counter("aye_asks_created", "Parts created", ["kind"], registry=r)
        self.asks_closed = Counter(
            "aye_asks_closed", "Parts closed, by how", ["kind", "status"], registry=r
        )
        self.answer_seconds = Histogram(
            "aye_answer_seconds", "From an ask's creation to its answer", ["kind"],
            buckets=ANSWER_BUCKETS, registry=r,
        )
        self.clock_lag = Histogram(
            "aye_clock_lag_seconds",
            "How late the clock expired, escalated or reminded an ask after it was due",
            ["action"], buckets=LAG_BUCKETS, registry=r,
        )
        self.surface_calls = Counter(
            "aye_surface_calls", "Deliveries of outbox rows to a surface, by result",
            ["surface", "result"], registry=r,
        )
        # Every known series from the start: a rate over a series that appears mid-way misses
        # its first increase.
        for kind in KINDS:
            self.asks_created.labels(kind)
            self.answer_seconds.labels(kind)
            for status in CLOSED:
                self.asks_closed.labels(kind, status)
        for action in tally.ACTIONS:
            self.clock_lag.labels(action)
        for surface in surfaces:
            for result in tally.RESULTS:
                self.surface_calls.labels(surface, result)

    def created(self, ask: AskRow) -> None:
        self.asks_created.labels(ask.kind).inc()

    def closed(self, ask: AskRow, status: str, at: float) -> None:
        self.asks_closed.labels(ask.kind, status).inc()
        if status == vocabulary.ANSWERED:
            self.answer_seconds.labels(ask.kind).observe(max(at - ask.created_at, 0.0))

    def fired(self, action: str, late_s: float) -> None:
        self.clock_lag.labels(action).observe(max(late_s, 0.0))

    def delivered(self, surface: str, result: str) -> None:
        self.surface_calls.labels(surface, result).inc()


class Metrics:
    """The app's registry: this process's counts (subscribed to the service by `setup`), the
    HTTP middleware, and the gauges read at each scrape."""

    def __init__(self, parts: Parts, tokens: TokenBook) -> None:
        # Counters' `_created` series would double the exposition; process_start_time_seconds
        # already says when counting began.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.parts, self.tokens = parts, tokens
        self.registry = r = CollectorRegistry()
        self.counts = Counts(r, parts.places)
        self.http_requests = Counter(
            "aye_http_requests", "HTTP requests", ["method", "route", "status"], registry=r
        )
        self.http_seconds = Histogram(
            "aye_http_request_seconds", "HTTP request duration", ["route"],
            buckets=HTTP_BUCKETS, registry=r,
        )
        Gauge("aye_waits_parked", "Agents parked on a wait", registry=r).set_function(
            lambda: len(parts.signals.waiters)
        )
        Gauge("aye_event_streams", "Event streams connected", registry=r).set_function(
            lambda: len(parts.stream.subscribers)
        )
        self.store_facts = StoreCollector(parts)
        r.register(self.store_facts)
        r.register(SurfaceCollector(parts))
        ProcessCollector(registry=r)

    # -- HTTP --------------------------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        except BodyTimeout:  # the connections' guard (bot/connections.py) answers it
            status = 408
            raise
        except asyncio.CancelledError:
            status = CLIENT_GONE
            raise
        finally:
            route = route_of(request)
            method = request.method if request.method in METHODS else "OTHER"
            self.http_requests.labels(method, route, str(status)).inc()
            self.http_seconds.labels(route).observe(time.perf_counter() - started)

    async def scrape(self, request: web.Request) -> web.Response:
        if not self._is_operator(request):
            return web.json_response(
                {"error": "unauthorized", "message": "the operator's bearer token is required"},
                status=401, headers={"WWW-Authenticate": "Bearer"},
            )
        await self.store_facts.refresh()
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": TEXT_FORMAT}
        )

    def _is_operator(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        try:
            return self.tokens.is_operator(token.strip())
        except UnicodeEncodeError:  # a header that is not UTF-8 arrives as lone surrogates
            return False


METRICS = web.AppKey("metrics", Metrics)


def setup(app: web.Application, service: Service, tokens: TokenBook) -> Metrics:
    """`GET /metrics`, the HTTP middleware (outermost: it sees every status the others set),
    and the counts subscribed to the service's changes; the Metrics also at `app[METRICS]`. Call it once the
    surfaces are added (their series start at zero)."""
    metrics = Metrics(service.parts, tokens)
    app[METRICS] = metrics
    service.count_with(metrics.counts)
    app.middlewares.insert(0, metrics.middleware)
    app.add_routes([web.get(PATH, metrics.scrape)])
    return metrics
