"""Benchmark of aye's web inbox and event stream against a real `aye serve` subprocess.

    .venv/bin/python bench/bench_live.py              # SQLite, full counts (~1 min on 2 cores)
    .venv/bin/python bench/bench_live.py --quick      # smaller counts, a smoke run
    .venv/bin/python bench/bench_live.py --postgres   # PostgreSQL (its schema public is dropped!)

It prints one table (metric | value | target | ok) and exits 1 when a target is missed or a
step failed. What each figure means, and how it is measured, is in bench/README.md. The server,
the HTTP client and the table come from bench_asks.py, beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import re
import secrets
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from bench_asks import (
    Api,
    Results,
    Server,
    ServerError,
    advance_sequences,
    api_for,
    bench_args,
    cancel_all,
    fmt_ms,
    log,
    machine_info,
    ms,
    percentile,
    pg_dsn,
    print_report,
    raise_nofile,
    reset_pg,
    running,
    step,
    vacuum,
)
from yarl import URL

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/aye_bench_live"
PAGE = 50  # handlers/web/pages.py: asks a page
WARMUPS = 20
STREAM_BATCH = 50  # streams opened at once: the listen backlog is 128
DELIVERY_TIMEOUT_S = 30.0
LOAD_BATCH = 50_000
MB = 1024 * 1024

TARGET_INBOX_P50_MS = 100.0
TARGET_STREAMS_RSS_MB = 50.0
TARGET_DELIVERY_P99_MS = 50.0

INBOX, ALL, STREAMS = "inbox render", "inbox ?status=all", "event streams"
PERSON = "a person's inbox"
# A person of [[people]], and how many of the open asks are hers (every tenth).
PERSON_ID, PERSON_EVERY = "github:ada-l", 10
PEOPLE_CONFIG = f'[[people]]\nname = "ada"\nids = ["{PERSON_ID}"]\n'

ANSWERED = "ask.answered"
CARD = re.compile(r'<li class="ask ')
NEXT = re.compile(r'<a href="([^"]+)" rel="next">')
# History columns a clone does not copy: its own id, and a place in the audit chain (each is
# one entry's; clones take none, and the server's own chain goes on from its head).
NOT_CLONED = ("id", "chain_seq", "prev", "hash")
# Columns of `asks` and `history` that hold a time: a clone is moved in time as a whole.
TIME_COLUMNS = (
    "created_at", "deadline", "due_at", "closed_at", "read_at", "escalate_at", "escalated_at",
    "approval_used_at", "remind_at", "reminded_at", "at",
)


@dataclass(frozen=True)
class Counts:
    open_asks: int
    closed_asks: int
    inbox_samples: int
    streams: int
    events: int


FULL = Counts(open_asks=1_000, closed_asks=10_000, inbox_samples=300, streams=200, events=200)
QUICK = Counts(open_asks=1_000, closed_asks=2_000, inbox_samples=50, streams=50, events=30)


# -- filling the store: clones of asks the server made itself ---------------------------------
#
# The asks are copied from one the server created (and, for closed ones, answered) over the
# API, so every column holds what the server writes, whatever columns the schema has now.


def clones(template: dict[str, Any], history: list[dict[str, Any]], first_seq: int, count: int,
           spacing_s: float) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """`count` copies of the template ask with its history, each with its own seq, id and
    question, each `spacing_s` older than the one before (so open ones stay open)."""
    for k in range(count):
        seq = first_seq + k
        shift = -(k + 1) * spacing_s
        row = dict(template, seq=seq, id=uuid.uuid4().hex,
                   question=f"Bench question {seq}: ship it?")
        rows = [dict(h, ask_seq=seq) for h in history]
        for record in (row, *rows):
            for name in TIME_COLUMNS:
                if record.get(name) is not None:
                    record[name] = record[name] + shift
        yield row, rows


def clone_sqlite(path: Path, template_id: str, count: int, spacing_s: float) -> int:
    """Append `count` clones of the ask `template_id`; the store's ask count afterwards."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA synchronous=OFF")
        found = conn.execute("SELECT * FROM asks WHERE id = ?", (template_id,)).fetchone()
        if found is None:
            raise RuntimeError(f"no ask {template_id} to copy")
        template = dict(found)
        hist_cols = [r[1] for r in conn.execute("PRAGMA table_info(history)")
                     if r[1] not in NOT_CLONED]
        history = [dict(r) for r in conn.execute(
            f"SELECT {', '.join(hist_cols)} FROM history WHERE ask_seq = ? ORDER BY id",
            (template["seq"],),
        )]
        ask_cols = list(template)
        ask_sql = (f"INSERT INTO asks ({', '.join(ask_cols)}) "
                   f"VALUES ({', '.join('?' for _ in ask_cols)})")
        hist_sql = (f"INSERT INTO history ({', '.join(hist_cols)}) "
                    f"VALUES ({', '.join('?' for _ in hist_cols)})")
        first = conn.execute("SELECT MAX(seq) FROM asks").fetchone()[0] + 1
        asks: list[tuple[Any, ...]] = []
        hist: list[tuple[Any, ...]] = []

        def flush() -> None:
            conn.execute("BEGIN")
            conn.executemany(ask_sql, asks)
            conn.executemany(hist_sql, hist)
            conn.execute("COMMIT")
            asks.clear()
            hist.clear()

        for row, rows in clones(template, history, first, count, spacing_s):
            asks.append(tuple(row[c] for c in ask_cols))
            hist.extend(tuple(h[c] for c in hist_cols) for h in rows)
            if len(asks) >= LOAD_BATCH:
                flush()
        if asks:
            flush()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(conn.execute("SELECT COUNT(*) FROM asks").fetchone()[0])
    finally:
        conn.close()


