"""Several `aye serve` processes on one PostgreSQL: the cross-replica wake and the soak.

    .venv/bin/python bench/bench_replicas.py            # full counts (~8 min on 2 cores)
    .venv/bin/python bench/bench_replicas.py --quick    # smaller counts, a smoke run

The database (`--pg-url`, default `aye_bench_replicas` on 127.0.0.1) has its schema public
dropped and recreated. What each figure means is in bench/README.md. It prints one table
(metric | value | target | ok) and exits 1 when a target is missed or a step failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import resource
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import bench_asks
from bench_asks import (
    MAX_WAIT_S,
    Api,
    Results,
    Server,
    api_for,
    cancel_all,
    fmt_ms,
    load_pg,
    log,
    machine_info,
    many_sockets,
    park,
    percentile,
    print_report,
    reset_pg,
    running,
)

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/aye_bench_replicas"
TARGET_CROSS_P50_MS = 10.0
TARGET_SOAK_P99_MS = 50.0
# RSS after the second soak round against after the first: more than this is a leak.
TARGET_RSS_GROWTH = 0.05
# The bench holds a socket for every parked wait of every replica.
NOFILE = 65_536


@dataclass(frozen=True)
class Counts:
    cross_asks: int
    processes: int
    soak_waits: int
    answers_per_s: float
    rounds: int


FULL = Counts(cross_asks=1_000, processes=3, soak_waits=30_000, answers_per_s=500.0, rounds=2)
QUICK = Counts(cross_asks=200, processes=3, soak_waits=3_000, answers_per_s=500.0, rounds=2)


def raise_nofile() -> None:
    """Root may lift the hard limit too: 30,000 parked waits are 30,000 sockets here."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, NOFILE), max(hard, NOFILE)))
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@contextlib.asynccontextmanager
async def replicas(url: str, work: Path, n: int) -> AsyncIterator[list[Server]]:
    """`n` servers on the store at `url`, each with its own log; stopped on the way out."""
    operator = "aye_op_bench_" + secrets.token_urlsafe(16)
    agent = "aye_ag_bench_" + secrets.token_urlsafe(16)
    servers = []
    for k in range(n):
        server = Server(url, work, operator, agent)
        server.log_path = work / f"server-{k}.log"
        servers.append(server)
    async with contextlib.AsyncExitStack() as stack:
        for server in servers:  # one at a time: the first one migrates the store
            await stack.enter_async_context(running(server))
        yield servers


@contextlib.asynccontextmanager
async def apis(servers: Sequence[Server]) -> AsyncIterator[list[Api]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(api_for(s)) for s in servers]


async def measure_cross(servers: Sequence[Server], n: int) -> tuple[list[float], list[float]]:
    """n agents park on replica 0; the operator answers each on replica 1, one at a time.
    Latency: from sending the answer to replica 1 to the agent having read its `wait` response
    from replica 0. Also, as a yardstick, the same with the answer sent to replica 0."""
    async with apis(servers[:2]) as (here, there):
        cross = await _wake_round(servers[0], here, there, n)
        same = await _wake_round(servers[0], here, here, n)
    return cross, same


async def _wake_round(server: Server, parked: Api, answering: Api, n: int) -> list[float]:
    ids = await parked.create_many(n)
    done_at: dict[str, float] = {}
    statuses: dict[str, str] = {}
    wake = []
    async with many_sockets() as session:
        tasks = await park(parked, session, ids, done_at, statuses)
        try:
            await server.settle(tasks)
            for task, ask_id in zip(tasks, ids, strict=True):
                start = time.perf_counter()
                await answering.answer(ask_id)
                await task
                wake.append(done_at[ask_id] - start)
        finally:
            await cancel_all(tasks)
    wrong = [s for s in statuses.values() if s != "answered"]
    if wrong:
        raise RuntimeError(f"{len(wrong)} waits returned {wrong[:3]}, not answered")
    return wake


@dataclass
class SoakRound:
    wake: list[float]
    lost: int
    wrong: int
    late_sends: int
    rss_kb: list[int]
    parked_rss_kb: list[int]
    park_s: float
    answer_s: float
    answers_failed: int
    answered_per_s: float  # what the replicas got through: all answers / until the last returned


