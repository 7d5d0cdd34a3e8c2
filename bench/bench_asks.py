"""Benchmark of aye's HTTP ask API against a real `aye serve` subprocess.

    .venv/bin/python bench/bench_asks.py              # SQLite, full counts (~10 min on 2 cores)
    .venv/bin/python bench/bench_asks.py --quick      # smaller counts, a smoke run
    .venv/bin/python bench/bench_asks.py --postgres   # PostgreSQL (its schema public is dropped!)

It prints one table (metric | value | target | ok) and exits 1 when a target is missed or a
step failed. What each figure means, and how it is measured, is in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import operator
import os
import platform
import random
import resource
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/aye_bench"
HEALTH_TIMEOUT_S = 60.0
MAX_WAIT_S = 300  # the API's ceiling for ?timeout=
CREATE_CLIENTS = 32
SETUP_CONCURRENCY = 32
PARK_BATCH = 500
RSS_SAMPLE = 200
POLL_GRACE_S = 300.0
ANSWER_TRIES = 3
LOAD_BATCH = 50_000
PR_SET_PDEATHSIG = 1  # linux/prctl.h

TARGET_WAKE_P50_MS = 5.0
TARGET_WAKE_P99_MS = 25.0
# creates/s on this 2-core machine: SQLite, PostgreSQL (issue 16's targets).
TARGET_CREATES_PER_S = {False: 2000.0, True: 1000.0}
TARGET_PEAK_RSS_MB = 400.0
TARGET_CLOSED_RATIO = 1.5

T = TypeVar("T")

WAKE, POLL, CREATES, RSS, CLOSED = "wake latency", "polling baseline", "creates/s", "peak RSS", (
    "answer latency vs closed asks"
)


@dataclass(frozen=True)
class Counts:
    wake_asks: int
    poll_asks: int
    poll_answer_spread_s: float
    create_seconds: float
    parked_waits: int
    answer_samples: int
    closed_small: int
    closed_large: int


FULL = Counts(
    wake_asks=1_000, poll_asks=1_000, poll_answer_spread_s=20.0, create_seconds=15.0,
    parked_waits=10_000, answer_samples=300, closed_small=1_000, closed_large=1_000_000,
)
QUICK = Counts(
    wake_asks=100, poll_asks=100, poll_answer_spread_s=5.0, create_seconds=4.0,
    parked_waits=1_000, answer_samples=50, closed_small=1_000, closed_large=20_000,
)


# -- small helpers ----------------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile: the smallest value with at least pct% of them at or below it."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil without floats
    return ordered[int(rank) - 1]


def ms(seconds: float) -> float:
    return seconds * 1000.0


def fmt_ms(seconds: float) -> str:
    return f"{ms(seconds):.2f} ms"


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def raise_nofile() -> None:
    """Lift the soft open-files limit to the hard one: 10,000 sockets need it on each side."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def server_preexec() -> None:
    """In the server's child process: the same open-files limit, and die with the bench."""
    raise_nofile()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def machine_info() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    return {
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cpus": str(os.cpu_count()),
        "cpu": model,
        "memory": mem,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "aiohttp": aiohttp.__version__,
    }


async def cancel_all(tasks: Sequence[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# -- the server subprocess --------------------------------------------------------------------


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM of a process, in kB."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0])
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class Server:
    """`python -m bot serve` on a free port, its output kept in a log file."""

    def __init__(self, database_url: str, workdir: Path, operator: str, agent: str) -> None:
        self.database_url = database_url
        self.workdir = workdir
        self.operator = operator
        self.agent = agent
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "server.log"
        # What the venv's python runs (bench_ops.py runs a variant: serve_unlimited.py).
        self.command = ["-m", "bot", "serve"]
        # More of the config file (bench_live.py's [[people]]).
        self.extra_config = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self) -> None:
        self.port = free_port()
        # One agent, `default` as in a zero-config start, with limits far above what the bench
        # sends: the limit checks run on every create (their cost is in the figures) without
        # refusing any.
        config = self.log_path.parent / "aye.toml"
        config.write_text(
            '[[agents]]\nname = "default"\ntoken_env = "AYE_BENCH_AGENT_TOKEN"\n'
            "max_open = 1000000\nasks_per_minute = 1000000\n" + self.extra_config
        )
        # What a user's `aye serve` does by default: none of the AYE_* settings (log level and
        # format among them) of the shell that runs the bench, and no .env of the repo's (the
        # server reads one from its working folder): the code comes through PYTHONPATH.
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AYE_")},
            "PYTHONPATH": str(ROOT),
            "AYE_DATABASE_URL": self.database_url,
            "AYE_OPERATOR_TOKEN": self.operator,
            "AYE_BENCH_AGENT_TOKEN": self.agent,
            "AYE_HOST": "127.0.0.1",
            "AYE_PORT": str(self.port),
            "AYE_CONFIG": str(config),
        }
        for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "GITHUB_WEBHOOK_SECRET",
                     "GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH",
                     "GITHUB_TOKEN"):
            env.pop(name, None)
        python = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(python), *(str(ROOT / c) if c.endswith(".py") else c for c in self.command)],
                cwd=self.workdir, env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=server_preexec,
            )
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"aye serve exited {self.proc.returncode}: {self.tail()}")
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with session.get(f"{self.url}/healthz") as resp:
                        if resp.status == 200:
                            return
                await asyncio.sleep(0.05)
        raise RuntimeError(f"aye serve did not become healthy: {self.tail()}")

    def tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def errors(self) -> list[str]:
        """The server's log lines at warning or error level."""
        with contextlib.suppress(OSError):
            return [
                line for line in self.log_path.read_text(errors="replace").splitlines()
                if " error " in line or " warning " in line or "Traceback" in line
            ]
        return []

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.pid)

    def memory_kb(self) -> dict[str, int]:
        return _proc_status(self.pid)

    async def settle(self, tasks: Sequence[asyncio.Task[Any]] = (), idle_cpu_s: float = 0.03,
                     limit_s: float = 240) -> float:
        """Wait until the server holds a socket for each of `tasks` still running and its CPU
        use has gone quiet for a second."""
        start = time.monotonic()
        last = self.cpu_seconds()
        quiet = 0
        while time.monotonic() - start < limit_s:
            await asyncio.sleep(0.25)
            now = self.cpu_seconds()
            busy, last = now - last, now
            pending = sum(1 for t in tasks if not t.done())
            quiet = quiet + 1 if busy <= idle_cpu_s and _open_fds(self.pid) >= pending else 0
            if quiet >= 4:
                break
        return time.monotonic() - start