async def clone_pg(url: str, template_id: str, count: int, spacing_s: float) -> int:
    """As clone_sqlite, with COPY; the sequences are moved past the keys written."""
    import asyncpg

    conn = await asyncpg.connect(pg_dsn(url))
    try:
        found = await conn.fetchrow("SELECT * FROM asks WHERE id = $1", template_id)
        if found is None:
            raise RuntimeError(f"no ask {template_id} to copy")
        template = dict(found)
        ask_cols = list(found.keys())
        hist_rows = await conn.fetch("SELECT * FROM history WHERE ask_seq = $1 ORDER BY id",
                                     template["seq"])
        hist_cols = [c for c in (hist_rows[0].keys() if hist_rows else []) if c not in NOT_CLONED]
        history = [{c: r[c] for c in hist_cols} for r in hist_rows]
        first = int(await conn.fetchval("SELECT MAX(seq) FROM asks")) + 1
        asks: list[tuple[Any, ...]] = []
        hist: list[tuple[Any, ...]] = []

        async def flush() -> None:
            await conn.copy_records_to_table("asks", records=asks, columns=ask_cols)
            if hist:
                await conn.copy_records_to_table("history", records=hist, columns=hist_cols)
            asks.clear()
            hist.clear()

        async with conn.transaction():
            for row, rows in clones(template, history, first, count, spacing_s):
                asks.append(tuple(row[c] for c in ask_cols))
                hist.extend(tuple(h[c] for c in hist_cols) for h in rows)
                if len(asks) >= LOAD_BATCH:
                    await flush()
            if asks:
                await flush()
            await advance_sequences(conn)
        await vacuum(conn)
        return int(await conn.fetchval("SELECT COUNT(*) FROM asks"))
    finally:
        await conn.close()


async def clone(args: argparse.Namespace, server: Server, template_id: str, count: int,
                spacing_s: float, what: str) -> int:
    """Bulk-insert clones into a stopped server's store; its ask count afterwards."""
    t0 = time.perf_counter()
    if args.postgres:
        total = await clone_pg(server.database_url, template_id, count, spacing_s)
    else:
        total = clone_sqlite(Path(server.database_url.split(":///", 1)[1]), template_id, count,
                             spacing_s)
    log(f"loaded {count:,} {what} asks; the store holds {total:,} "
        f"({time.perf_counter() - t0:.1f}s)")
    return total


