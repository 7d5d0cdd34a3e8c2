"""Revision 0016: kept receipts and counted uses, on a store upgraded in place, on SQLite and
PostgreSQL. An approval used before counts as used once (so a `not_run` of its next use gives
nothing back); no receipt is made up for an approval decided before; the downgrade takes both
columns away."""

from __future__ import annotations

from tests.middle.test_migrations import (
    APPROVED,
    make_0_1_0_store,
    move_to,
    open_store,
    query,
    revision,
    schema,
    unquoted,
    upgrade_to,
)


async def test_an_approval_used_before_counts_one_use_and_gets_no_receipt(
    empty_database_url: str,
) -> None:
    await make_0_1_0_store(empty_database_url)
    await open_store(empty_database_url)
    found = await query(empty_database_url, "SELECT id, approval_uses, receipt FROM asks ORDER BY seq")
    assert [(ask, uses) for ask, uses, _ in found if uses is not None] == [(APPROVED, 1)]
    assert {receipt for _, _, receipt in found} == {None}


async def test_revision_0016_adds_receipt_and_approval_uses_and_its_downgrade_takes_them_away(
    empty_database_url: str,
) -> None:
    await upgrade_to(empty_database_url, "0015")
    at_0015 = unquoted(await schema(empty_database_url))
    await move_to(empty_database_url, "upgrade", "0016")
    assert await query(empty_database_url, "SELECT count(*) FROM asks WHERE receipt IS NOT NULL "
                                     "OR approval_uses IS NOT NULL") == [(0,)]
    assert unquoted(await schema(empty_database_url)) != at_0015
    await move_to(empty_database_url, "downgrade", "0015")
    assert await revision(empty_database_url) == ["0015"]
    # SQLite rebuilds the table to drop a column, and quotes its name in the new DDL.
    assert unquoted(await schema(empty_database_url)) == at_0015
