"""Revision 0015: refs become decimal (`q10`), and the asks made before keep the base-36 refs
their surfaces already posted (`qa`), on a store upgraded in place, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from core.domain import rules
from store import asks as q
from store.db import Store
from tests.builders import make_ask
from tests.middle.test_migrations import EXPIRED, is_pg, make_0_1_0_store, open_store, query, run_sql

FIRST = "9ec1e1b3d2254120b8f088639f99bf8b"  # a question, seq 1 in the fixture


async def found(url: str, typed: str) -> Any:
    parsed = rules.parse_ref(typed)
    assert parsed is not None
    store = Store(url)
    try:
        async with store.read() as conn:
            return await q.by_ref(conn, parsed.kind, parsed.candidates)
    finally:
        await store.close()


async def renumber(url: str, ask_id: str, seq: int) -> None:
    script = f"UPDATE asks SET seq = {seq} WHERE id = '{ask_id}';\n"
    if is_pg(url):
        script += "SELECT setval(pg_get_serial_sequence('asks', 'seq'), (SELECT max(seq) FROM asks));\n"
    await run_sql(url, script)


async def test_asks_made_before_keep_their_base36_refs_and_new_asks_get_decimal_ones(
    database_url: str,
) -> None:
    await make_0_1_0_store(database_url)
    await renumber(database_url, FIRST, 10)  # its ref, posted before the upgrade: `qa`
    await renumber(database_url, EXPIRED, 36)  # `q10`
    await open_store(database_url)

    assert await query(database_url, "SELECT count(*) FROM asks WHERE ref_base36 IS NOT TRUE") == [(0,)]
    assert (await found(database_url, "qa")).id == FIRST
    assert (await found(database_url, "Q10")).id == EXPIRED
    assert await found(database_url, "q36") is None  # ask 36's ref is `q10`, not `q36`

    store = Store(database_url)
    try:
        async with store.write() as conn:
            values = make_ask(question="After the upgrade?").model_dump(exclude={"seq", "id"})
            (new,) = await q.insert_many(conn, [{**values, "id": "f" * 32}])
        async with store.read() as conn:
            again = await q.by_id(conn, new.id)
    finally:
        await store.close()
    assert again is not None and again.seq == 37 and again.ref_base36 is None
    assert rules.ref(again) == "q37"
    assert (await found(database_url, "q37")).id == new.id