class Parker:
    """A child process holding one replica's parked waits: one process cannot hold 30,000
    sockets under this machine's open-files limit (20,000). It parks a wait on each ask,
    says so by creating `ready`, and once every wait has returned writes one line a wait
    (id, the monotonic time it returned, its status or the failure) to `out`."""

    def __init__(self, server: Server, ids: list[str], work: Path, k: int) -> None:
        self.ids, self.ready, self.out = ids, work / f"parked-{k}", work / f"woken-{k}.json"
        self.ready.unlink(missing_ok=True)
        self.out.unlink(missing_ok=True)
        args = (server.url, server.agent, server.operator, ids, str(self.ready), str(self.out))
        self.proc = multiprocessing.get_context("spawn").Process(target=park_child, args=args)
        self.proc.start()

    async def parked(self, limit_s: float = 600) -> None:
        end = time.monotonic() + limit_s
        while not self.ready.exists():
            if time.monotonic() > end or not self.proc.is_alive():
                raise RuntimeError("a parking process did not park its waits")
            await asyncio.sleep(0.2)

    async def results(self, limit_s: float) -> dict[str, tuple[float, str]]:
        await asyncio.to_thread(self.proc.join, limit_s)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        if not self.out.exists():
            return {}
        return {i: (at, status) for i, at, status in json.loads(self.out.read_text())}


def park_child(url: str, agent: str, operator: str, ids: list[str], ready: str, out: str) -> None:
    bench_asks.raise_nofile()
    asyncio.run(_park_child(url, agent, operator, ids, Path(ready), Path(out)))


async def _park_child(url: str, agent: str, operator: str, ids: list[str], ready: Path,
                      out: Path) -> None:
    server = Server("", Path(tempfile.gettempdir()), operator, agent)
    server.port = int(url.rsplit(":", 1)[1])
    done_at: dict[str, float] = {}
    statuses: dict[str, str] = {}
    async with api_for(server) as api, many_sockets() as session:
        tasks = await park(api, session, ids, done_at, statuses)
        ready.touch()  # every request is on its way: the server's settle says when all are in
        await asyncio.wait(tasks, timeout=MAX_WAIT_S + 30)
        rows = []
        for ask_id, task in zip(ids, tasks, strict=True):
            failure = (None if not task.done() else "cancelled" if task.cancelled()
                       else type(task.exception()).__name__ if task.exception() else None)
            if ask_id in done_at:
                rows.append((ask_id, done_at[ask_id], statuses[ask_id]))
            else:
                rows.append((ask_id, 0.0, failure or "never returned"))
        await cancel_all(tasks)
    out.write_text(json.dumps(rows))


async def settled(server: Server, waits: int, limit_s: float = 600) -> None:
    """The server holds a socket for each of `waits` and its CPU has gone quiet for a second."""
    start, last, quiet = time.monotonic(), server.cpu_seconds(), 0
    while time.monotonic() - start < limit_s and quiet < 4:
        await asyncio.sleep(0.25)
        now = server.cpu_seconds()
        busy, last = now - last, now
        quiet = quiet + 1 if busy <= 0.03 and bench_asks._open_fds(server.pid) >= waits else 0


async def soak_round(url: str, servers: Sequence[Server], api: Sequence[Api], waits: int,
                     per_s: float, work: Path) -> SoakRound:
    """`waits` open asks loaded into the store, a wait parked on each (spread over the
    replicas, each replica's held by a process of its own), then each answered at `per_s` on
    another replica than the one it waits on."""
    loaded = await load_pg(url, waits, "open")
    ids = loaded.ids
    n = len(servers)
    t0 = time.monotonic()
    parkers = [Parker(servers[k], ids[k::n], work, k) for k in range(n)]
    for parker in parkers:
        await parker.parked()
    await asyncio.gather(*(settled(s, len(p.ids)) for s, p in zip(servers, parkers, strict=True)))
    park_s = time.monotonic() - t0
    parked_rss = [s.memory_kb().get("VmRSS", 0) for s in servers]
    by_replica = {i: k for k in range(n) for i in ids[k::n]}
    sent_at: dict[str, float] = {}
    answers, late = [], 0
    start = time.monotonic()
    for j, ask_id in enumerate(random.sample(ids, len(ids))):
        delay = start + j / per_s - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.01:
            late += 1
        sent_at[ask_id] = time.monotonic()
        other = api[(by_replica[ask_id] + 1) % n]
        answers.append(asyncio.create_task(other.answer(ask_id)))
    answer_s = time.monotonic() - start
    outcomes = await asyncio.gather(*answers, return_exceptions=True)
    failed = sum(1 for o in outcomes if isinstance(o, BaseException))
    served_s = time.monotonic() - start  # until the last answer request returned
    found: dict[str, tuple[float, str]] = {}
    for parker in parkers:
        found.update(await parker.results(MAX_WAIT_S + 60))
    lost = sum(1 for i in ids if i not in found or found[i][0] == 0.0)
    wrong = sum(1 for i in ids if i in found and found[i][0] and found[i][1] != "answered")
    wake = [found[i][0] - sent_at[i] for i in ids if i in found and found[i][0]]
    await asyncio.gather(*(s.settle() for s in servers))
    rss = [s.memory_kb().get("VmRSS", 0) for s in servers]
    return SoakRound(wake, lost, wrong, late, rss, parked_rss, park_s, answer_s, failed,
                     len(ids) / served_s)