# -- the inbox --------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def signed_in(server: Server, cookie: str | None = None) -> AsyncIterator[aiohttp.ClientSession]:
    """A browser: one keep-alive connection, signed in through the /login form (the operator),
    or with the session `cookie` a person's sign-in set."""
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1),
        cookie_jar=aiohttp.CookieJar(unsafe=True),  # the server is an IP address
        timeout=aiohttp.ClientTimeout(total=60),
    ) as session:
        if cookie is not None:
            session.cookie_jar.update_cookies({"aye_session": cookie}, URL(server.url))
        else:
            async with session.post(f"{server.url}/login", allow_redirects=False,
                                    data={"token": server.operator, "next": "/inbox"}) as resp:
                body = await resp.text()
                if resp.status != 303:
                    raise ServerError("login", resp.status, body)
        if not any(c.key.endswith("aye_session") for c in session.cookie_jar):
            raise RuntimeError("/login set no session cookie")
        yield session


@dataclass
class Page:
    took: float
    cards: int
    size: int
    next_url: str | None


async def get_page(server: Server, session: aiohttp.ClientSession, path: str,
                   errors: Counter[str]) -> Page:
    """GET an inbox page; the client-observed time from sending to the body read."""
    t0 = time.perf_counter()
    async with session.get(server.url + path, allow_redirects=False) as resp:
        body = await resp.text()
    took = time.perf_counter() - t0
    if resp.status != 200:
        if resp.status >= 500:
            errors[f"inbox {resp.status}"] += 1
        raise ServerError(f"GET {path}", resp.status, body)
    found = NEXT.search(body)
    return Page(took, len(CARD.findall(body)), len(body.encode()),
                html.unescape(found.group(1)) if found else None)


@dataclass
class InboxResult:
    latencies: list[float]
    cpu_per_page: float
    size: int
    cards: int
    has_next: bool
    rss_before_kb: int
    rss_after_kb: int
    hwm_after_kb: int


async def measure_inbox(server: Server, path: str, n: int, errors: Counter[str],
                        cookie: str | None = None) -> InboxResult:
    """Sign in, then GET `path` WARMUPS times, then n times timed, one at a time."""
    async with signed_in(server, cookie) as session:
        mem = server.memory_kb()
        for _ in range(WARMUPS):
            first = await get_page(server, session, path, errors)
        if first.cards != PAGE or first.next_url is None:
            raise RuntimeError(f"{path} showed {first.cards} asks and "
                               f"{'a' if first.next_url else 'no'} next page; expected {PAGE} and one")
        latencies = []
        cpu = server.cpu_seconds()
        for _ in range(n):
            latencies.append((await get_page(server, session, path, errors)).took)
        cpu = server.cpu_seconds() - cpu
        after = server.memory_kb()
    return InboxResult(latencies, cpu / n, first.size, first.cards, first.next_url is not None,
                       mem.get("VmRSS", 0), after.get("VmRSS", 0), after.get("VmHWM", 0))


@dataclass
class WalkResult:
    pages: int
    asks: int
    distinct: int
    latencies: list[float]
    short_pages: int  # pages before the last with fewer than PAGE asks


async def walk_pages(server: Server, path: str, errors: Counter[str]) -> WalkResult:
    """Follow "Next page" from `path` to the end: every ask once, PAGE at a time."""
    refs: list[str] = []
    latencies: list[float] = []
    short = 0
    ref = re.compile(r'<li class="ask [^"]*" data-ref="([^"]+)"')
    async with signed_in(server) as session:
        url: str | None = path
        while url is not None:
            t0 = time.perf_counter()
            async with session.get(server.url + url, allow_redirects=False) as resp:
                body = await resp.text()
            latencies.append(time.perf_counter() - t0)
            if resp.status != 200:
                if resp.status >= 500:
                    errors[f"inbox {resp.status}"] += 1
                raise ServerError(f"GET {url}", resp.status, body)
            found = ref.findall(body)
            refs.extend(found)
            nxt = NEXT.search(body)
            url = html.unescape(nxt.group(1)) if nxt else None
            if url is not None and len(found) != PAGE:
                short += 1
    return WalkResult(len(latencies), len(refs), len(set(refs)), latencies, short)


# -- a person's inbox ---------------------------------------------------------------------------


