"""Receipts end to end, on both stores: a decided approval is signed (Ed25519, a compact JWS
of type aye-receipt+jwt) and the signature checks against `GET /v1/keys` with a JWT library
that is not the one aye signs with (joserfc), and fails with one byte changed; the agent gets
it on the allow that uses a grant, on a remembered refusal's 403 and on reads of the approval;
what ran is reported once per use, and `not_run` gives the grant back once."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest
import rfc8785
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from aye_client import ApprovalRefused, BadReceipt, connect, verify_receipt
from bot.config import Config
from tests.conftest import AGENT_HEADERS, AGENT_TOKEN, OPERATOR_HEADERS, Aye, StartAye, eventually

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")  # joserfc on RFC 9864
INPUT = {"version": "1.4.2", "replicas": 3}
WORK = {"github": {"repo": "Octo/App", "number": 7}}


def gates(**more: Any) -> Config:
    return Config.model_validate({"gates": [{
        "operations": ["deploy."], "responders": ["operator:local"], "timeout": "1h", **more}]})


async def call(aye: Aye, input_: Any = INPUT, headers: dict[str, str] = AGENT_HEADERS
               ) -> tuple[int, dict[str, Any]]:
    resp = await aye.client.post("/v1/calls", headers=headers, json={
        "operation": "deploy.prod", "input": input_, "work": WORK})
    return resp.status, await resp.json()


async def approved(aye: Aye, answer: str = "approve") -> tuple[int, dict[str, Any]]:
    """A call approved (or refused) by the operator, then made again."""
    status, pending = await call(aye)
    assert status == 202, pending
    assert (await aye.answer(pending["ask"]["id"], answer))[0] == 200
    return await call(aye)


async def keys(aye: Aye) -> dict[str, Any]:
    resp = await aye.client.get("/v1/keys")  # no token
    assert resp.status == 200, await resp.text()
    return await resp.json()  # type: ignore[no-any-return]


def checked_elsewhere(receipt: str, jwks: dict[str, Any]) -> dict[str, Any]:
    """The receipt's payload, checked with joserfc (not PyJWT, which aye signs with)."""
    found = jws.deserialize_compact(receipt, KeySet.import_key_set(jwks), algorithms=["EdDSA"])
    assert found.protected["typ"] == "aye-receipt+jwt"
    return json.loads(found.payload)  # type: ignore[no-any-return]


def one_byte_changed(receipt: str, where: int) -> str:
    swapped = "A" if receipt[where] != "A" else "B"
    return receipt[:where] + swapped + receipt[where + 1:]


