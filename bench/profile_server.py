"""Where a real `aye serve`'s time goes: py-spy on the server while it answers parked waits one
at a time (`wake`) or takes creates from 32 clients (`create`), and the top frames.

    .venv/bin/python bench/profile_server.py wake [--postgres] [--n 2000]
    .venv/bin/python bench/profile_server.py create [--postgres] [--seconds 8]

It prints the run's figures (wake p50 and server CPU an answer + wake, or creates/s and CPU a
create; py-spy's sampling adds a little to both) and the shares of the server's samples: by
package (self), the top frames (self) and aye's own frames (inclusive). `--raw FILE` keeps
py-spy's raw output. PostgreSQL: the database of `--pg-url` is emptied first.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_asks as b

PY_SPY = Path(sys.executable).with_name("py-spy")
PACKAGES = ["sqlalchemy", "aiohttp", "asyncpg", "asyncio", "selectors", "pydantic", "logging",
            "json", "prometheus", "rfc8785", "multidict", "yarl"]
OURS = re.compile(r"\((store|core|ask_api|bot|handlers)/")


def spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(PY_SPY), "record", "-r", "400", "-f", "raw", "--nonblocking", "-o", str(out),
         "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


async def wake(server: b.Server, api: b.Api, n: int, out: Path) -> str:
    ids = await api.create_many(n)
    done_at: dict[str, float] = {}
    statuses: dict[str, str] = {}
    async with b.many_sockets() as session:
        tasks = await b.park(api, session, ids, done_at, statuses)
        await server.settle(tasks)
        sampler = spy(server.pid, out)
        await asyncio.sleep(1.0)  # py-spy attached
        cpu, woke = server.cpu_seconds(), []
        for task, ask_id in zip(tasks, ids, strict=True):
            start = time.perf_counter()
            await api.answer(ask_id)
            await task
            woke.append(done_at[ask_id] - start)
        cpu = server.cpu_seconds() - cpu
        sampler.send_signal(2)
        sampler.wait()
    return (f"{n:,} answered: wake p50 {b.fmt_ms(b.percentile(woke, 50))}, "
            f"server CPU per answer + wake {cpu / n * 1000:.2f} ms")


async def create(server: b.Server, api: b.Api, seconds: float, out: Path) -> str:
    await b.measure_creates(server, api, 2)  # warm
    sampler = spy(server.pid, out)
    await asyncio.sleep(0.5)
    made = await b.measure_creates(server, api, seconds)
    sampler.send_signal(2)
    sampler.wait()
    return f"creates {made.per_s:,.0f}/s, server CPU per create {made.cpu_per_create * 1000:.3f} ms"


def top(raw: Path, rows: int = 20) -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    package: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n, frames = int(count), stack.split(";")
        total += n
        own[frames[-1]] += n
        package[next((p for p in PACKAGES if p in frames[-1]), "other")] += n
        for frame in {re.sub(r":\d+\)$", ")", f) for f in frames if OURS.search(f)}:
            inclusive[frame] += n
    lines = [f"{total:,} samples", "-- by package (self)"]
    lines += [f"{v / total:6.1%} {k}" for k, v in package.most_common()]
    lines += ["-- frames (self)"] + [f"{v / total:6.1%} {k}" for k, v in own.most_common(rows)]
    lines += ["-- aye's frames (inclusive)"]
    lines += [f"{v / total:6.1%} {k}" for k, v in inclusive.most_common(rows * 2)]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> None:
    b.raise_nofile()
    work = Path(tempfile.mkdtemp(prefix="aye-profile-"))
    if args.postgres:
        await b.reset_pg(args.pg_url)
    url = args.pg_url if args.postgres else f"sqlite+aiosqlite:///{work / 'main.db'}"
    server = b.Server(url, work, "aye_op_" + secrets.token_urlsafe(16),
                      "aye_ag_" + secrets.token_urlsafe(16))
    raw = Path(args.raw) if args.raw else work / "profile.txt"
    async with b.running(server), b.api_for(server) as api:
        if args.what == "wake":
            said = await wake(server, api, args.n, raw)
        else:
            said = await create(server, api, args.seconds, raw)
    print(said)
    print(top(raw))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["wake", "create"])
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--pg-url", default=b.DEFAULT_PG_URL)
    parser.add_argument("--n", type=int, default=2000, help="waits parked and answered (wake)")
    parser.add_argument("--seconds", type=float, default=8.0, help="of creates (create)")
    parser.add_argument("--raw", help="keep py-spy's raw output in this file")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