@contextlib.asynccontextmanager
async def running(server: Server) -> AsyncIterator[Server]:
    await server.start()
    try:
        yield server
    finally:
        server.stop()


# -- the HTTP side ----------------------------------------------------------------------------


class ServerError(Exception):
    """The server answered with a status the bench did not expect."""

    def __init__(self, what: str, status: int, body: Any) -> None:
        super().__init__(f"{what}: HTTP {status} {str(body)[:200]}")
        self.status = status


class Api:
    """The ask API for the agent and the operator, each on its own session; counts 5xx."""

    def __init__(self, server: Server, agent: aiohttp.ClientSession,
                 operator: aiohttp.ClientSession) -> None:
        self.base = server.url + "/v1"
        self.agent = agent
        self.operator = operator
        self.agent_headers = {"Authorization": f"Bearer {server.agent}"}
        self.operator_headers = {"Authorization": f"Bearer {server.operator}"}
        self.errors: Counter[str] = Counter()

    async def _call(self, session: aiohttp.ClientSession, method: str, url: str, expect: int,
                    headers: dict[str, str], what: str, **kwargs: Any) -> dict[str, Any]:
        async with session.request(method, url, headers=headers, **kwargs) as resp:
            text = await resp.text()
            try:
                data = json.loads(text)
            except ValueError:
                data = {"body": text}
            if resp.status != expect:
                if resp.status >= 500:
                    self.errors[f"{what} {resp.status}"] += 1
                raise ServerError(what, resp.status, data)
            return dict(data)

    async def create(self, n: int = 0, session: aiohttp.ClientSession | None = None) -> str:
        body = {"question": f"Bench question {n}: ship it?", "options": ["yes", "no"],
                "timeout_s": 3600}
        data = await self._call(session or self.agent, "POST", f"{self.base}/asks", 201,
                                self.agent_headers, "create", json=body)
        return str(data["id"])

    async def answer(self, ask_id: str) -> None:
        """Answer "1" as the operator; a 5xx is counted and tried again, as a person would."""
        for attempt in range(ANSWER_TRIES):
            try:
                data = await self._call(
                    self.operator, "POST", f"{self.base}/asks/{ask_id}/answer", 200,
                    self.operator_headers, "answer", json={"answer": "1"},
                )
            except ServerError as exc:
                if exc.status < 500 or attempt == ANSWER_TRIES - 1:
                    raise
                continue
            if data.get("outcome") != "taken":
                raise ServerError("answer", 200, data)
            return

    async def get(self, session: aiohttp.ClientSession, ask_id: str) -> dict[str, Any]:
        return await self._call(session, "GET", f"{self.base}/asks/{ask_id}", 200,
                                self.agent_headers, "get")

    async def wait(self, session: aiohttp.ClientSession, ask_id: str,
                   timeout: int = MAX_WAIT_S) -> dict[str, Any]:
        return await self._call(session, "GET", f"{self.base}/asks/{ask_id}/wait", 200,
                                self.agent_headers, "wait", params={"timeout": str(timeout)})

    async def create_many(self, n: int) -> list[str]:
        ids: list[str] = [""] * n
        counter = iter(range(n))

        async def worker() -> None:
            for i in counter:
                ids[i] = await self.create(i)

        await asyncio.gather(*(worker() for _ in range(min(SETUP_CONCURRENCY, n))))
        return ids


