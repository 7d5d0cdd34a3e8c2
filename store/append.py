"""The end of every change: its history entries appended to the audit chain (store/chain.py),
its events (store/events.py) and, on PostgreSQL, the NOTIFYs that wake other processes.

On PostgreSQL this is the critical section of every change of every process: the commit-order
lock is taken here and held to the commit, so that event ids are handed out in commit order
and each appender reads the chain's head its predecessor left. It is kept to two round trips
before the COMMIT: the lock (in the statement that records the reads a change carries:
read_then_lock), then one statement that checks the head this process expects (`Head`, the
last it wrote or saw) and, if it is the head, writes the history entries, the events and the
NOTIFYs at once. The head is checked by its place and its hash: a head this process moved in a
change that was then rolled back (its commit never came) may name a place another process has
since filled with another entry. When the head is not the one expected (another process
appended meanwhile, or that), the statement writes nothing and returns the head; the entries
are chained after it and written (the lock is held: the head cannot move again). The unique
index on history.chain_seq stays the last word: two entries never share a place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from store import audit, chain
from store import events as event_rows
from store.asks import add_histories, mark_read_many
from store.db import NOTIFY_CHANNEL, Conn

_UNNEST_HISTORY = (
    "unnest(CAST(:h_ask AS bigint[]), CAST(:h_at AS float8[]), CAST(:h_event AS text[]), "
    "CAST(:h_detail AS text[]), CAST(:h_seq AS bigint[]), CAST(:h_prev AS text[]), "
    "CAST(:h_hash AS text[])) AS x(ask_seq, at, event, detail, chain_seq, prev, hash)"
)
_UNNEST_EVENTS = (
    "unnest(CAST(:e_at AS float8[]), CAST(:e_ask AS bigint[]), CAST(:e_agent AS text[]), "
    "CAST(:e_event AS text[])) AS y(at, ask_seq, agent, event)"
)
# Every part reads `ok` (the head is the one expected, or there is no history to chain), so
# nothing is written on a miss; each part is named in the final SELECT, which makes PostgreSQL
# run it. One snapshot for all, taken after the lock (the statement before): the head it sees
# is the head.
APPEND = text(f"""
WITH head AS (SELECT coalesce(max(chain_seq), 0) AS seq FROM history),
ok AS (SELECT 1 AS one FROM head WHERE NOT CAST(:check AS boolean) OR (seq = :expected AND
       coalesce((SELECT hash FROM history WHERE chain_seq = head.seq), :genesis) = :expected_hash)),
h AS (INSERT INTO history (ask_seq, at, event, detail, chain_seq, prev, hash)
      SELECT x.ask_seq, x.at, x.event, CAST(x.detail AS json), x.chain_seq, x.prev, x.hash
      FROM ok, {_UNNEST_HISTORY} RETURNING 1),
e AS (INSERT INTO events (at, ask_seq, agent, event)
      SELECT y.at, y.ask_seq, y.agent, y.event FROM ok, {_UNNEST_EVENTS} RETURNING 1),
n AS (SELECT pg_notify(:channel, i) FROM ok, unnest(CAST(:ids AS text[])) AS i)
SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM h), (SELECT count(*) FROM e),
       (SELECT count(*) FROM n), head.seq,
       (SELECT hash FROM history WHERE chain_seq = head.seq)
FROM head
""")


# The agents' reads a change carries (core.app.reads), recorded once each, and then the
# commit-order lock, in one round trip. The lock comes after every row the reads update is
# locked (the aggregate reads them all first): a change that holds an ask's row and waits for
# the lock must never wait on one that holds the lock and waits for that row.
READ_THEN_LOCK = text("""
WITH r AS (UPDATE asks SET read_at = :now WHERE seq = ANY(CAST(:seqs AS bigint[]))
           AND read_at IS NULL AND status <> 'open' RETURNING seq),