async def run(args: argparse.Namespace) -> int:
    counts = QUICK if args.quick else FULL
    raise_nofile()
    results = Results()
    info = machine_info()
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="aye-bench-replicas-"))
    lines: list[str] = []
    try:
        await reset_pg(args.pg_url)
        async with replicas(args.pg_url, work, 2) as servers:
            log(f"cross-replica wake: {counts.cross_asks:,} parked on one, answered on the other")
            cross, same = await measure_cross(servers, counts.cross_asks)
        p50 = percentile(cross, 50) * 1000
        results.add(f"cross-replica wake p50 / p99 ({counts.cross_asks:,}, one at a time)",
                    f"{fmt_ms(percentile(cross, 50))} / {fmt_ms(percentile(cross, 99))}",
                    f"p50 <= {TARGET_CROSS_P50_MS:g} ms", p50 <= TARGET_CROSS_P50_MS)
        results.add("  the same, answered on the replica it waits on",
                    f"{fmt_ms(percentile(same, 50))} / {fmt_ms(percentile(same, 99))}")

        await reset_pg(args.pg_url)
        async with replicas(args.pg_url, work, counts.processes) as servers:
            async with apis(servers) as api:
                rounds = []
                for r in range(counts.rounds):
                    log(f"soak round {r + 1}: {counts.soak_waits:,} waits over "
                        f"{counts.processes} processes, answers at {counts.answers_per_s:g}/s")
                    rounds.append(await soak_round(args.pg_url, servers, api, counts.soak_waits,
                                                   counts.answers_per_s, work))
                    log(f"  parked in {rounds[-1].park_s:.1f}s, answered in {rounds[-1].answer_s:.1f}s")
            for s in servers:
                lines += s.errors()
        fill_soak(results, counts, rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_report("aye replicas benchmark", results, info, args, time.perf_counter() - began,
                 lines)
    return 1 if results.missed or results.failures else 0


def fill_soak(results: Results, counts: Counts, rounds: list[SoakRound]) -> None:
    for r, one in enumerate(rounds, 1):
        wake = one.wake
        p99 = percentile(wake, 99) * 1000 if wake else float("inf")
        label = f"soak round {r}: {counts.soak_waits:,} waits, {counts.processes} processes"
        results.add(f"{label}, lost / not answered", f"{one.lost} / {one.wrong}", "0 / 0",
                    one.lost == 0 and one.wrong == 0)
        results.add(f"  wake p50 / p99 (answers at {counts.answers_per_s:g}/s, cross-replica)",
                    f"{fmt_ms(percentile(wake, 50))} / {fmt_ms(percentile(wake, 99))}",
                    f"p99 <= {TARGET_SOAK_P99_MS:g} ms", p99 <= TARGET_SOAK_P99_MS)
        results.add("  answers sent over 10 ms late / sending took",
                    f"{one.late_sends} / {one.answer_s:.1f} s")
        results.add("  answer requests failed / answers served per second in all",
                    f"{one.answers_failed} / {one.answered_per_s:.0f}/s")
        results.add("  RSS per process, parked / after (MB)",
                    " ".join(f"{p // 1024}/{a // 1024}" for p, a in
                             zip(one.parked_rss_kb, one.rss_kb, strict=True)))
    if len(rounds) >= 2:
        first, last = sum(rounds[0].rss_kb), sum(rounds[-1].rss_kb)
        growth = (last - first) / first if first else 0.0
        results.add(f"RSS growth, after round {len(rounds)} against after round 1",
                    f"{growth * 100:+.1f} %", f"<= {TARGET_RSS_GROWTH * 100:g} %",
                    growth <= TARGET_RSS_GROWTH)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL,
                        help="the PostgreSQL store (its schema public is dropped!)")
    args = parser.parse_args()
    args.postgres = True
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