def many_sockets() -> aiohttp.ClientSession:
    """A session for thousands of concurrent requests: a socket each, no client-side timeout."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=120),
    )


@contextlib.asynccontextmanager
async def api_for(server: Server) -> AsyncIterator[Api]:
    def session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=CREATE_CLIENTS * 2),
            timeout=aiohttp.ClientTimeout(total=120),
        )

    async with session() as agent, session() as operator:
        yield Api(server, agent, operator)


# -- measurements -----------------------------------------------------------------------------


async def park(api: Api, session: aiohttp.ClientSession, ask_ids: Sequence[str],
               done_at: dict[str, float], statuses: dict[str, str]) -> list[asyncio.Task[None]]:
    """One parked `wait` per ask, each recording when it returned and what it saw."""

    async def one(ask_id: str) -> None:
        view = await api.wait(session, ask_id)
        done_at[ask_id] = time.perf_counter()
        statuses[ask_id] = str(view["status"])

    tasks = []
    for n, ask_id in enumerate(ask_ids):
        tasks.append(asyncio.create_task(one(ask_id)))
        if n % PARK_BATCH == PARK_BATCH - 1:
            # Let the event loop send what it has: 10,000 connects at once overflow the
            # server's listen backlog and cost seconds of SYN retries, not what is measured.
            await asyncio.sleep(0.02)
    return tasks


@dataclass
class WakeResult:
    wake: list[float]
    answer: list[float]
    cpu_per_answer: float


async def measure_wake(server: Server, api: Api, n: int) -> WakeResult:
    """n agents park on `wait`; the operator answers them one by one.

    Latency: from sending the answer request to the parked agent's `wait` response being read.
    """
    ids = await api.create_many(n)
    done_at: dict[str, float] = {}
    statuses: dict[str, str] = {}
    wake: list[float] = []
    answer: list[float] = []
    async with many_sockets() as session:
        tasks = await park(api, session, ids, done_at, statuses)
        try:
            await server.settle(tasks)
            failed = failed_tasks(tasks)
            if failed:
                raise RuntimeError(f"{len(failed)} of the {n:,} waits failed: {failed[0]}")
            if done_at:
                raise RuntimeError(f"{len(done_at)} waits returned before any answer")
            cpu = server.cpu_seconds()
            for task, ask_id in zip(tasks, ids, strict=True):
                start = time.perf_counter()
                await api.answer(ask_id)
                answer.append(time.perf_counter() - start)
                await task
                wake.append(done_at[ask_id] - start)
            cpu = server.cpu_seconds() - cpu
        finally:
            await cancel_all(tasks)
    wrong = [s for s in statuses.values() if s != "answered"]
    if wrong:
        raise RuntimeError(f"{len(wrong)} waits returned {wrong[:3]}, not answered")
    return WakeResult(wake, answer, cpu / n)


@dataclass
class PollResult:
    latencies: list[float]
    polls_per_s: float
    poll_p50: float
    poll_errors: int


async def measure_polling(api: Api, n: int, spread_s: float) -> PollResult:
    """The baseline: n agents each GET their ask every second; answers are spread over spread_s.

    Latency: from sending the answer request to the polling agent's GET that shows it answered.
    Each answer is sent at its scheduled time whether or not the earlier ones have returned, so
    a server that cannot keep up with the polling shows it in the figures, not in the run time.
    A poll that fails is counted and the agent polls again a second later, as a real one would.
    """
    ids = await api.create_many(n)
    answered_at: dict[str, float] = {}
    seen_at: dict[str, float] = {}
    polls: list[tuple[float, float]] = []  # (when it returned, how long it took)
    failed = 0

    async def poller(session: aiohttp.ClientSession, ask_id: str) -> None:
        nonlocal failed
        await asyncio.sleep(random.random())  # agents started at different moments
        while True:
            t0 = time.perf_counter()
            try:
                view = await api.get(session, ask_id)
            except (ServerError, aiohttp.ClientError):
                failed += 1
            else:
                now = time.perf_counter()
                polls.append((now, now - t0))
                if view["status"] != "open":
                    seen_at[ask_id] = now
                    return
            await asyncio.sleep(1.0)

    async def answer_at(when: float, ask_id: str) -> None:
        await asyncio.sleep(max(0.0, when - time.perf_counter()))
        answered_at[ask_id] = time.perf_counter()
        await api.answer(ask_id)

    async with many_sockets() as session:
        pollers = [asyncio.create_task(poller(session, ask_id)) for ask_id in ids]
        try:
            # Every poller has polled by 1 s; the 2 s after show what the server serves them.
            await asyncio.sleep(3.0)
            start = time.perf_counter()
            gap = spread_s / n
            await asyncio.gather(
                *(answer_at(start + k * gap, ask_id) for k, ask_id in enumerate(ids))
            )
            await asyncio.wait_for(asyncio.gather(*pollers), timeout=POLL_GRACE_S)
        finally:
            await cancel_all(pollers)
    window = [took for at, took in polls if start - 2.0 <= at < start]
    latencies = [seen_at[i] - answered_at[i] for i in ids]
    return PollResult(latencies, len(window) / 2.0, percentile(window, 50), failed)


@dataclass
class CreateResult:
    per_s: float
    latencies: list[float]
    cpu_per_create: float


async def measure_creates(server: Server, api: Api, seconds: float) -> CreateResult:
    """CREATE_CLIENTS clients, a connection each, POST /v1/asks back to back for `seconds`."""
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=CREATE_CLIENTS)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=120)
    ) as session:
        # Open the connections first, so the timed part measures creates, not connects.
        await asyncio.gather(*(api.create(-1, session) for _ in range(CREATE_CLIENTS)))
        stop_at = time.perf_counter() + seconds
        count = 0

        async def client(c: int) -> None:
            nonlocal count
            k = 0
            while time.perf_counter() < stop_at:
                t0 = time.perf_counter()
                await api.create(c * 1_000_000 + k, session)
                latencies.append(time.perf_counter() - t0)
                count += 1
                k += 1

        start, cpu = time.perf_counter(), server.cpu_seconds()
        await asyncio.gather(*(client(c) for c in range(CREATE_CLIENTS)))
        elapsed, cpu = time.perf_counter() - start, server.cpu_seconds() - cpu
    return CreateResult(count / elapsed, latencies, cpu / count)


@dataclass
class RssResult:
    before_kb: int
    parked_rss_kb: int
    peak_kb: int
    park_s: float
    parked: int
    failed: int
    failure: str
    sample: int
    sample_wake_p50: float


def failed_tasks(tasks: Sequence[asyncio.Task[None]]) -> list[BaseException]:
    return [
        exc for t in tasks if t.done() and not t.cancelled()
        for exc in [t.exception()] if exc is not None
    ]


async def measure_rss(server: Server, api: Api, ids: list[str]) -> RssResult:
    """Peak RSS (VmHWM) of a freshly started server while n `wait` requests are parked.

    Answering all n would take minutes of create/answer work that is measured elsewhere; a
    random sample of RSS_SAMPLE is answered instead, to show the parked requests are live
    (each must return "answered" at once). The rest are dropped with the server, killed: a
    graceful stop would wait them out.
    """
    await server.settle()
    before = server.memory_kb().get("VmRSS", 0)
    done_at: dict[str, float] = {}
    statuses: dict[str, str] = {}
    wake: list[float] = []
    async with many_sockets() as session:
        t0 = time.perf_counter()
        tasks = await park(api, session, ids, done_at, statuses)
        try:
            await server.settle(tasks)
            park_s = time.perf_counter() - t0
            parked_mem = server.memory_kb()
            failed = failed_tasks(tasks)
            if done_at:
                raise RuntimeError(f"{len(done_at)} of the parked waits returned early")
            live = [i for i, t in zip(ids, tasks, strict=True) if not t.done()]
            by_id = dict(zip(ids, tasks, strict=True))
            for ask_id in random.sample(live, min(RSS_SAMPLE, len(live))):
                t0 = time.perf_counter()
                await api.answer(ask_id)
                await by_id[ask_id]
                wake.append(done_at[ask_id] - t0)
            wrong = [statuses[i] for i in done_at if statuses[i] != "answered"]
            if wrong:
                raise RuntimeError(f"parked waits returned {wrong[:3]}, not answered")
            peak = server.memory_kb().get("VmHWM", 0)
        finally:
            server.kill()
            await cancel_all(tasks)
    return RssResult(
        before, parked_mem.get("VmRSS", 0), max(peak, parked_mem.get("VmHWM", 0)), park_s,
        len(live), len(failed), str(failed[0]) if failed else "", len(wake),
        percentile(wake, 50),
    )


async def measure_answers(api: Api, n: int) -> list[float]:
    """Create an open ask, then time the operator's answer request; n times, one at a time."""
    for k in range(20):  # warm the server and its connection pools up
        await api.answer(await api.create(k))
    latencies = []
    for k in range(n):
        ask_id = await api.create(k)
        t0 = time.perf_counter()
        await api.answer(ask_id)
        latencies.append(time.perf_counter() - t0)
    return latencies