w AS (SELECT array_agg(seq) AS seqs FROM r)
SELECT w.seqs, pg_advisory_xact_lock(7315, 1) FROM w
""")


@dataclass(slots=True)
class Head:
    """The chain's head as this process last wrote or read it: a guess, checked under the lock
    before anything is chained after it."""

    seq: int = -1
    hash: str = chain.GENESIS


def chained(history: list[dict[str, Any]], ask_ids: list[str], last: int,
            prev: str) -> list[dict[str, Any]]:
    """The history entries with their places in the chain after (`last`, `prev`)."""
    rows = []
    for entry, ask_id in zip(history, ask_ids, strict=True):
        last += 1
        linked = chain.entry(last, entry["at"], ask_id, entry["event"], entry["detail"], prev)
        rows.append({**entry, "chain_seq": last, "prev": prev, "hash": linked["hash"]})
        prev = linked["hash"]
    return rows


async def read_then_lock(conn: Conn, seqs: list[int], now: float, postgres: bool) -> set[int]:
    """The first reads of the asks `seqs` (closed) recorded, and those recorded; then, on
    PostgreSQL, the commit-order lock taken (held to the commit), in the same round trip."""
    if not postgres:
        return set(await mark_read_many(conn, seqs, now))
    if not seqs:
        await conn.execute(event_rows.EVENT_LOCK)
        return set()
    found = (await conn.execute(READ_THEN_LOCK, {"now": now, "seqs": sorted(set(seqs))})).one()
    return {int(seq) for seq in found[0] or ()}


async def append(
    conn: Conn, head: Head, history: list[dict[str, Any]], ask_ids: list[str],
    events: list[dict[str, Any]], notify: list[str], postgres: bool,
) -> None:
    """Write a change's history entries (chained), its events and (PostgreSQL) its NOTIFYs,
    last in its transaction, the commit-order lock taken (read_then_lock). `head` is updated
    to the chain's new head."""
    if not postgres:  # SQLite's writer is one: the head it reads is the head
        last, prev = await audit.head(conn, False)
        rows = chained(history, ask_ids, last, prev or chain.GENESIS)
        await add_histories(conn, rows)
        await event_rows.add_many(conn, events, serialize=False)
        _moved(head, rows)
        return
    # With no history there is nothing to chain: no head to check (a head not known yet is
    # -1, which no head is: the first statement misses and says what it is).
    rows = chained(history, ask_ids, max(head.seq, 0), head.hash)
    found = (await conn.execute(APPEND, _binds(rows, events, notify, head))).one()
    if not found[0]:  # another process appended since: chain after the head it left
        head.seq, head.hash = int(found[4]), str(found[5] or chain.GENESIS)
        rows = chained(history, ask_ids, head.seq, head.hash)
        found = (await conn.execute(APPEND, _binds(rows, events, notify, head))).one()
        if not found[0]:
            raise RuntimeError("the audit chain moved under the commit-order lock")
    _moved(head, rows)


def _moved(head: Head, rows: list[dict[str, Any]]) -> None:
    if rows:
        head.seq, head.hash = int(rows[-1]["chain_seq"]), str(rows[-1]["hash"])


def _binds(rows: list[dict[str, Any]], events: list[dict[str, Any]], notify: list[str],
           expected: Head) -> dict[str, Any]:
    return {
        "check": bool(rows), "expected": expected.seq, "expected_hash": expected.hash,
        "genesis": chain.GENESIS, "channel": NOTIFY_CHANNEL, "ids": notify,
        "h_ask": [r["ask_seq"] for r in rows], "h_at": [float(r["at"]) for r in rows],
        "h_event": [r["event"] for r in rows], "h_detail": [json.dumps(r["detail"]) for r in rows],
        "h_seq": [r["chain_seq"] for r in rows], "h_prev": [r["prev"] for r in rows],
        "h_hash": [r["hash"] for r in rows],
        "e_at": [float(e["at"]) for e in events], "e_ask": [e["ask_seq"] for e in events],
        "e_agent": [e["agent"] for e in events], "e_event": [e["event"] for e in events],
    }