async def make_some_hers(args: argparse.Namespace, server: Server) -> int:
    """Every PERSON_EVERY-th open ask is for PERSON_ID (and the operator) from now on, written in
    the stopped server's store; how many."""
    hers = '["' + PERSON_ID + '", "operator:local"]'
    where = f"status = 'open' AND seq % {PERSON_EVERY} = 0"
    if args.postgres:
        import asyncpg

        conn = await asyncpg.connect(pg_dsn(server.database_url))
        try:
            done = await conn.execute(f"UPDATE asks SET responders = $1::json WHERE {where}", hers)
        finally:
            await conn.close()
        return int(done.split()[-1])
    db = sqlite3.connect(Path(server.database_url.split(":///", 1)[1]), isolation_level=None)
    try:
        return db.execute(f"UPDATE asks SET responders = ? WHERE {where}", (hers,)).rowcount
    finally:
        db.close()


async def person_session(server: Server) -> str:
    """A session for PERSON_ID in the store, as her sign-in would start it (aye's own code,
    with the key the server derives from the operator token); the cookie's value."""
    from ask_api.tokens import TokenBook
    from bot.config import Config
    from core.app.sessions import Sessions
    from store.db import Store

    book = TokenBook.build(Config(), server.operator, server.agent)
    store = Store(server.database_url)
    try:
        sessions = Sessions(store, book.derived_key(b"web inbox sessions"), False, time.time)
        return (await sessions.start(PERSON_ID, "github")).secret
    finally:
        await store.close()


async def measure_person(args: argparse.Namespace, server: Server, n: int,
                         errors: Counter[str]) -> InboxResult:
    """The inbox of a person with some of the open asks hers, signed in as her."""
    return await measure_inbox(server, "/inbox", n, errors, await person_session(server))


# -- the event stream -------------------------------------------------------------------------