# -- bulk loading closed asks -----------------------------------------------------------------


# Every column of `asks` but the varying ones, as the server would write them (JSON as text).
ASK_BASE: dict[str, Any] = {
    "agent": "default", "kind": "question", "options": json.dumps(["yes", "no"]),
    "context": None, "work": "null", "work_key": None,
    "responders": json.dumps(["operator:local"]), "escalate_responders": "null",
    "escalate_at": None, "escalated_at": None, "idem_key": None, "body_hash": None,
    "sensitive": False, "answer_note": None, "outcome": None, "erased": False,
    "operation": None, "call_input": "null", "call_hash": None, "approval_used_at": None,
    # Since answer formats, approval policy and callbacks (migrations 0004, 0005, 0007).
    "format": "choice", "form_schema": "null", "pick_min": None, "pick_max": None,
    "media": "null", "approvals_needed": None, "approvers": "null", "self_check": None,
    "remind_at": None, "reminded_at": None, "callback_url": None,
    # Since external answers (migration 0009).
    "verifier": None, "ticket_hash": None, "delivery_digest": None,
    # Since step-up (migration 0011).
    "sign_in_within": None,
    # Since what ran after an approval and destructive asks.
    "run_outcome": None, "run_detail": None, "run_at": None, "danger": None,
    "ref_base36": None,  # an ask made since 0.4.0: a decimal ref
}
# History rows loaded in bulk take no place in the audit chain (migration 0012): the chain the
# server appends goes on from its own head, and these rows are not what the bench measures.
UNCHAINED = {"chain_seq": None, "prev": None, "hash": None}
CREATED_DETAIL = json.dumps({"agent": "default"})
ANSWERED_DETAIL = json.dumps({"by": "operator:local", "surface": "cli"})


