"""Outcomes give back once, end to end over the HTTP API, on both stores: a single grant's
`not_run` gives it back once, so one approval runs at most twice (use 1, then use 2), and the
identical call asks again after a `not_run` of use 2; reports name their use (`"use": N`,
default the latest), a second report for one use is 409, and each use and each outcome is in
the approval's history with its number."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Aye, StartAye
from tests.e2e.test_receipts import approved, call, gates


async def report(aye: Aye, approval: str, outcome: str, **more: Any) -> tuple[int, dict[str, Any]]:
    resp = await aye.client.post("/v1/calls/outcome", headers=aye.headers,
                                 json={"approval": approval, "outcome": outcome, **more})
    return resp.status, await resp.json()


async def test_not_run_gives_a_single_grant_back_once_not_six_times(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    status, allowed = await approved(aye)  # use 1
    assert status == 200, allowed
    approval = allowed["approval"]
    assert await report(aye, approval, "not_run") == (
        200, {"approval": approval, "outcome": "not_run", "usable_again": True})
    status, again = await call(aye)  # use 2: the grant given back, once
    assert (status, again["approval"], again["receipt"]) == (200, approval, allowed["receipt"])
    assert await report(aye, approval, "not_run") == (
        200, {"approval": approval, "outcome": "not_run", "usable_again": False})
    status, third = await call(aye)  # nothing given back: the same call asks again
    assert status == 202, third
    assert third["ask"]["id"] != approval
    # Not again, however often it is reported.
    assert (await report(aye, approval, "not_run"))[0] == 409
    assert (await call(aye))[1]["ask"]["id"] == third["ask"]["id"]
    history = (await aye.get(approval, operator=True))["history"]
    assert [(e["event"], e["use"]) for e in history if e["event"] in ("used", "outcome")] == [
        ("used", 1), ("outcome", 1), ("used", 2), ("outcome", 2)]
    assert [e["usable_again"] for e in history if e["event"] == "outcome"] == [True, False]


async def test_a_report_names_its_use_once_and_a_use_that_did_not_happen_is_refused(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    _, allowed = await approved(aye)
    approval = allowed["approval"]
    status, body = await report(aye, approval, "ran", use=2)  # used once only
    assert (status, body["error"], body["field"]) == (409, "not_used", "use")
    assert "use 2" in body["message"]
    for bad in (0, -1, "1", 1.0, True, 10**7):
        status, body = await report(aye, approval, "ran", use=bad)
        assert (status, body["field"]) == (422, "use"), (bad, body)
    assert (await report(aye, approval, "not_run", use=1))[1]["usable_again"] is True
    status, body = await report(aye, approval, "failed", use=1)  # the same use, again
    assert (status, body["error"], body["field"]) == (409, "already_reported", "use")
    assert (await call(aye))[0] == 200  # use 2
    status, body = await report(aye, approval, "ran", use=1)  # an earlier use
    assert (status, body["error"]) == (409, "already_reported")
    assert await report(aye, approval, "ran", use=2, detail="deployed") == (
        200, {"approval": approval, "outcome": "ran", "usable_again": False})
    status, body = await report(aye, approval, "ran", use=2)
    assert (status, body["error"]) == (409, "already_reported")
    view = await aye.get(approval)
    assert (view["run"]["outcome"], view["run"]["detail"]) == ("ran", "deployed")


@pytest.mark.parametrize("first", ["ran", "failed"])
async def test_an_outcome_that_ran_gives_nothing_back(
    start_aye: StartAye, database_url: str, first: str
) -> None:
    aye = await start_aye(database_url, gates())
    _, allowed = await approved(aye)
    assert (await report(aye, allowed["approval"], first))[1]["usable_again"] is False
    assert (await call(aye))[0] == 202
