"""Proof that survives the database, end to end over the HTTP API, on both stores: an
approval's receipt is signed once, when it is decided, and kept; every read returns the same
bytes, whatever is later written onto the ask's row outside aye (a refusal turned into an
approval keeps its refusal's receipt; a row that lost its receipt gets none). The audit chain's
entry that recorded the decision carries the receipt's hash (`receipt_sha256`), and each use of
the grant is in the chain with its number."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from sqlalchemy import text

from aye_client import verify_receipt
from core.app.timing import ManualClock
from tests.conftest import Aye, StartAye
from tests.e2e.test_audit import assert_unbroken, whole_chain
from tests.e2e.test_github_e2e import NUMBER, REPO
from tests.e2e.test_people_across_surfaces import (
    ADA_SLACK,
    BOB_GITHUB,
    github_reacts,
    pending,
    slack_says,
    started,
)
from tests.e2e.test_receipts import approved, call, gates, keys
from tests.fake_github import FakeGitHub
from tests.fake_slack import FakeSlack


def sha256(receipt: str) -> str:
    return hashlib.sha256(receipt.encode()).hexdigest()


async def edit_row(aye: Aye, approval: str, assignments: str) -> None:
    """Write onto the ask's row behind aye's back, as someone with the database would."""
    async with aye.asks.parts.store.write() as conn:
        done = await conn.execute(text(f"UPDATE asks SET {assignments} WHERE id = :id"),
                                  {"id": approval})
        assert done.rowcount == 1


async def entries_of(aye: Aye, approval: str) -> list[dict[str, Any]]:
    entries = await whole_chain(aye, limit=100)
    assert_unbroken(entries)
    return [e for e in entries if e["ask"] == approval]


async def test_the_receipt_signed_at_the_approval_is_the_one_every_read_returns(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    status, allowed = await approved(aye)
    assert status == 200, allowed
    approval, receipt = allowed["approval"], allowed["receipt"]
    chain = await entries_of(aye, approval)
    decided = [e for e in chain if e["event"] == "answered"]
    assert [e["receipt_sha256"] for e in decided] == [sha256(receipt)]
    assert [(e["event"], e["use"]) for e in chain if e["event"] == "used"] == [("used", 1)]
    # Someone with the database names another approver and moves the time: the receipt read
    # afterwards is still the one signed at the decision, not a fresh one of the edited row.
    await edit_row(aye, approval, "answered_by = 'operator:mallory', closed_at = closed_at + 600")
    assert (await aye.get(approval))["receipt"] == receipt
    claims = verify_receipt(receipt, await keys(aye))
    assert [a["by"] for a in claims["approvers"]] == ["operator:local"]


async def test_an_approval_refused_then_edited_to_approved_still_proves_the_refusal(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates(remember_refusal="0s"))
    status, pending_call = await call(aye)
    assert status == 202
    approval = pending_call["ask"]["id"]
    assert (await aye.answer(approval, "refuse"))[0] == 200
    receipt = (await aye.get(approval))["receipt"]
    await edit_row(aye, approval, "outcome = 'approved', answer_value = 'approve'")
    status, allowed = await call(aye)  # the edited row lets the call through...
    assert (status, allowed["approval"]) == (200, approval)
    assert allowed["receipt"] == receipt  # ...but its proof still says who refused
    assert verify_receipt(allowed["receipt"], await keys(aye))["decision"] == "approval_refused"
    chain = await entries_of(aye, approval)
    assert [(e["outcome"], e["receipt_sha256"]) for e in chain if e["event"] == "answered"] == [
        ("approval_refused", sha256(receipt))]


async def test_a_row_without_a_kept_receipt_gets_none_signed_after_the_fact(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    _, allowed = await approved(aye)
    await edit_row(aye, allowed["approval"], "receipt = NULL")  # as before revision 0016
    assert "receipt" not in await aye.get(allowed["approval"])


async def test_a_timed_out_approval_is_signed_as_it_expires(
    start_aye: StartAye, database_url: str
) -> None:
    clock = ManualClock(time.time() - 7200)  # its `iat` in the past once an hour has gone
    aye = await start_aye(database_url, gates(), clock=clock)
    status, asked = await call(aye)
    assert status == 202
    approval = asked["ask"]["id"]
    clock.advance(3601)
    await aye.tick()
    receipt = (await aye.get(approval))["receipt"]
    assert verify_receipt(receipt, await keys(aye))["decision"] == "approval_timed_out"
    chain = await entries_of(aye, approval)
    assert [e["receipt_sha256"] for e in chain if e["event"] == "expired"] == [sha256(receipt)]
    assert (await aye.get(approval))["receipt"] == receipt


async def test_a_quorums_receipt_names_every_approver_as_it_is_decided(
    start_aye: StartAye, database_url: str, fake_slack: FakeSlack, fake_github: FakeGitHub
) -> None:
    fake_github.open_issue(REPO, NUMBER, login="carol")
    hub = await started(start_aye, database_url, fake_slack, fake_github, approvals=2)
    ask, post = await pending(hub.aye, fake_slack)
    await slack_says(fake_slack, ADA_SLACK, post)
    assert await github_reacts(hub, BOB_GITHUB) == "+1"
    receipt = (await hub.aye.get(ask["id"]))["receipt"]
    claims = verify_receipt(receipt, await keys(hub.aye))
    assert [(a["by"], a["person"], a["surface"]) for a in claims["approvers"]] == [
        (f"slack:{ADA_SLACK}", "ada", "slack"), (f"github:{BOB_GITHUB}", "bob", "github")]
    chain = await entries_of(hub.aye, ask["id"])
    assert [e["receipt_sha256"] for e in chain if e["event"] == "answered"] == [sha256(receipt)]