async def test_an_allow_carries_a_receipt_that_verifies_elsewhere_and_not_when_changed(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    status, allowed = await approved(aye)
    assert status == 200 and allowed["decision"] == "allow"
    jwks = await keys(aye)
    assert [(k["kty"], k["crv"], k["alg"]) for k in jwks["keys"]] == [("OKP", "Ed25519", "EdDSA")]
    claims = checked_elsewhere(allowed["receipt"], jwks)
    assert claims == verify_receipt(allowed["receipt"], jwks)  # the client's own check agrees
    view = await aye.get(allowed["approval"], operator=True)
    assert claims["sub"] == allowed["approval"] and claims["ref"] == view["ref"]
    assert claims["iss"] == "aye" and claims["agent"] == "default"
    assert claims["operation"] == "deploy.prod" and claims["decision"] == "approved"
    assert claims["work"] == {"github": {"repo": "octo/app", "number": 7, "type": "issue"}}
    # The input's hash, computed here from the input as the contract defines it.
    assert claims["input_sha256"] == hashlib.sha256(rfc8785.dumps(INPUT)).hexdigest()
    assert (claims["input_sha256"], claims["call_sha256"]) == (
        view["input_sha256"], view["call_sha256"])
    # Approved over the API (the test's operator client, not the CLI): surface api.
    assert [(a["by"], a["surface"]) for a in claims["approvers"]] == [("operator:local", "api")]
    assert claims["exp"] == claims["iat"] + 3600
    # One byte changed, in the payload or in the signature: it no longer verifies.
    payload_at = allowed["receipt"].index(".") + 5
    for where in (payload_at, len(allowed["receipt"]) - 5):
        changed = one_byte_changed(allowed["receipt"], where)
        with pytest.raises((JoseError, ValueError)):
            checked_elsewhere(changed, jwks)
        with pytest.raises(BadReceipt):
            verify_receipt(changed, jwks)
    # A read of the approval carries the same receipt (Ed25519 signs deterministically).
    assert (await aye.get(allowed["approval"]))["receipt"] == allowed["receipt"]


async def test_a_remembered_refusal_and_a_read_carry_the_refusals_receipt(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates(remember_refusal="1h"))
    status, refused = await approved(aye, "refuse")
    assert status == 403 and refused["repeat"] is True
    claims = checked_elsewhere(refused["receipt"], await keys(aye))
    assert claims["decision"] == "approval_refused" and "exp" not in claims
    assert [a["by"] for a in claims["approvers"]] == ["operator:local"]
    read = await aye.get(refused["approval"])
    assert read["receipt"] == refused["receipt"]
    listed = await (await aye.client.get("/v1/asks", headers=AGENT_HEADERS)).json()
    assert all("receipt" not in ask for ask in listed["asks"])  # a list's pages carry none


async def test_what_ran_is_taken_once_per_use_and_not_run_gives_the_grant_back_once(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    _, allowed = await approved(aye)
    approval = allowed["approval"]

    async def report(outcome: str, ident: str = approval, headers: dict[str, str] = AGENT_HEADERS,
                     **more: Any) -> tuple[int, dict[str, Any]]:
        resp = await aye.client.post("/v1/calls/outcome", headers=headers,
                                     json={"approval": ident, "outcome": outcome, **more})
        return resp.status, await resp.json()

    assert await report("not_run", detail="the runner crashed first") == (
        200, {"approval": approval, "outcome": "not_run", "usable_again": True})
    assert (await report("not_run"))[1]["error"] == "not_used"  # given back: not in use now
    status, again = await call(aye)  # the grant, usable once more: the same approval
    assert (status, again["approval"]) == (200, approval)
    assert (await report("ran", detail="deployed"))[0] == 200
    status, second = await report("failed")
    assert (status, second["error"]) == (409, "already_reported")
    assert (await call(aye))[0] == 202  # used for good: the same call asks again
    view = await aye.get(approval, operator=True)
    assert view["run"]["outcome"] == "ran" and view["run"]["detail"] == "deployed"
    assert [(e["outcome"], e["usable_again"]) for e in view["history"]
            if e["event"] == "outcome"] == [("not_run", True), ("ran", False)]
    # Bad bodies name their field; another agent's approval or a stranger's id is not found.
    assert (await report("exploded"))[1]["field"] == "outcome"
    assert (await report("ran", detail="x" * 501))[1]["field"] == "detail"
    assert (await report("ran", ident="f" * 32))[0] == 404
    assert (await report("ran", headers=OPERATOR_HEADERS))[0] == 403


async def test_the_event_stream_tells_of_an_outcome(start_aye: StartAye, database_url: str) -> None:
    aye = await start_aye(database_url, gates())
    _, allowed = await approved(aye)
    resp = await aye.client.get("/v1/events", headers=OPERATOR_HEADERS)
    assert resp.status == 200
    await aye.client.post("/v1/calls/outcome", headers=AGENT_HEADERS,
                          json={"approval": allowed["approval"], "outcome": "ran"})
    seen = ""
    while "event: ask.outcome" not in seen:
        seen += (await asyncio.wait_for(resp.content.readline(), 5)).decode()
    resp.close()


async def test_the_client_exposes_the_receipt_and_reports_what_ran(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates(remember_refusal="1h"))
    async with connect(aye.url, AGENT_TOKEN) as client:
        async def answer_when_asked(answer: str) -> None:
            async def asked() -> bool:
                return bool(await open_approvals(aye))

            await eventually(asked)
            await aye.answer((await open_approvals(aye))[0], answer)

        answering = asyncio.create_task(answer_when_asked("approve"))
        async with client.gated("deploy.prod", INPUT, WORK) as grant:
            assert grant is not None and grant.receipt is not None
        await answering
        claims = verify_receipt(grant.receipt, await client.keys())
        assert claims["sub"] == grant and claims["decision"] == "approved"
        view = await aye.get(grant, operator=True)
        assert view["run"]["outcome"] == "ran"  # reported on the way out

        answering = asyncio.create_task(answer_when_asked("approve"))
        with pytest.raises(RuntimeError):
            async with client.gated("deploy.prod", {"v": 2}, WORK) as failing:
                raise RuntimeError("the deploy broke")
        await answering
        view = await aye.get(str(failing), operator=True)
        assert (view["run"]["outcome"], view["run"]["detail"]) == ("failed", "RuntimeError")

        answering = asyncio.create_task(answer_when_asked("refuse"))
        with pytest.raises(ApprovalRefused) as refused:
            async with client.gated("deploy.prod", {"v": 3}, WORK):
                raise AssertionError("ran without an approval")
        await answering
        assert refused.value.receipt is not None
        assert verify_receipt(refused.value.receipt, await client.keys())["decision"] == (
            "approval_refused")


async def open_approvals(aye: Aye) -> list[str]:
    resp = await aye.client.get("/v1/asks?status=open", headers=OPERATOR_HEADERS)
    return [a["id"] for a in (await resp.json())["asks"] if a["kind"] == "approval"]
