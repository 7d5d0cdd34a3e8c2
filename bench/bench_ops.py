"""Benchmark of what operating aye costs, against real `aye serve` subprocesses: a `/metrics`
scrape with 10,000 open asks, and creates/s with the per-agent limits on and off.

    .venv/bin/python bench/bench_ops.py              # SQLite, full counts (~2 min on 2 cores)
    .venv/bin/python bench/bench_ops.py --quick      # one round of 3 s each way, 50 scrapes
    .venv/bin/python bench/bench_ops.py --postgres   # PostgreSQL (its schema public is dropped!)

It prints one table (metric | value | target | ok) and exits 1 when a target is missed or a
step failed. What each figure means, and how it is measured, is in bench/README.md. The server,
the HTTP client and the table come from bench_asks.py, beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from bench_asks import (
    CreateResult,
    Results,
    Server,
    api_for,
    bench_args,
    fmt_ms,
    load,
    log,
    machine_info,
    measure_creates,
    ms,
    percentile,
    print_report,
    raise_nofile,
    reset_pg,
    running,
    step,
)

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/aye_bench_ops"
UNLIMITED = ["bench/serve_unlimited.py"]  # `aye serve` with the limit checks made no-ops
OPEN_ASKS = 10_000
WARMUPS = 20
OPEN_SAMPLE = 'aye_asks_open{kind="question"} 10000.0'

TARGET_SCRAPE_P50_MS = 50.0
TARGET_LIMITS_RATIO = 0.90  # creates/s with limits on, at least this share of off

SCRAPE, CREATES = "metrics scrape", "creates/s, limits on vs off"


@dataclass(frozen=True)
class Counts:
    create_seconds: float
    rounds: int  # each round: one run with the limits on and one with them off
    scrapes: int


FULL = Counts(create_seconds=10.0, rounds=3, scrapes=200)
QUICK = Counts(create_seconds=3.0, rounds=1, scrapes=50)


@dataclass
class ScrapeResult:
    latencies: list[float]
    cpu_per_scrape: float
    body_bytes: int


@dataclass
class LimitsResult:
    on: list[CreateResult] = field(default_factory=list)
    off: list[CreateResult] = field(default_factory=list)

    @staticmethod
    def median(runs: list[CreateResult]) -> float:
        return statistics.median(r.per_s for r in runs)


async def scrape_once(session: aiohttp.ClientSession, server: Server) -> str:
    headers = {"Authorization": f"Bearer {server.operator}"}
    async with session.get(f"{server.url}/metrics", headers=headers) as resp:
        text = await resp.text()
        if resp.status != 200:
            raise RuntimeError(f"/metrics: HTTP {resp.status} {text[:200]}")
        return text


async def measure_scrapes(server: Server, n: int) -> ScrapeResult:
    """GET /metrics as the operator, one at a time: WARMUPS, then `n` timed."""
    async with aiohttp.ClientSession() as session:
        for _ in range(WARMUPS):
            text = await scrape_once(session, server)
        if OPEN_SAMPLE not in text:
            raise RuntimeError(f"the scrape does not say {OPEN_SAMPLE!r}")
        latencies = []
        cpu = server.cpu_seconds()
        for _ in range(n):
            t0 = time.perf_counter()
            await scrape_once(session, server)
            latencies.append(time.perf_counter() - t0)
        cpu = server.cpu_seconds() - cpu
    return ScrapeResult(latencies, cpu / n, len(text.encode()))


async def fresh_store(args: argparse.Namespace, work: Path, name: str) -> str:
    if args.postgres:
        await reset_pg(args.pg_url)
        return str(args.pg_url)
    return f"sqlite+aiosqlite:///{work / name}"


async def scrapes(args: argparse.Namespace, server: Server, counts: Counts) -> ScrapeResult:
    async with running(server):  # creates the schema
        pass
    await load(args, server, OPEN_ASKS, "open")
    async with running(server):
        return await measure_scrapes(server, counts.scrapes)


async def limits_on_off(args: argparse.Namespace, work: Path, tokens: tuple[str, str],
                        counts: Counts, errors: Counter[str]) -> LimitsResult:
    """Alternating (on, off; off, on; …), each run on a fresh store and a fresh server."""
    result = LimitsResult()
    for r in range(counts.rounds):
        for limited in (True, False) if r % 2 == 0 else (False, True):
            side = "on" if limited else "off"
            server = Server(await fresh_store(args, work, f"creates-{r}-{side}.db"), work, *tokens)
            server.log_path = work / f"server-creates-{r}-{side}.log"
            if not limited:
                server.command = UNLIMITED
            async with running(server), api_for(server) as api:
                done = await measure_creates(server, api, counts.create_seconds)
                errors.update(api.errors)
            log(f"round {r + 1}, limits {side}: {done.per_s:.0f} creates/s")
            (result.on if limited else result.off).append(done)
    return result


async def run(args: argparse.Namespace) -> int:
    counts = QUICK if args.quick else FULL
    raise_nofile()
    tokens = ("aye_op_bench_" + secrets.token_urlsafe(16),
              "aye_ag_bench_" + secrets.token_urlsafe(16))
    results, info, began = Results(), machine_info(), time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="aye-bench-ops-"))
    errors: Counter[str] = Counter()
    try:
        server = Server(await fresh_store(args, work, "metrics.db"), work, *tokens)
        scraped = await step(results, SCRAPE, server, lambda: scrapes(args, server, counts))
        server_lines = server.errors()
        limits = await step(results, CREATES, None,
                            lambda: limits_on_off(args, work, tokens, counts, errors))
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    fill_table(results, counts, scraped, limits, errors)
    print_table(results, info, args, time.perf_counter() - began, server_lines)
    return 1 if results.missed or results.failures else 0


def fill_table(results: Results, counts: Counts, scraped: ScrapeResult | None,
               limits: LimitsResult | None, errors: Counter[str]) -> None:
    if SCRAPE in results.failed_steps:
        results.add_failed(SCRAPE)
    if scraped is not None:
        p50, p99 = percentile(scraped.latencies, 50), percentile(scraped.latencies, 99)
        results.add(f"GET /metrics p50 ({OPEN_ASKS:,} open asks, {counts.scrapes} scrapes)",
                    fmt_ms(p50), f"< {TARGET_SCRAPE_P50_MS:g} ms", ms(p50) < TARGET_SCRAPE_P50_MS)
        results.add("  p99 / server CPU per scrape / body size",
                    f"{fmt_ms(p99)} / {fmt_ms(scraped.cpu_per_scrape)} / "
                    f"{scraped.body_bytes / 1024:.0f} KiB")
    if CREATES in results.failed_steps:
        results.add_failed(CREATES)
    if limits is not None:
        on, off = limits.median(limits.on), limits.median(limits.off)
        runs = f"{counts.rounds} x {counts.create_seconds:g} s each"
        results.add(f"creates/s, limits on (median of {runs})", f"{on:.0f}/s")
        results.add(f"creates/s, limits off (median of {runs})", f"{off:.0f}/s")
        results.add("limits on / off", f"{on / off:.2f}", f">= {TARGET_LIMITS_RATIO:.2f}",
                    on / off >= TARGET_LIMITS_RATIO)
        results.add("  each run on / off",
                    f"{', '.join(f'{r.per_s:.0f}' for r in limits.on)} / "
                    f"{', '.join(f'{r.per_s:.0f}' for r in limits.off)}")
        cpu_on = statistics.median(r.cpu_per_create for r in limits.on)
        cpu_off = statistics.median(r.cpu_per_create for r in limits.off)
        results.add("  server CPU per create on / off", f"{fmt_ms(cpu_on)} / {fmt_ms(cpu_off)}")
    total = sum(errors.values())
    results.add("server errors (HTTP 5xx) in the whole run",
                str(total) if not total else f"{total} ({dict(errors)})", "0", total == 0)


def print_table(results: Results, info: dict[str, str], args: argparse.Namespace,
                elapsed: float, server_lines: list[str]) -> None:
    print_report("aye operations benchmark", results, info, args, elapsed, server_lines)


def main() -> int:
    return asyncio.run(run(bench_args(DEFAULT_PG_URL)))


if __name__ == "__main__":
    sys.exit(main())