@dataclass(frozen=True)
class Columns:
    asks: list[str]
    history: list[str]  # without the generated id


def ask_rows(
    cols: Columns, first_seq: int, count: int, status: str
) -> Iterator[tuple[tuple[Any, ...], list[tuple[Any, ...]]]]:
    """Rows for `count` asks as the server would leave them, each with its history rows.

    status "answered": answered a minute after creation and read by the agent; history
    created + answered. status "open": due in an hour; history created.
    """
    unknown = [c for c in cols.asks if c not in ASK_BASE and c not in VARYING_ASK_COLUMNS]
    if unknown:
        raise RuntimeError(f"the bench does not know the asks columns {unknown}: update it")
    ask_of = operator.itemgetter(*cols.asks)
    hist_of = operator.itemgetter(*cols.history)
    now = time.time()
    row = dict(ASK_BASE, status=status)
    for seq in range(first_seq, first_seq + count):
        created = now - 90 * 86400 + seq * 0.5 if status != "open" else now
        row.update(seq=seq, id=uuid.uuid4().hex, created_at=created,
                   question=f"Bench question {seq}: ship it?", deadline=created + 3600.0)
        history = [hist_of({"ask_seq": seq, "at": created, "event": "created",
                            "detail": CREATED_DETAIL, **UNCHAINED})]
        if status == "open":
            row.update(due_at=created + 3600.0, closed_at=None, answer_value=None,
                       answer_option=None, answered_by=None, answer_surface=None, read_at=None)
        else:
            closed = created + 60.0
            row.update(due_at=None, closed_at=closed, answer_value="yes", answer_option=1,
                       answered_by="operator:local", answer_surface="cli", read_at=closed + 1.0)
            history.append(hist_of({"ask_seq": seq, "at": closed, "event": "answered",
                                    "detail": ANSWERED_DETAIL, **UNCHAINED}))
        yield ask_of(row), history


VARYING_ASK_COLUMNS = (
    "seq", "id", "status", "question", "deadline", "due_at", "created_at", "closed_at",
    "answer_value", "answer_option", "answered_by", "answer_surface", "read_at",
)


@dataclass
class Loaded:
    total: int  # asks in the store afterwards
    ids: list[str]  # of the open asks loaded


