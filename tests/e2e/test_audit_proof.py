"""Proof that survives the database, the audit chain's half, on both stores: `GET /v1/audit/head`
serves the chain's newest entry signed with the receipts' key (for anyone, no token), and the
log gets one at each `AYE_AUDIT_HEAD_EVERY`; `aye audit verify --head FILE` (a real process)
exits 1 naming the entry when the chain no longer holds a head saved earlier (its tail deleted,
an entry rewritten with every hash after it recomputed), which a verify without the head
cannot see, and refuses a head no key of the store signed; `aye audit verify` replays every
ask's history and names the ask whose row was edited outside aye; and run where there is no
store, it says what it needs in one line and leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from joserfc import jws
from joserfc.jwk import KeySet

from core.app.timing import ManualClock
from tests.conftest import Aye, StartAye, eventually
from tests.e2e.test_audit import GENESIS, recomputed, whole_chain
from tests.e2e.test_process import (  # the last two are fixtures, used by name below
    OP,
    Api,
    Server,
    base_env,
    servers,
    session,
    start_server,
    stop,
)
from tests.e2e.test_receipts import approved, call, gates, keys
from tests.stores import dsn

__all__ = ["servers", "session"]

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")  # joserfc on RFC 9864
HEAD_TYP = "aye-audit-head+jwt"


def head_claims(head: str, jwks: dict[str, Any]) -> dict[str, Any]:
    """The head's payload, its signature checked with joserfc against `GET /v1/keys`."""
    found = jws.deserialize_compact(head, KeySet.import_key_set(jwks), algorithms=["EdDSA"])
    assert found.protected["typ"] == HEAD_TYP and found.protected["alg"] == "EdDSA"
    assert found.protected["kid"] in [k["kid"] for k in jwks["keys"]]
    return json.loads(found.payload)  # type: ignore[no-any-return]


async def served_head(client: Any, url: str = "") -> str:
    async with client.get(url + "/v1/audit/head") as resp:  # no token
        assert resp.status == 200, await resp.text()
        assert resp.content_type == "application/jose"
        return await resp.text()  # type: ignore[no-any-return]


async def run_verify(tmp: Path, database_url: str, *args: str,
                     cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = base_env(tmp, database_url)
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bot", "audit", "verify", *args], cwd=cwd or tmp,
        env=env, capture_output=True, text=True, timeout=60)


async def sql(database_url: str, *statements: str) -> None:
    """Statements run on the store behind aye's back, as someone with the database would."""
    if database_url.startswith("sqlite"):
        db = sqlite3.connect(database_url.split("///", 1)[1])
        for statement in statements:
            db.execute(statement)
        db.commit()
        db.close()
        return
    conn = await asyncpg.connect(dsn(database_url))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


# -- the signed head ----------------------------------------------------------------------------


async def test_the_head_is_served_to_anyone_signed_with_the_receipts_key(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url)
    empty = head_claims(await served_head(aye.client), await keys(aye))
    assert (empty["iss"], empty["seq"], empty["hash"]) == ("aye", 0, GENESIS)
    ask = await aye.ask(question="Ship?", options=["yes", "no"])
    await aye.answer(ask["id"], "yes")
    head = await served_head(aye.client)
    claims = head_claims(head, await keys(aye))
    chain = await whole_chain(aye)
    assert (claims["seq"], claims["hash"]) == (2, chain[-1]["hash"])
    assert isinstance(claims["iat"], int) and abs(claims["iat"] - aye.clock.now()) < 60
    assert set(claims) == {"iss", "seq", "hash", "iat"}
    assert jwt.get_unverified_header(head)["kid"] == (await keys(aye))["keys"][0]["kid"]


