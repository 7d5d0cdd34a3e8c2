"""Benchmark of email: mails a second aye sends to a local SMTP server (aiosmtpd on 127.0.0.1,
the same as the tests'), and whether a slow SMTP server slows anything else.

    .venv/bin/python bench/bench_email.py            # SQLite in a temporary folder
    .venv/bin/python bench/bench_email.py --asks 100

In one process, the real app (bot.app.create_app, its outbox loop and clock) on a real port:
1. throughput: N asks, each for one email responder, created at once with pacing lifted
   (`?rate=1000`); mails/s is N over the time from the first create to the last mail taken;
2. independence: the same load with a fast server and with one that takes SLOW_S to answer each
   DATA, while another surface (a recorder plugged in beside email) is handed each ask's post,
   and the operator answers asks over HTTP. The recorder's delay (create to its delivery) and the
   answer's round trip should not change when the SMTP server is slow.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ask_api.tokens import TokenBook
from bot.app import SERVICE, create_app
from bot.config import Config
from bot.settings import Settings
from core.app.ports import POST, AskRow
from core.domain.responders import Responder
from tests.smtp_server import MAIL_FROM, PUBLIC_URL, Mailbox, smtp_server

OP, AGENT = "op-bench-token", "agent-bench-token"
SLOW_S = 5.0


class Recorder:
    """Another surface beside email: when each ask's post reached it."""

    name = "recorder"

    def __init__(self, expected: int) -> None:
        self.at: dict[str, float] = {}
        self.expected, self.all_in = expected, asyncio.Event()

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return False

    def wants(self, ask: AskRow, action: str) -> bool:
        return action == POST

    async def deliver(self, ask: AskRow, action: str, payload: dict[str, Any] | None) -> None:
        self.at.setdefault(ask.id, time.monotonic())
        if len(self.at) >= self.expected:
            self.all_in.set()

    def health(self) -> dict[str, Any]:
        return {"on": True}

    def routes(self) -> list[Any]:
        return []

    async def start(self, session: Any) -> None:
        return None

    async def close(self) -> None:
        return None


async def run(folder: Path, box: Mailbox, port: int, asks: int, answer_every: int | None,
              gap_s: float = 0.0) -> dict[str, float]:
    """Create `asks`, `gap_s` apart (each `answer_every`-th answered 0.2 s later); with no
    answers, wait for every mail and count mails/s."""
    env = {"AYE_DATABASE_URL": f"sqlite+aiosqlite:///{folder}/aye.db",
           "AYE_CONFIG": "/nonexistent/aye.toml", "AYE_PUBLIC_URL": PUBLIC_URL,
           "AYE_SMTP_URL": f"smtp://127.0.0.1:{port}?rate=1000&timeout=30",
           "AYE_MAIL_FROM": MAIL_FROM}
    os.environ["AYE_TOKEN_BENCH"] = AGENT
    config = Config.model_validate({"agents": [{
        "name": "bench", "token_env": "AYE_TOKEN_BENCH", "max_open": 1_000_000,
        "asks_per_minute": 1_000_000, "responders": ["email:ada@example.com", "operator:local"]}]})
    app = create_app(Settings.from_env(env), config, TokenBook.build(config, OP, AGENT))
    recorder = Recorder(asks)
    every_mail = asyncio.Event()
    box.on_taken = lambda: every_mail.set() if len(box.received) >= asks else None
    app[SERVICE].add_surface(recorder)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    created: dict[str, float] = {}
    answers: list[float] = []
    try:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {AGENT}"}) as http:
            started = time.monotonic()

            async def one(i: int) -> None:
                await asyncio.sleep(i * gap_s)
                asked = time.monotonic()  # the post may reach the recorder before the 201 does
                async with http.post(f"{url}/v1/asks", json={"question": f"Ship {i}?",
                                                             "options": ["yes", "no"]}) as resp:
                    made = await resp.json()
                    assert resp.status == 201, made
                created[made["id"]] = asked
                if answer_every and i % answer_every == 0:
                    await asyncio.sleep(0.2)  # answered a moment later, as a person would
                    t0 = time.monotonic()
                    async with http.post(f"{url}/v1/asks/{made['ref']}/answer",
                                         json={"answer": "yes"},
                                         headers={"Authorization": f"Bearer {OP}"}) as resp:
                        assert resp.status == 200, await resp.text()
                    answers.append(time.monotonic() - t0)

            await asyncio.gather(*(one(i) for i in range(asks)))
            await recorder.all_in.wait()
            mails_done = None
            if not answer_every:
                await every_mail.wait()
                mails_done = time.monotonic() - started
    finally:
        await runner.cleanup()
    delays = [recorder.at[i] - created[i] for i in created]
    out = {"recorder p50 ms": statistics.median(delays) * 1000,
           "recorder max ms": max(delays) * 1000}
    if answers:
        out |= {"answer p50 ms": statistics.median(answers) * 1000,
                "answer max ms": max(answers) * 1000}
    if mails_done is not None:
        out["mails"] = float(len(box.received))
        out["mails/s"] = len(box.received) / mails_done
    return out


async def main(asks: int) -> None:
    print(f"bench_email: {asks} asks, each for one email responder (SQLite), pacing lifted")
    results: dict[str, dict[str, float]] = {}
    runs = (("throughput: all at once, fast SMTP, no answers", 0.0, None, 0.0),
            ("all at once, fast SMTP, every 5th answered", 0.0, 5, 0.0),
            (f"all at once, slow SMTP ({SLOW_S:g} s a DATA), every 5th answered", SLOW_S, 5, 0.0),
            ("20 asks/s, fast SMTP, every 5th answered", 0.0, 5, 0.05),
            (f"20 asks/s, slow SMTP ({SLOW_S:g} s a DATA), every 5th answered", SLOW_S, 5, 0.05))
    for name, delay, answer_every, gap in runs:
        box = Mailbox(delay_s=delay)
        async with smtp_server(box) as server:
            with tempfile.TemporaryDirectory() as folder:
                results[name] = await run(Path(folder), box, server.port, asks, answer_every, gap)
    for name, figures in results.items():
        print(f"\n{name}")
        for key, value in figures.items():
            print(f"  {key:16} {value:10.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=200)
    asyncio.run(main(parser.parse_args().asks))
