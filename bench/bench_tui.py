"""Benchmark of `aye tui` against a real `aye serve` subprocess holding 500 open asks.

    .venv/bin/python bench/bench_tui.py            # 100 answers in-process, 30 in tmux, 30 s idle
    .venv/bin/python bench/bench_tui.py --quick    # fewer of each: a smoke run

1. Answer to screen, in-process: the TUI runs headless in this process (Textual's run_test at
   80×24, its real event stream and HTTP calls); an ask is answered elsewhere (the operator's
   `POST /v1/asks/{id}/answer` from another HTTP session) and the time is taken from sending the
   answer to the TUI's list no longer holding the ask (the event received, the list rebuilt).
2. Answer to screen, as a person sees it: `aye tui` runs in tmux at 80×24; an ask visible in
   the list is answered over HTTP, and the time is taken to the first `capture-pane` without
   its row (each capture is a tmux process, ~5 ms: the figure includes that polling).
3. Idle CPU: the same `aye tui` in tmux, settled, with 500 open asks, over 30 s: its user+system
   CPU time (from /proc/<pid>/stat) per second of wall time, as a share of one core.

It prints one table (metric | value | target | ok) and exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_asks import Api, Server, api_for, log, machine_info, ms, percentile
from textual.widgets import DataTable

from bot.tui.api import Api as TuiApi
from bot.tui.app import Tui
from bot.tui.inbox import Inbox

OPEN_ASKS = 500
LATENCY_TARGET_MS = 200.0
IDLE_TARGET = 0.01  # of one core
POLL_S = 0.002
CLK_TCK = os.sysconf("SC_CLK_TCK")


def listed(app: Tui) -> set[str]:
    inbox = next(s for s in app.screen_stack if isinstance(s, Inbox))
    table = inbox.query_one("#list", DataTable)
    return {str(row.key.value) for row in table.ordered_rows}


async def until(check: object, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > end:
            raise TimeoutError("the TUI never showed it")
        await asyncio.sleep(POLL_S)


async def in_process(server: Server, api: Api, ids: list[str], count: int) -> list[float]:
    app = Tui(TuiApi(server.url, server.operator))
    samples: list[float] = []
    async with app.run_test(size=(80, 24)):
        await until(lambda: len(listed(app)) >= len(ids))
        inbox = next(s for s in app.screen_stack if isinstance(s, Inbox))
        for ident in random.sample([i for i in ids if i != inbox.selected], count):
            t0 = time.perf_counter()
            await api.answer(ident)
            await until(lambda ident=ident: ident not in listed(app))  # type: ignore[misc]
            samples.append(time.perf_counter() - t0)
    return samples


class Terminal:
    def __init__(self, workdir: Path) -> None:
        self.socket = f"aye-bench-{uuid.uuid4().hex[:8]}"
        self.workdir = workdir

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=True).stdout

    def start(self, server: Server) -> int:
        env = {**os.environ, "AYE_URL": server.url, "AYE_OPERATOR_TOKEN": server.operator,
               "TERM": "xterm-256color"}
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d",
                        "-x", "80", "-y", "24", sys.executable, "-m", "bot", "tui"],
                       env=env, cwd=self.workdir, check=True)
        return int(self.tmux("list-panes", "-F", "#{pane_pid}").split()[0])

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


async def in_terminal(server: Server, api: Api, refs: dict[str, str], count: int,
                      idle_s: float) -> tuple[list[float], float]:
    term = Terminal(server.workdir)
    pid = term.start(server)
    try:
        end = time.monotonic() + 60
        while f"live · {len(refs)} open" not in term.screen():
            if time.monotonic() > end:
                raise TimeoutError("aye tui never came up:\n" + term.screen())
            await asyncio.sleep(0.1)
        idle = await idle_share(pid, idle_s)
        samples = []
        for _ in range(count):
            shown = {line.split()[1] for line in term.screen().splitlines()[2:20]
                     if len(line.split()) > 1}
            ident = next(i for i, ref in refs.items() if ref in shown and ref != _top(term))
            ref = refs.pop(ident)
            t0 = time.perf_counter()
            await api.answer(ident)
            # Polling the screen is the measurement: nothing else says what the terminal shows.
            while ref in {w for line in term.screen().splitlines() for w in line.split()[1:2]}:  # noqa: ASYNC110
                await asyncio.sleep(POLL_S)
            samples.append(time.perf_counter() - t0)
        return samples, idle
    finally:
        term.close()


def _top(term: Terminal) -> str:
    """The first row's ref: the selected ask, kept in view when answered."""
    return term.screen().splitlines()[2].split()[1]


async def idle_share(pid: int, seconds: float) -> float:
    await asyncio.sleep(3)  # settled: the first paint and the list's first reads are done
    c0, t0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


async def run(args: argparse.Namespace) -> int:
    if shutil.which("tmux") is None:
        print("bench_tui needs tmux (apt-get install tmux)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="aye-bench-tui-"))
    server = Server(f"sqlite+aiosqlite:///{workdir}/aye.db", workdir, "op-bench", "agent-bench")
    await server.start()
    rows: list[tuple[str, str, str, bool | None]] = []
    try:
        async with api_for(server) as api:
            log(f"creating {OPEN_ASKS} open asks ...")
            ids = await api.create_many(OPEN_ASKS)
            log("answers seen in-process ...")
            headless = await in_process(server, api, ids, args.answers)
            rows += latency_rows("answer to TUI list, in-process", headless)
            for _ in range(len(headless)):  # back to 500 open for the terminal
                ids.append(await api.create())
            asks = [await api.get(api.agent, i) for i in ids]
            refs = {a["id"]: a["ref"] for a in asks if a["status"] == "open"}
            log("aye tui in tmux: idle CPU, then answers seen on screen ...")
            seen, idle = await in_terminal(server, api, refs, args.terminal, args.idle)
            rows += latency_rows("answer to tmux screen", seen)
            rows.append((f"idle CPU, {OPEN_ASKS} open asks, {args.idle:g} s",
                         f"{idle * 100:.2f} % of a core", "<= 1 %", idle <= IDLE_TARGET))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return report(rows)


def latency_rows(label: str, samples: list[float]) -> list[tuple[str, str, str, bool | None]]:
    p50, p99 = ms(percentile(samples, 50)), ms(percentile(samples, 99))
    return [(f"{label} p50 (n={len(samples)})", f"{p50:.0f} ms", "<= 200 ms",
             p50 <= LATENCY_TARGET_MS),
            (f"{label} p99", f"{p99:.0f} ms", "", None)]


def report(rows: list[tuple[str, str, str, bool | None]]) -> int:
    info = machine_info()
    print(f"\nbench_tui: SQLite, {OPEN_ASKS} open asks, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"machine: {info['cpus']} CPUs ({info['cpu']}), load average at start {info['load']}")
    table = [("metric", "value", "target", "ok"),
             *[(m, v, t, "" if ok is None else ("yes" if ok else "NO")) for m, v, t, ok in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for number, row in enumerate(table):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if number == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return 1 if any(ok is False for *_, ok in rows) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples: a smoke run")
    args = parser.parse_args()
    args.answers, args.terminal, args.idle = (10, 5, 5.0) if args.quick else (100, 30, 30.0)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