async def test_the_log_gets_a_signed_head_at_each_interval(
    start_aye: StartAye, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    aye = await start_aye(database_url, clock=clock, env={"AYE_AUDIT_HEAD_EVERY": "10m"})
    ask = await aye.ask(question="Ship?")
    caplog.set_level(logging.INFO, logger="aye.audit")

    def logged() -> list[dict[str, Any]]:
        return [r.aye_fields for r in caplog.records if r.getMessage() == "audit.head"]  # type: ignore[attr-defined]

    async def heads(count: int) -> bool:
        return len(logged()) >= count

    assert logged() == []
    clock.advance(600)
    await eventually(lambda: heads(1))
    await aye.answer(ask["id"], "ok")
    clock.advance(600)
    await eventually(lambda: heads(2))
    jwks = await keys(aye)
    first, second = (head_claims(fields["head"], jwks) for fields in logged()[:2])
    chain = await whole_chain(aye)
    assert (first["seq"], first["hash"]) == (1, chain[0]["hash"])
    assert (second["seq"], second["hash"]) == (2, chain[1]["hash"])
    assert [(f["seq"], f["hash"]) for f in logged()[:2]] == [(1, chain[0]["hash"]),
                                                            (2, chain[1]["hash"])]


async def test_a_served_process_logs_heads_that_verify_keeps_to(
    tmp_path: Path, sqlite_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    server = await start_server(tmp_path, sqlite_url, AYE_AUDIT_HEAD_EVERY="1s")
    servers.append(server)
    status, _ = await Api(session, server.url).call("POST", "/v1/asks", json={"question": "Q?"})
    assert status == 201

    async def head_logged() -> bool:
        return any("audit.head" in line and "seq=1" in line
                   for line in server.output().splitlines())

    await eventually(head_logged, timeout=20)
    line = next(line for line in server.output().splitlines()
                if "audit.head" in line and "seq=1" in line)
    (tmp_path / "head.log").write_text(line + "\n")  # the log's line as an outside log keeps it
    held = await run_verify(tmp_path, sqlite_url, "--head", str(tmp_path / "head.log"))
    assert held.returncode == 0, held.stdout + held.stderr
    assert held.stdout.startswith("ok: 1 entries")


@pytest.mark.parametrize("every", ["0s", "hourly", "-1h"])
def test_an_unusable_audit_head_every_stops_serve_with_exit_2(tmp_path: Path, every: str) -> None:
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db", AYE_AUDIT_HEAD_EVERY=every,
                   AYE_PORT="0")
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "AYE_AUDIT_HEAD_EVERY" in done.stderr + done.stdout


# -- verify --head --------------------------------------------------------------------------------


async def test_verify_holds_the_chain_to_a_head_saved_earlier(
    tmp_path: Path, database_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    server = await start_server(tmp_path, database_url)
    servers.append(server)
    api = Api(session, server.url)
    for n in range(3):
        _, ask = await api.call("POST", "/v1/asks", json={"question": f"Ship {n}?"})
        await api.call("POST", f"/v1/asks/{ask['id']}/answer", token=OP, json={"answer": "ok"})
    six = tmp_path / "head-6.jws"
    six.write_text(await served_head(session, server.url))
    assert (await run_verify(tmp_path, database_url, "--head", str(six))).returncode == 0
    status, fourth = await api.call("POST", "/v1/asks", json={"question": "Ship 3?"})
    assert status == 201
    extended = await run_verify(tmp_path, database_url, "--head", str(six))  # 7 extends 6
    assert (extended.returncode, extended.stdout.splitlines()[0][:14]) == (0, "ok: 7 entries,")
    seven = tmp_path / "head-7.jws"
    seven.write_text(await served_head(session, server.url))
    status, chain = await api.call("GET", "/v1/audit?limit=100", token=OP)
    stop(server)

    # The newest ask and its history deleted: the chain left is whole, and its rows agree.
    await sql(database_url, "DELETE FROM history WHERE chain_seq = 7",
              f"DELETE FROM asks WHERE id = '{fourth['id']}'")
    assert (await run_verify(tmp_path, database_url)).returncode == 0  # unseen without a head
    deleted = await run_verify(tmp_path, database_url, "--head", str(seven))
    assert deleted.returncode == 1
    assert deleted.stdout.strip() == ("the saved head does not hold: the chain no longer holds "
                                      "entry 7 of the saved head (it ends at 6)")

    # Entry 6 rewritten (its time moved) with its hash recomputed, as one who knows the
    # chain's rule would: the chain is whole, but no longer the one the saved head signed.
    rewritten = {**chain["entries"][5], "at": chain["entries"][5]["at"] + 60}
    await sql(database_url, f"UPDATE history SET at = {rewritten['at']!r}, "
              f"hash = '{recomputed(rewritten)}' WHERE chain_seq = 6")
    assert (await run_verify(tmp_path, database_url)).returncode == 0
    changed = await run_verify(tmp_path, database_url, "--head", str(six))
    assert changed.returncode == 1
    assert "entry 6 is not the one the saved head signed" in changed.stdout


async def test_verify_refuses_a_head_the_stores_keys_did_not_sign(
    tmp_path: Path, start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url)
    await aye.ask(question="Ship?")
    real = await served_head(aye.client)
    claims = jwt.decode(real, options={"verify_signature": False})
    other = Ed25519PrivateKey.generate()
    forged = jwt.encode({**claims, "seq": 0, "hash": GENESIS}, other, algorithm="EdDSA",
                        headers={"typ": HEAD_TYP, "kid": jwt.get_unverified_header(real)["kid"]})
    (tmp_path / "forged.jws").write_text(forged)
    refused = await run_verify(tmp_path, database_url, "--head", str(tmp_path / "forged.jws"))
    assert refused.returncode == 1
    assert refused.stdout.strip().endswith(
        "is not this aye's: its signature does not verify with any of the store's keys "
        "(a forged head, or another aye's)")
    (tmp_path / "receipt.jws").write_text(  # a JWS, but not a head
        jwt.encode(claims, other, algorithm="EdDSA", headers={"typ": "aye-receipt+jwt"}))
    for name, why in (("receipt.jws", "is not an audit head"), ("missing.jws", "cannot read")):
        unusable = await run_verify(tmp_path, database_url, "--head", str(tmp_path / name))
        assert unusable.returncode == 2 and why in unusable.stderr
        assert len(unusable.stderr.strip().splitlines()) == 1
    (tmp_path / "real.jws").write_text(real)
    assert (await run_verify(tmp_path, database_url, "--head", str(tmp_path / "real.jws"))
            ).returncode == 0


# -- the rows replayed ---------------------------------------------------------------------------


async def test_verify_names_the_ask_whose_row_was_edited_outside_aye(
    tmp_path: Path, start_aye: StartAye, database_url: str
) -> None:
    clock = ManualClock()
    aye = await start_aye(database_url, gates(remember_refusal="0s"), clock=clock)
    await history_of_every_kind(aye, clock)
    ok = await run_verify(tmp_path, database_url)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    status, pending = await call(aye, input_={"version": "9"})
    assert status == 202
    refused = pending["ask"]
    assert (await aye.answer(refused["id"], "refuse"))[0] == 200
    await sql(database_url, "UPDATE asks SET outcome = 'approved', answer_value = 'approve' "
              f"WHERE id = '{refused['id']}'")
    edited = await run_verify(tmp_path, database_url)
    assert edited.returncode == 1
    assert edited.stdout.splitlines() == [
        f"ask {refused['ref']}: its row says outcome approved, its history approval_refused"]


async def test_verify_names_a_used_grant_given_back_outside_aye(
    tmp_path: Path, start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, gates())
    status, allowed = await approved(aye)
    assert status == 200
    assert (await run_verify(tmp_path, database_url)).returncode == 0
    await sql(database_url, "UPDATE asks SET approval_used_at = NULL "
              f"WHERE id = '{allowed['approval']}'")
    ref = (await aye.get(allowed["approval"]))["ref"]
    edited = await run_verify(tmp_path, database_url)
    assert edited.returncode == 1
    assert edited.stdout.splitlines() == [
        f"ask {ref}: its row says its grant is free, its history in use"]


async def history_of_every_kind(aye: Aye, clock: ManualClock) -> None:
    """Asks that end every way aye ends one, for a verify that must find nothing wrong: an
    answer, a withdrawal, a sensitive answer read (erased), an expiry, a refused answer, and an
    approval used, reported `not_run` (given back), used again and reported `ran`."""
    answered = await aye.ask(question="Ship?", options=["yes", "no"])
    await aye.answer(answered["id"], "maybe")  # refused: not an option
    await aye.answer(answered["id"], "yes")
    withdrawn = await aye.ask(question="Wait?")
    assert (await aye.client.delete(f"/v1/asks/{withdrawn['id']}", headers=aye.headers)).status == 200
    secret = await aye.ask(question="Token?", sensitive=True)
    await aye.answer(secret["id"], "s3cret")
    assert (await aye.get(secret["id"]))["answer"]["value"] == "s3cret"
    soon = await aye.ask(question="Soon?", timeout_s=60)
    status, allowed = await approved(aye)
    assert status == 200
    for outcome in ("not_run", "ran"):
        resp = await aye.client.post("/v1/calls/outcome", headers=aye.headers, json={
            "approval": allowed["approval"], "outcome": outcome})
        assert resp.status == 200, await resp.text()
        if outcome == "not_run":
            assert (await call(aye))[0] == 200  # the grant given back, used again
    clock.advance(120)
    await aye.tick()
    assert (await aye.get(soon["id"]))["status"] == "expired"


# -- no store here ------------------------------------------------------------------------------


async def test_verify_where_there_is_no_store_says_so_and_creates_nothing(tmp_path: Path) -> None:
    here = tmp_path / "elsewhere"
    here.mkdir()
    env = base_env(tmp_path, "unused")
    for url in (None, f"sqlite:///{here}/nowhere/aye.db"):
        if url is None:
            env.pop("AYE_DATABASE_URL")
        else:
            env["AYE_DATABASE_URL"] = url
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "bot", "audit", "verify"], cwd=here, env=env,
            capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Error" not in done.stderr and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1
        assert "AYE_DATABASE_URL" in done.stderr and "aye.db" in done.stderr
        assert list(here.iterdir()) == []  # no file, no folder
    (here / "aye.db").touch()  # the empty file an earlier aye audit verify left here
    env.pop("AYE_DATABASE_URL")
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bot", "audit", "verify"], cwd=here, env=env,
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"aye: no aye store at {here / 'aye.db'}: ")
    assert [(p.name, p.stat().st_size) for p in here.iterdir()] == [("aye.db", 0)]