class Streams:
    """What each stream read: for every answered ask, when each stream had read its event."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.read_at: dict[str, list[float]] = {}
        self.complete: dict[str, asyncio.Future[None]] = {}
        self.ids: list[list[int]] = [[] for _ in range(n)]
        self.names: Counter[str] = Counter()

    def expect(self, ask_id: str) -> asyncio.Future[None]:
        future = self.complete.setdefault(ask_id, asyncio.get_running_loop().create_future())
        if len(self.read_at.get(ask_id, ())) >= self.n and not future.done():
            future.set_result(None)
        return future

    def got(self, k: int, event_id: int | None, name: str | None, data: bytes, at: float) -> None:
        self.names[name or "message"] += 1
        if event_id is not None:
            self.ids[k].append(event_id)
        if name != ANSWERED:
            return
        ask_id = str(json.loads(data)["id"])
        times = self.read_at.setdefault(ask_id, [])
        times.append(at)
        if len(times) >= self.n:
            self.expect(ask_id)


async def read_stream(k: int, resp: aiohttp.ClientResponse, streams: Streams) -> None:
    """Parse the SSE stream (`id:`, `event:`, `data:` lines; a blank line ends an event) a
    chunk at a time, as it arrives: an event counts as read when the chunk that completes it
    has been read off the socket."""
    pending = b""
    while chunk := await resp.content.readany():
        at = time.perf_counter()
        pending += chunk.replace(b"\r\n", b"\n")
        *frames, pending = pending.split(b"\n\n")
        for text in frames:
            event_id: int | None = None
            name: str | None = None
            data: bytes | None = None
            for line in text.split(b"\n"):
                if not line or line.startswith(b":"):  # a comment: the keep-alive
                    continue
                key, _, value = line.partition(b":")
                if value.startswith(b" "):
                    value = value[1:]
                if key == b"id":
                    event_id = int(value)
                elif key == b"event":
                    name = value.decode()
                elif key == b"data":
                    data = value if data is None else data + b"\n" + value
            if data is not None:
                streams.got(k, event_id, name, data, at)


@dataclass
class StreamResult:
    rss_before_kb: int
    rss_after_kb: int
    open_s: float
    delivery: list[float]  # every stream, every answer
    first: list[float]  # per answer: the first stream to read it
    last: list[float]  # per answer: the last stream to read it
    answer: list[float]
    cpu_per_answer: float
    client_cpu_per_answer: float
    missing: int
    duplicates: int


async def measure_streams(server: Server, api: Api, n_streams: int, n_events: int) -> StreamResult:
    """n_streams operator streams on their own sockets; then n_events answers one at a time,
    each timed from sending the answer to each stream having read its `ask.answered`."""
    ids = await api.create_many(n_events + WARMUPS)
    await server.settle()
    before = server.memory_kb().get("VmRSS", 0)
    streams = Streams(n_streams)
    url = f"{server.url}/v1/events"
    headers = {"Authorization": f"Bearer {server.operator}", "Accept": "text/event-stream"}
    responses: list[aiohttp.ClientResponse] = []
    readers: list[asyncio.Task[None]] = []
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, force_close=True),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=60, sock_read=None),
    ) as session:
        try:
            t0 = time.perf_counter()
            for start in range(0, n_streams, STREAM_BATCH):
                batch = range(start, min(start + STREAM_BATCH, n_streams))
                opened = await asyncio.gather(*(session.get(url, headers=headers) for _ in batch))
                for resp in opened:
                    responses.append(resp)
                    if resp.status != 200 or not resp.content_type == "text/event-stream":
                        raise ServerError("events", resp.status, await resp.text())
                for k in batch:
                    readers.append(asyncio.create_task(read_stream(k, responses[k], streams)))
            open_s = time.perf_counter() - t0
            await server.settle(readers)
            if any(t.done() for t in readers):
                raise RuntimeError(f"{sum(t.done() for t in readers)} streams ended early")
            after = server.memory_kb().get("VmRSS", 0)
            answer: list[float] = []
            delivery: list[float] = []
            first: list[float] = []
            last: list[float] = []
            for k, ask_id in enumerate(ids):
                done = streams.expect(ask_id)
                t0 = time.perf_counter()
                if k == WARMUPS:
                    cpu, client_cpu = server.cpu_seconds(), time.process_time()
                await api.answer(ask_id)
                took = time.perf_counter() - t0
                try:
                    await asyncio.wait_for(done, DELIVERY_TIMEOUT_S)
                except TimeoutError:
                    got = len(streams.read_at.get(ask_id, ()))
                    raise RuntimeError(f"after {DELIVERY_TIMEOUT_S:g} s only {got} of the "
                                       f"{n_streams} streams had read the answer of {ask_id}") from None
                if k < WARMUPS:
                    continue
                times = [at - t0 for at in streams.read_at[ask_id]]
                answer.append(took)
                delivery.extend(times)
                first.append(min(times))
                last.append(max(times))
            cpu = server.cpu_seconds() - cpu
            client_cpu = time.process_time() - client_cpu
            await asyncio.sleep(0.5)  # anything sent twice would have arrived by now
        finally:
            await cancel_all(readers)
            for resp in responses:
                resp.close()
    everyone = len(ids)
    missing = sum(max(0, everyone - len(set(seen))) for seen in streams.ids)
    duplicates = sum(len(seen) - len(set(seen)) for seen in streams.ids)
    duplicates += sum(max(0, len(t) - n_streams) for t in streams.read_at.values())
    return StreamResult(before, after, open_s, delivery, first, last, answer,
                        cpu / n_events, client_cpu / n_events, missing, duplicates)


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Measured:
    inbox: InboxResult | None = None
    inbox_all: InboxResult | None = None
    inbox_open_big: InboxResult | None = None
    person: InboxResult | None = None
    hers: int = 0
    walk: WalkResult | None = None
    streams: StreamResult | None = None
    total_asks: int = 0
    errors: Counter[str] = field(default_factory=Counter)


async def run(args: argparse.Namespace) -> int:
    counts = QUICK if args.quick else FULL
    raise_nofile()
    operator = "aye_op_bench_" + secrets.token_urlsafe(16)
    agent = "aye_ag_bench_" + secrets.token_urlsafe(16)
    results = Results()
    info = machine_info()
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="aye-bench-live-"))
    got = Measured()
    server_lines: list[str] = []
    errors = got.errors
    try:
        if args.postgres:
            await reset_pg(args.pg_url)
            url = str(args.pg_url)
        else:
            url = f"sqlite+aiosqlite:///{work / 'live.db'}"
        server = Server(url, work, operator, agent)

        # Two asks made by the server itself, the patterns of the ones loaded: one open, one
        # answered (and read).
        async with running(server), api_for(server) as api:
            open_id = await api.create(0)
            closed_id = await api.create(1)
            await api.answer(closed_id)
            await api.get(api.agent, closed_id)
            errors.update(api.errors)

        # 1. the inbox with open asks only.
        await clone(args, server, open_id, counts.open_asks - 1, 0.5, "open")
        async with running(server):
            got.inbox = await step(results, INBOX, server, lambda: measure_inbox(
                server, "/inbox", counts.inbox_samples, errors))
        server_lines += server.errors()

        # 1b. a person's inbox: some of the open asks hers, the server knowing her.
        got.hers = await make_some_hers(args, server)
        server.extra_config = PEOPLE_CONFIG
        async with running(server):
            got.person = await step(results, PERSON, server, lambda: measure_person(
                args, server, counts.inbox_samples, errors))
        server.extra_config = ""
        server_lines += server.errors()

        # 2. with many closed asks too: the open page, every ask's page, and all the pages.
        got.total_asks = await clone(args, server, closed_id, counts.closed_asks, 60.0, "closed")
        async with running(server):
            await server.settle()

            async def all_pages() -> InboxResult:
                got.inbox_all = await measure_inbox(server, "/inbox?status=all",
                                                    counts.inbox_samples, errors)
                got.inbox_open_big = await measure_inbox(server, "/inbox", counts.inbox_samples,
                                                         errors)
                got.walk = await walk_pages(server, "/inbox?status=all", errors)
                return got.inbox_all

            await step(results, ALL, server, all_pages)
        server_lines += server.errors()

        # 3. the event streams, on a fresh server process.
        async with running(server), api_for(server) as api:
            got.streams = await step(results, STREAMS, server, lambda: measure_streams(
                server, api, counts.streams, counts.events))
            errors.update(api.errors)
        server_lines += server.errors()
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    fill_table(results, counts, got)
    print_table(results, info, args, time.perf_counter() - began, server_lines)
    return 1 if results.missed else 0


def pair(values: Sequence[float]) -> str:
    return f"{fmt_ms(percentile(values, 50))} / {fmt_ms(percentile(values, 99))}"


def fill_table(results: Results, counts: Counts, got: Measured) -> None:
    n, closed = counts.open_asks, counts.closed_asks
    if INBOX in results.failed_steps:
        results.add_failed(INBOX)
    inbox = got.inbox
    if inbox is not None:
        p50 = percentile(inbox.latencies, 50)
        results.add(f"GET /inbox p50 ({n:,} open asks, first page of {PAGE})", fmt_ms(p50),
                    f"< {TARGET_INBOX_P50_MS:g} ms", ms(p50) < TARGET_INBOX_P50_MS)
        results.add("GET /inbox p99", fmt_ms(percentile(inbox.latencies, 99)))
        results.add("  server CPU per page / page size",
                    f"{fmt_ms(inbox.cpu_per_page)} / {inbox.size / 1024:.0f} KiB")
    if PERSON in results.failed_steps:
        results.add_failed(PERSON)
    person = got.person
    if person is not None:
        p50 = percentile(person.latencies, 50)
        results.add(f"a person's GET /inbox p50 / p99 ({got.hers} of {n:,} open asks hers)",
                    pair(person.latencies), f"p50 < {TARGET_INBOX_P50_MS:g} ms",
                    ms(p50) < TARGET_INBOX_P50_MS)
        results.add("  server CPU per page; p50 ratio to the operator's inbox",
                    f"{fmt_ms(person.cpu_per_page)}; "
                    + (f"{p50 / percentile(inbox.latencies, 50):.2f}" if inbox else "n/a"))
    if ALL in results.failed_steps:
        results.add_failed(ALL)
    every = got.inbox_all
    if every is not None:
        p50 = percentile(every.latencies, 50)
        results.add(f"GET /inbox?status=all p50 / p99 ({n:,} open + {closed:,} closed)",
                    pair(every.latencies), f"p50 < {TARGET_INBOX_P50_MS:g} ms",
                    ms(p50) < TARGET_INBOX_P50_MS)
        results.add("  server CPU per page / page size",
                    f"{fmt_ms(every.cpu_per_page)} / {every.size / 1024:.0f} KiB")
    big = got.inbox_open_big
    if big is not None:
        results.add(f"GET /inbox p50 / p99 with the {closed:,} closed too", pair(big.latencies))
    walk = got.walk
    if walk is not None:
        ok = (walk.asks == walk.distinct == got.total_asks and walk.short_pages == 0
              and walk.pages == -(-got.total_asks // PAGE))
        results.add(
            "every page of ?status=all, Next page to the end",
            f"{walk.pages} pages, {walk.distinct:,} of {got.total_asks:,} asks"
            + (f" ({walk.asks - walk.distinct} twice)" if walk.asks != walk.distinct else ""),
            f"each ask once, {PAGE} a page", ok,
        )
        results.add("  page p50 / slowest; first / last page",
                    f"{fmt_ms(percentile(walk.latencies, 50))} / {fmt_ms(max(walk.latencies))}; "
                    f"{fmt_ms(walk.latencies[0])} / {fmt_ms(walk.latencies[-1])}")
    if every is not None and big is not None:
        results.add("  server VmRSS before / after the ?status=all runs (VmHWM)",
                    f"{every.rss_before_kb / 1024:.0f} MB / {big.rss_after_kb / 1024:.0f} MB "
                    f"({big.hwm_after_kb / 1024:.0f} MB)")
    if STREAMS in results.failed_steps:
        results.add_failed(STREAMS)
    s = got.streams
    if s is not None:
        k, e = counts.streams, counts.events
        delta = (s.rss_after_kb - s.rss_before_kb) / 1024
        results.add(f"RSS for {k} open event streams (VmRSS delta)", f"{delta:.1f} MB",
                    f"< {TARGET_STREAMS_RSS_MB:g} MB", delta < TARGET_STREAMS_RSS_MB)
        results.add("  VmRSS idle before / with all streams open",
                    f"{s.rss_before_kb / 1024:.0f} MB / {s.rss_after_kb / 1024:.0f} MB")
        results.add(f"event delivery p50 ({k} streams x {e} answers)",
                    fmt_ms(percentile(s.delivery, 50)))
        p99 = percentile(s.delivery, 99)
        results.add(f"event delivery p99 ({k * e:,} deliveries)", fmt_ms(p99),
                    f"< {TARGET_DELIVERY_P99_MS:g} ms", ms(p99) < TARGET_DELIVERY_P99_MS)
        results.add("  first stream to read it p50 / last stream p50 / last p99",
                    f"{fmt_ms(percentile(s.first, 50))} / {fmt_ms(percentile(s.last, 50))} / "
                    f"{fmt_ms(percentile(s.last, 99))}")
        results.add("  the answer request alone p50 / p99", pair(s.answer))
        results.add(f"  CPU per answer + {k} deliveries: server / bench process (its {k} readers)",
                    f"{fmt_ms(s.cpu_per_answer)} / {fmt_ms(s.client_cpu_per_answer)}")
        results.add("events lost / delivered twice", f"{s.missing} / {s.duplicates}", "0 / 0",
                    s.missing == 0 and s.duplicates == 0)
    total = sum(got.errors.values())
    detail = ", ".join(f"{k}: {v}" for k, v in sorted(got.errors.items()))
    results.add("server errors (HTTP 5xx) in the whole run",
                f"{total}" + (f" ({detail})" if detail else ""), "0", total == 0)


def print_table(results: Results, info: dict[str, str], args: argparse.Namespace,
                elapsed: float, server_lines: list[str]) -> None:
    header = [f"load average at the end {machine_info()['load']}; latencies are "
              "client-observed, on localhost: from sending the request to the body (inbox) or "
              "the event (stream) having been read"]
    print_report("aye inbox and event stream benchmark", results, info, args, elapsed,
                 server_lines, header=header)


def main() -> int:
    return asyncio.run(run(bench_args(DEFAULT_PG_URL)))


if __name__ == "__main__":
    sys.exit(main())