def load_sqlite(path: Path, count: int, status: str = "answered") -> Loaded:
    """Append `count` asks straight into the store."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        cols = Columns(
            [r[1] for r in conn.execute("PRAGMA table_info(asks)")],
            [r[1] for r in conn.execute("PRAGMA table_info(history)") if r[1] != "id"],
        )
        first = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM asks").fetchone()[0] + 1
        ask_sql = (f"INSERT INTO asks ({', '.join(cols.asks)}) "
                   f"VALUES ({', '.join('?' for _ in cols.asks)})")
        hist_sql = (f"INSERT INTO history ({', '.join(cols.history)}) "
                    f"VALUES ({', '.join('?' for _ in cols.history)})")
        asks: list[tuple[Any, ...]] = []
        hist: list[tuple[Any, ...]] = []
        ids: list[str] = []
        id_at = cols.asks.index("id")

        def flush() -> None:
            if status == "open":
                ids.extend(a[id_at] for a in asks)
            conn.execute("BEGIN")
            conn.executemany(ask_sql, asks)
            conn.executemany(hist_sql, hist)
            conn.execute("COMMIT")
            asks.clear()
            hist.clear()

        for ask, history in ask_rows(cols, first, count, status):
            asks.append(ask)
            hist.extend(history)
            if len(asks) >= LOAD_BATCH:
                flush()
        if asks:
            flush()
        # Fold the WAL back in, as the server's own checkpoints would have over time.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return Loaded(int(conn.execute("SELECT COUNT(*) FROM asks").fetchone()[0]), ids)
    finally:
        conn.close()


def pg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def reset_pg(url: str) -> None:
    import asyncpg

    dsn = pg_dsn(url)
    name = dsn.rsplit("/", 1)[1].split("?", 1)[0]
    try:
        conn = await asyncpg.connect(dsn)
    except asyncpg.InvalidCatalogNameError:
        admin = await asyncpg.connect(dsn.rsplit("/", 1)[0] + "/postgres")
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;")
    finally:
        await conn.close()


async def advance_sequences(conn: Any) -> None:
    """Explicit keys were written: move the sequences past them, or the server's next insert
    collides."""
    for table, key in (("asks", "seq"), ("history", "id")):
        await conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{key}'), "
            f"(SELECT MAX({key}) FROM {table}))"
        )


async def vacuum(conn: Any) -> None:
    """As autovacuum would have, over the months it took to gather this many."""
    await conn.execute("VACUUM ANALYZE asks")
    await conn.execute("VACUUM ANALYZE history")


async def load_pg(url: str, count: int, status: str = "answered") -> Loaded:
    """Append `count` asks straight into the store with COPY; returns its ask count afterwards."""
    import asyncpg

    conn = await asyncpg.connect(pg_dsn(url))
    try:
        query = ("SELECT column_name FROM information_schema.columns "
                 "WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position")
        cols = Columns(
            [r[0] for r in await conn.fetch(query, "asks")],
            [r[0] for r in await conn.fetch(query, "history") if r[0] != "id"],
        )
        first = int(await conn.fetchval("SELECT COALESCE(MAX(seq), 0) FROM asks")) + 1
        asks: list[tuple[Any, ...]] = []
        hist: list[tuple[Any, ...]] = []
        ids: list[str] = []
        id_at = cols.asks.index("id")

        async def flush() -> None:
            if status == "open":
                ids.extend(a[id_at] for a in asks)
            await conn.copy_records_to_table("asks", records=asks, columns=cols.asks)
            await conn.copy_records_to_table("history", records=hist, columns=cols.history)
            asks.clear()
            hist.clear()

        async with conn.transaction():
            for ask, history in ask_rows(cols, first, count, status):
                asks.append(ask)
                hist.extend(history)
                if len(asks) >= LOAD_BATCH:
                    await flush()
            if asks:
                await flush()
            await advance_sequences(conn)
        await vacuum(conn)
        return Loaded(int(await conn.fetchval("SELECT COUNT(*) FROM asks")), ids)
    finally:
        await conn.close()


# -- the run ----------------------------------------------------------------------------------
# -- the run ----------------------------------------------------------------------------------


@dataclass
class Results:
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failed_steps: set[str] = field(default_factory=set)
    missed: int = 0

    def add(self, metric: str, value: str, target: str = "", ok: bool | None = None) -> None:
        if ok is False:
            self.missed += 1
        self.rows.append((metric, value, target, "" if ok is None else ("yes" if ok else "NO")))

    def failed(self, label: str, exc: BaseException) -> None:
        self.failures.append(f"{label}: {exc.__class__.__name__}: {exc}")
        self.failed_steps.add(label)

    def add_failed(self, label: str) -> None:
        """The row of a step that failed, where its figures would have been."""
        self.add(label, "FAILED (see below)", "", False)


async def step(results: Results, label: str, server: Server | None,
               make: Callable[[], Awaitable[T]]) -> T | None:
    """Run one measurement; a failure is reported in the table and the run goes on."""
    log(f"{label} ...")
    t0 = time.perf_counter()
    try:
        out = await make()
    except Exception as exc:
        log(f"{label}: FAILED after {time.perf_counter() - t0:.1f}s: {exc!r}")
        traceback.print_exc(file=sys.stderr)
        results.failed(label, exc)
        if server is not None:
            for line in server.errors()[-10:]:
                log(f"server: {line}")
        return None
    log(f"{label}: {time.perf_counter() - t0:.1f}s")
    return out


async def run(args: argparse.Namespace) -> int:
    counts = QUICK if args.quick else FULL
    raise_nofile()
    operator = "aye_op_bench_" + secrets.token_urlsafe(16)
    agent = "aye_ag_bench_" + secrets.token_urlsafe(16)
    results = Results()
    info = machine_info()
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="aye-bench-"))
    errors: Counter[str] = Counter()
    server_lines: list[str] = []
    wake: WakeResult | None = None
    polled: PollResult | None = None
    creates: CreateResult | None = None
    rss: RssResult | None = None
    by_size: dict[int, list[float]] | None = None

    async def fresh_store(name: str) -> str:
        if args.postgres:
            await reset_pg(args.pg_url)
            return str(args.pg_url)
        return f"sqlite+aiosqlite:///{work / name}"

    try:
        # 1. wake latency, polling baseline, creates/s: one server, one store.
        server = Server(await fresh_store("main.db"), work, operator, agent)
        async with running(server), api_for(server) as api:
            wake = await step(results, WAKE, server,
                              lambda: measure_wake(server, api, counts.wake_asks))
            polled = await step(
                results, POLL, server,
                lambda: measure_polling(api, counts.poll_asks, counts.poll_answer_spread_s),
            )
            creates = await step(results, CREATES, server,
                                 lambda: measure_creates(server, api, counts.create_seconds))
            errors.update(api.errors)
        server_lines += server.errors()

        # 2. peak RSS: the open asks loaded into the store directly (creating them over HTTP
        # is measured above and would take minutes), then a fresh server process.
        opened = await load(args, server, counts.parked_waits, "open")
        async with running(server), api_for(server) as api:
            rss = await step(results, RSS, server,
                             lambda: measure_rss(server, api, opened.ids))
            errors.update(api.errors)
        server_lines += server.errors()

        # 3. answer latency with few and with many closed asks, in a fresh store.
        closed = Server(await fresh_store("closed.db"), work, operator, agent)
        closed.log_path = work / "server-closed.log"
        by_size = await step(results, CLOSED, closed,
                             lambda: measure_closed(args, closed, counts, errors))
        server_lines += closed.errors()
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    fill_table(results, counts, wake, polled, creates, rss, by_size, errors,
               TARGET_CREATES_PER_S[bool(args.postgres)])
    print_table(results, info, args, time.perf_counter() - began, rss, server_lines)
    return 1 if results.missed else 0


async def load(args: argparse.Namespace, server: Server, count: int, status: str) -> Loaded:
    """Bulk-insert asks into a stopped server's store."""
    t0 = time.perf_counter()
    if args.postgres:
        loaded = await load_pg(server.database_url, count, status)
    else:
        loaded = load_sqlite(Path(server.database_url.split(":///", 1)[1]), count, status)
    log(f"loaded {count:,} {status} asks; the store holds {loaded.total:,} "
        f"({time.perf_counter() - t0:.1f}s)")
    return loaded


