"""External answers through the real HTTP door, on both stores: an outside system answers an
ask with a signed payload that must fit the schema the ask pinned."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from typing import Any

import pytest

from aye_client.verifiers import SCHEMES, Verifier
from bot.config import Config
from core.app.timing import ManualClock
from core.domain.policy import Defaults
from tests.conftest import Aye, StartAye

SECRET = "docsign-shared-secret"
PUBLIC = "https://aye.example.com"
SIGNER_TOKEN = "signer-agent-token"
SIGNER = {"Authorization": f"Bearer {SIGNER_TOKEN}"}
OTHER = {"Authorization": "Bearer other-agent-token"}
PINNED = {
    "type": "object",
    "properties": {"reference": {"const": "inv-42"}, "status": {"const": "signed"},
                   "signer": {"type": "string"}},
    "required": ["reference", "status"],
}
GOOD = {"reference": "inv-42", "status": "signed", "signer": "Ada"}
DOCSIGN = Verifier("docsign", SECRET.encode(), "X-Signature-256", SCHEMES["hmac-sha256"])
STAMPED = Verifier("stamped", b"stamped-secret", "X-Sig", SCHEMES["hmac-sha256"], "X-Sig-Time", 300)


def config(monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("AYE_T_SIGNER", SIGNER_TOKEN)
    monkeypatch.setenv("AYE_T_OTHER", "other-agent-token")
    monkeypatch.setenv("AYE_DOCSIGN_SECRET", SECRET)
    monkeypatch.setenv("AYE_STAMPED_SECRET", "stamped-secret")
    return Config.model_validate({
        "agents": [
            {"name": "signer", "token_env": "AYE_T_SIGNER", "verifiers": ["docsign", "stamped"]},
            {"name": "other", "token_env": "AYE_T_OTHER"},
        ],
        "verifiers": [
            {"name": "docsign", "secret_env": "AYE_DOCSIGN_SECRET", "header": "X-Signature-256",
             "scheme": "hmac-sha256"},
            {"name": "stamped", "secret_env": "AYE_STAMPED_SECRET", "header": "X-Sig",
             "scheme": "hmac-sha256", "timestamp_header": "X-Sig-Time", "tolerance": "5m"},
        ],
    })


async def started(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch,
    public: str | None = PUBLIC, clock: Any = None,
) -> Aye:
    env = {"AYE_PUBLIC_URL": public} if public else {}
    aye = await start_aye(database_url, config(monkeypatch), env=env, clock=clock)
    aye.headers = dict(SIGNER)
    return aye


async def external(aye: Aye, **extra: Any) -> dict[str, Any]:
    body = {"question": "Wait for the contract to be signed", "format": "external",
            "verifier": "docsign", "schema": PINNED, **extra}
    return await aye.ask(**body)


def door_path(ask: dict[str, Any]) -> str:
    assert ask["answer_url"].startswith(PUBLIC + "/v1/external/")
    return ask["answer_url"].removeprefix(PUBLIC)


async def post(aye: Aye, path: str, payload: Any, verifier: Verifier | None = DOCSIGN,
               headers: dict[str, str] | None = None, raw: bytes | None = None) -> tuple[int, Any]:
    body = raw if raw is not None else json.dumps(payload).encode()
    sent = {"Content-Type": "application/json"}
    if verifier is not None:
        sent.update(verifier.sign(body))
    sent.update(headers or {})
    resp = await aye.client.post(path, data=body, headers=sent)
    return resp.status, await resp.json()


async def test_a_signed_payload_that_fits_answers_the_ask_and_wakes_the_agent(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    ask = await external(aye)
    assert ask["format"] == "external" and ask["verifier"] == "docsign"
    assert ask["schema"] == PINNED and ask["status"] == "open"
    ticket = door_path(ask).rsplit("/", 1)[1]
    assert len(ticket) >= 32  # 192 random bits, URL-safe base64
    waiting = asyncio.create_task(aye.wait(ask["id"], timeout=10))
    await aye.parked()
    assert await post(aye, door_path(ask), GOOD) == (200, {"outcome": "taken"})
    done = await waiting
    assert done["status"] == "answered"
    assert done["answer"] == {"value": GOOD, "option": None, "note": None}
    assert "answer_url" not in done and ticket not in json.dumps(done)
    view = await aye.get(ask["id"], operator=True)
    assert view["answered_by"] == "external:docsign" and view["ticket"] == "used"
    assert view["responders"] == ["external:docsign"]
    assert ticket not in json.dumps(view)
    row = await aye.asks.find(ask["id"])
    assert row is not None and row.ticket_hash == hashlib.sha256(ticket.encode()).hexdigest()
    # The accepted delivery's fingerprint is keyed: the store alone cannot confirm a guess.
    assert row.delivery_digest not in (None, hashlib.sha256(json.dumps(GOOD).encode()).hexdigest())


async def test_the_signature_is_checked_before_anything_about_the_ticket(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    ask = await external(aye)
    path = door_path(ask)
    wrong = Verifier("docsign", b"not-the-secret", "X-Signature-256", SCHEMES["hmac-sha256"])
    for verifier in (None, wrong):
        status, body = await post(aye, path, GOOD, verifier)
        assert (status, body["error"]) == (401, "bad_signature")
        status, body = await post(aye, "/v1/external/no-such-ticket", GOOD, verifier)
        assert (status, body["error"]) == (401, "bad_signature")
    # A signature over other bytes than those sent is wrong too.
    headers = DOCSIGN.sign(json.dumps(GOOD).encode())
    status, _ = await post(aye, path, None, None, headers, raw=json.dumps(GOOD).encode() + b" ")
    assert status == 401
    # Whoever can sign learns an unknown ticket is dead: one 404, nothing more.
    status, body = await post(aye, "/v1/external/no-such-ticket", GOOD)
    assert (status, body["error"]) == (404, "not_found")
    view = await aye.get(ask["id"], operator=True)
    assert view["status"] == "open" and view["ticket"] == "waiting"
    assert [e["event"] for e in view["history"]] == ["created"]


async def test_a_payload_that_does_not_fit_is_refused_recorded_and_the_ticket_still_works(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    ask = await external(aye)
    path = door_path(ask)
    status, body = await post(aye, path, {**GOOD, "reference": "inv-43"})
    assert (status, body["error"], body["field"]) == (400, "invalid_payload", "payload.reference")
    assert "inv-42" not in body["message"]  # the pinned value is not told
    status, body = await post(aye, path, {"reference": "inv-42"})
    assert (status, body["field"]) == (400, "payload")
    assert "status" in body["message"]
    status, body = await post(aye, path, None, raw=b"{not json")
    assert (status, body["error"]) == (400, "invalid_payload")
    assert await post(aye, path, GOOD) == (200, {"outcome": "taken"})
    view = await aye.get(ask["id"], operator=True)
    refused = [e for e in view["history"] if e["event"] == "refused"]
    assert len(refused) == 3 and {e["by"] for e in refused} == {"external:docsign"}
    assert refused[0]["why"] == "invalid_answer"


async def test_a_repeat_is_already_answered_and_anything_else_on_a_dead_ticket_is_404(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    path = door_path(await external(aye))
    assert await post(aye, path, GOOD) == (200, {"outcome": "taken"})
    assert await post(aye, path, GOOD) == (200, {"outcome": "already_answered"})
    other = {**GOOD, "signer": "Grace"}
    status, body = await post(aye, path, other)
    assert (status, body["error"]) == (404, "not_found")
    status, _ = await post(aye, path, None, raw=b"{not json")
    assert status == 404

    withdrawn = await external(aye)
    resp = await aye.client.delete(f"/v1/asks/{withdrawn['id']}", headers=SIGNER)
    assert resp.status == 200
    view = await aye.get(withdrawn["id"], operator=True)
    assert view["ticket"] == "dead"
    status, body = await post(aye, door_path(withdrawn), GOOD)
    assert (status, body) == (404, {"error": "not_found", "message": "no open ask has this answer URL"})


async def test_an_expired_ask_closes_its_door(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch,
    manual_clock: ManualClock,
) -> None:
    aye = await started(start_aye, database_url, monkeypatch, clock=manual_clock)
    ask = await external(aye, timeout_s=60)
    manual_clock.advance(61)
    await aye.tick()
    assert (await aye.get(ask["id"]))["status"] == "expired"
    status, _ = await post(aye, door_path(ask), GOOD)
    assert status == 404


async def test_a_signed_timestamp_must_be_fresh(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    path = door_path(await external(aye, verifier="stamped"))
    body = json.dumps(GOOD).encode()
    stale = STAMPED.sign(body, int(time.time()) - 301)
    status, _ = await post(aye, path, None, None, stale, raw=body)
    assert status == 401
    unstamped = {"X-Sig": STAMPED.sign(body)["X-Sig"]}
    status, _ = await post(aye, path, None, None, unstamped, raw=body)
    assert status == 401
    # The body signed without the timestamp does not pass a verifier that signs one.
    bare = {"X-Sig": DOCSIGN.sign(body)["X-Signature-256"], "X-Sig-Time": str(int(time.time()))}
    assert (await post(aye, path, None, None, bare, raw=body))[0] == 401
    assert await post(aye, path, GOOD, STAMPED) == (200, {"outcome": "taken"})


async def test_asking_needs_an_allowed_verifier_a_schema_and_a_public_url(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    base = {"question": "Signed?", "format": "external", "schema": PINNED}
    err = await aye.ask(422, **base)
    assert (err["error"], err["field"]) == ("invalid_field", "verifier")
    err = await aye.ask(422, headers=OTHER, verifier="docsign", **base)
    assert (err["error"], err["field"]) == ("invalid_field", "verifier")
    err = await aye.ask(422, verifier="nobody", **base)
    assert err["field"] == "verifier"
    err = await aye.ask(422, question="Signed?", format="external", verifier="docsign")
    assert err["field"] == "schema"
    err = await aye.ask(422, verifier="docsign", **{**base, "schema": {"type": "objekt"}})
    assert err["field"] == "schema.type"
    err = await aye.ask(422, question="Colour?", verifier="docsign")
    assert err["field"] == "verifier"
    made = await external(aye)
    status, body = await aye.answer(made["id"], GOOD)
    assert (status, body["error"]) == (403, "not_a_responder") and "docsign" in body["message"]
    refused = (await aye.get(made["id"], operator=True))["history"][-1]
    assert (refused["event"], refused["by"], refused["why"]) == (
        "refused", "operator:local", "not_a_responder")

    for public in (None, "http://aye.example.com"):
        other_db = database_url if "postgresql" in database_url else \
            f"sqlite+aiosqlite:///{tmp_path}/{public is None}.db"
        plain = await started(start_aye, other_db, monkeypatch, public=public)
        err = await plain.ask(422, verifier="docsign", **base)
        assert err["error"] == "no_public_url"


async def test_the_ticket_never_reaches_a_log_line(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    aye = await started(start_aye, database_url, monkeypatch)
    ask = await external(aye)
    path = door_path(ask)
    ticket = path.rsplit("/", 1)[1]
    await post(aye, path, None)
    await post(aye, path, {"reference": "x"})
    await post(aye, path, GOOD)
    await post(aye, path, GOOD)
    logged = "\n".join(
        f"{r.getMessage()} {getattr(r, 'aye_fields', '')}" for r in caplog.records
    )
    assert "external.delivery" in logged
    assert ticket not in logged


async def test_the_door_is_rate_limited_per_client_address(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    statuses = []
    for _ in range(40):
        resp = await aye.client.post("/v1/external/whatever", data=b"{}")
        statuses.append(resp.status)
        if resp.status == 429:
            assert int(resp.headers["Retry-After"]) >= 1
            assert (await resp.json())["error"] == "rate_limited"
            break
    assert statuses[-1] == 429 and set(statuses[:-1]) == {401}
    # Refused deliveries spend the address's room, signed ones do not: a flood of junk from
    # behind the same proxy does not lock the real system out.
    path = door_path(await external(aye))
    assert await post(aye, path, GOOD) == (200, {"outcome": "taken"})


async def test_another_verifiers_signature_is_told_only_that_the_ticket_is_no_door_of_its(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    live = door_path(await external(aye))
    for path in (live, "/v1/external/no-such-ticket"):
        status, body = await post(aye, path, GOOD, STAMPED)
        assert (status, body["error"]) == (404, "not_found")
    assert await post(aye, live, GOOD) == (200, {"outcome": "taken"})


async def test_a_body_over_64_kib_is_refused(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    path = door_path(await external(aye))
    status, body = await post(aye, path, None, raw=b"[" + b"1," * 40_000 + b"1]")
    assert (status, body["error"]) == (413, "body_too_large")


async def test_a_delivery_to_one_process_wakes_a_wait_on_another(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "postgresql" not in database_url:
        pytest.skip("one process per SQLite file (a second aye serve refuses to start)")
    one = await started(start_aye, database_url, monkeypatch)
    two = await started(start_aye, database_url, monkeypatch)
    ask = await external(one)
    waiting = asyncio.create_task(one.wait(ask["id"], timeout=10))
    await one.parked()
    racing = await asyncio.gather(*(post(p, door_path(ask), GOOD) for p in (one, two, two)))
    assert sorted(b["outcome"] for _, b in racing) == ["already_answered", "already_answered",
                                                       "taken"]
    done = await waiting
    assert done["answer"]["value"] == GOOD


async def test_the_doors_responses_match_the_openapi_document(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.test_openapi import matches

    aye = await started(start_aye, database_url, monkeypatch)
    resp = await aye.client.get("/v1/openapi.json", headers=SIGNER)
    document = await resp.json()
    spec = document["paths"]["/v1/external/{ticket}"]["post"]
    ask = await external(aye)
    matches(document, document["paths"]["/v1/asks"]["post"]["responses"]["201"]["content"]
            ["application/json"]["schema"], ask)
    path = door_path(ask)
    for status, payload, verifier in (
        (401, GOOD, None), (400, {"reference": "x"}, DOCSIGN), (200, GOOD, DOCSIGN),
        (200, GOOD, DOCSIGN), (404, {**GOOD, "signer": "x"}, DOCSIGN),
    ):
        got, body = await post(aye, path, payload, verifier)
        assert got == status, body
        matches(document, spec["responses"][str(status)]["content"]["application/json"]["schema"],
                body)
    view = await aye.get(ask["id"], operator=True)
    schema = document["paths"]["/v1/asks/{id}"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    matches(document, schema, view)


async def test_nobody_is_reminded_of_an_external_ask(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reminding = config(monkeypatch).model_copy(
        update={"defaults": Defaults.model_validate({"question_remind_after": "1m"})}
    )
    aye = await start_aye(database_url, reminding, env={"AYE_PUBLIC_URL": PUBLIC})
    aye.headers = dict(SIGNER)
    view = await aye.get((await external(aye))["id"], operator=True)
    assert "remind_at" not in view
    plain = await aye.ask(question="A person's question?")
    assert "remind_at" in await aye.get(plain["id"], operator=True)


async def test_a_schema_can_fetch_nothing_and_cannot_stall_the_server(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    base = {"question": "Signed?", "format": "external", "verifier": "docsign"}
    for schema, field in (
        ({"$ref": "http://169.254.169.254/latest"}, "schema.$ref"),
        ({"$defs": {"a": {"$ref": "file:///etc/passwd"}}, "$ref": "#/$defs/a"}, "schema.$ref"),
        ({"type": "object", "properties": {"x": {"allOf": [{"$dynamicRef": "#n"}]}}},
         "schema.properties.x.allOf[0].$dynamicRef"),
    ):
        err = await aye.ask(422, schema=schema, **base)
        assert err["field"] in (field, "schema.$defs.a.$ref"), err
    # A pattern that backtracks for ever on a crafted string is cut short: refused, not hung.
    slow = {"type": "object", "properties": {"signer": {"type": "string", "pattern": "^(a|aa)+$"},
                                             "reference": {"const": "inv-42"}},
            "required": ["signer", "reference"]}
    ask = await aye.ask(schema=slow, **base)
    started_at = time.monotonic()
    status, body = await post(aye, door_path(ask), {"signer": "a" * 60 + "!", "reference": "inv-42"})
    assert (status, body["field"]) == (400, "payload.signer")
    assert "too long" in body["message"] and time.monotonic() - started_at < 2
    assert await post(aye, door_path(ask), {"signer": "aaaa", "reference": "inv-42"}) == (
        200, {"outcome": "taken"})