async def measure_closed(args: argparse.Namespace, server: Server, counts: Counts,
                         errors: Counter[str]) -> dict[int, list[float]]:
    async with running(server):  # creates the schema
        pass
    by_size: dict[int, list[float]] = {}
    loaded = 0
    for size in (counts.closed_small, counts.closed_large):
        await load(args, server, size - loaded, "answered")
        loaded = size
        async with running(server), api_for(server) as api:
            by_size[size] = await measure_answers(api, counts.answer_samples)
            errors.update(api.errors)
    return by_size


def fill_table(results: Results, counts: Counts, wake: WakeResult | None,
               polled: PollResult | None, creates: CreateResult | None, rss: RssResult | None,
               by_size: dict[int, list[float]] | None, errors: Counter[str],
               target_creates: float) -> None:
    n = counts.wake_asks
    if WAKE in results.failed_steps:
        results.add_failed(WAKE)
    if wake is not None:
        p50, p99 = percentile(wake.wake, 50), percentile(wake.wake, 99)
        results.add(f"wake latency p50 ({n:,} parked, {n:,} answers)", fmt_ms(p50),
                    f"<= {TARGET_WAKE_P50_MS:g} ms", ms(p50) <= TARGET_WAKE_P50_MS)
        results.add(f"wake latency p99 ({n:,} parked, {n:,} answers)", fmt_ms(p99),
                    f"<= {TARGET_WAKE_P99_MS:g} ms", ms(p99) <= TARGET_WAKE_P99_MS)
        results.add("  the answer request alone p50 / p99",
                    f"{fmt_ms(percentile(wake.answer, 50))} / {fmt_ms(percentile(wake.answer, 99))}")
        results.add("  server CPU per answer + wake", fmt_ms(wake.cpu_per_answer))
    if POLL in results.failed_steps:
        results.add_failed(POLL)
    if polled is not None:
        q50, q99 = percentile(polled.latencies, 50), percentile(polled.latencies, 99)
        results.add(f"polling baseline p50 / p99 (GET every 1 s, {counts.poll_asks:,} agents)",
                    f"{fmt_ms(q50)} / {fmt_ms(q99)}")
        results.add(f"  GETs served/s with {counts.poll_asks:,} agents polling / GET p50",
                    f"{polled.polls_per_s:.0f}/s / {fmt_ms(polled.poll_p50)}")
        if wake is not None:
            results.add("baseline p50 / wake p50", f"{q50 / percentile(wake.wake, 50):.0f}x")
    if CREATES in results.failed_steps:
        results.add_failed(CREATES)
    if creates is not None:
        results.add(f"creates/s over HTTP ({CREATE_CLIENTS} clients, {counts.create_seconds:g} s)",
                    f"{creates.per_s:.0f}/s", f">= {target_creates:g}/s",
                    creates.per_s >= target_creates)
        lat = creates.latencies
        results.add("  create latency p50 / p99",
                    f"{fmt_ms(percentile(lat, 50))} / {fmt_ms(percentile(lat, 99))}")
        results.add("  server CPU per create", fmt_ms(creates.cpu_per_create))
    if RSS in results.failed_steps:
        results.add_failed(RSS)
    if rss is not None:
        peak_mb = rss.peak_kb / 1024
        short = ""
        if rss.parked < counts.parked_waits:
            short = f" (only {rss.parked:,} parked; {rss.failed:,} waits failed)"
            results.failures.append(f"parking waits: {rss.failed:,} failed, e.g. {rss.failure}")
        results.add(f"peak RSS, {counts.parked_waits:,} parked waits (VmHWM)",
                    f"{peak_mb:.0f} MB{short}", f"<= {TARGET_PEAK_RSS_MB:g} MB",
                    peak_mb <= TARGET_PEAK_RSS_MB and not short)
        results.add("  RSS idle before parking / with all parked",
                    f"{rss.before_kb / 1024:.0f} MB / {rss.parked_rss_kb / 1024:.0f} MB")
    if CLOSED in results.failed_steps:
        results.add_failed(CLOSED)
    if by_size is not None:
        small, large = by_size[counts.closed_small], by_size[counts.closed_large]
        for size, lat in ((counts.closed_small, small), (counts.closed_large, large)):
            results.add(f"answer latency p50 / p99, {size:,} closed asks",
                        f"{fmt_ms(percentile(lat, 50))} / {fmt_ms(percentile(lat, 99))}")
        ratio = percentile(large, 50) / percentile(small, 50)
        results.add(f"answer p50 ratio, {counts.closed_large:,} / {counts.closed_small:,} closed",
                    f"{ratio:.2f}", f"<= {TARGET_CLOSED_RATIO:g}", ratio <= TARGET_CLOSED_RATIO)
    total = sum(errors.values())
    detail = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))
    results.add("server errors (HTTP 5xx) in the whole run",
                f"{total}" + (f" ({detail})" if detail else ""), "0", total == 0)


def print_report(title: str, results: Results, info: dict[str, str], args: argparse.Namespace,
                 elapsed: float, server_lines: list[str], header: Sequence[str] = (),
                 footer: Sequence[str] = ()) -> None:
    """The table every bench prints: what ran where, `header` lines, the rows, `footer` lines,
    the run's length, failures and the server's last warnings."""
    head = ("metric", "value", "target", "ok")
    widths = [max(len(r[i]) for r in [head, *results.rows]) for i in range(4)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    backend = "PostgreSQL" if args.postgres else "SQLite"
    print()
    print(f"{title}: {backend}{' (--quick)' if args.quick else ''}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    print(f"machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, "
          f"Linux {info['kernel']}, Python {info['python']}, aiohttp {info['aiohttp']}; "
          f"server and bench on the same machine; load average at start {info['load']}")
    for text in header:
        print(text)
    print()
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in results.rows:
        print(line(row))
    print()
    for text in footer:
        print(text)
    print(f"whole run {elapsed / 60:.1f} min")
    for failure in results.failures:
        print(f"FAILED {failure}")
    if server_lines:
        print(f"server log: {len(server_lines)} warning/error lines, the last ones:")
        for text in server_lines[-5:]:
            print(f"  {text[:300]}")


def print_table(results: Results, info: dict[str, str], args: argparse.Namespace,
                elapsed: float, rss: RssResult | None, server_lines: list[str]) -> None:
    footer = []
    if rss is not None:
        footer.append(f"parking {args_parked(args):,} waits took {rss.park_s:.1f} s; {rss.sample} "
                      f"of the parked ones, answered at random, woke with p50 "
                      f"{fmt_ms(rss.sample_wake_p50)}.")
    print_report("aye ask API benchmark", results, info, args, elapsed, server_lines,
                 footer=footer)


def args_parked(args: argparse.Namespace) -> int:
    return (QUICK if args.quick else FULL).parked_waits


def bench_args(default_pg_url: str) -> argparse.Namespace:
    """The command line every bench takes: --quick, --postgres, --pg-url, --keep."""
    parser = argparse.ArgumentParser(description=(sys.modules["__main__"].__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    parser.add_argument("--postgres", action="store_true",
                        help="run on PostgreSQL; DROPS AND RECREATES the schema public there")
    parser.add_argument("--pg-url", default=default_pg_url,
                        help=f"SQLAlchemy URL of the PostgreSQL database (default {default_pg_url}; "
                             "created when missing)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temp folder (stores, server logs) and print its path")
    return parser.parse_args()


def main() -> int:
    return asyncio.run(run(bench_args(DEFAULT_PG_URL)))


if __name__ == "__main__":
    sys.exit(main())
