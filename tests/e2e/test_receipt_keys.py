"""The key receipts are signed with, across real `aye serve` processes: generated at first
start and kept in the store, so it survives a restart and two processes on one PostgreSQL sign
with one key; `aye keys rotate` makes a new current key (every process signs with it soon, and
receipts signed before still verify); AYE_SIGNING_KEY_PATH's key becomes current beside the
earlier ones, and one that cannot be used stops `aye serve` with exit 2. `aye show` shows what
ran and the receipt."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aye_client import verify_receipt
from tests.conftest import postgres_url
from tests.e2e.test_process import (  # the last three are fixtures, used by name below
    OP,
    Api,
    Server,
    base_env,
    run_cli,
    servers,
    session,
    start_server,
    stop,
)

__all__ = ["servers", "session"]

GATE = '[[gates]]\noperations = ["deploy."]\nresponders = ["operator:local"]\ntimeout = "1h"\n'


def gated(tmp: Path) -> None:
    (tmp / "aye.toml").write_text(GATE)


async def receipt(api: Api, version: str) -> str:
    """A call approved by the operator, then allowed: its receipt."""
    body = {"operation": "deploy.prod", "input": {"version": version}}
    status, pending = await api.call("POST", "/v1/calls", json=body)
    assert status == 202, pending
    status, _ = await api.call("POST", f"/v1/asks/{pending['ask']['id']}/answer", token=OP,
                               json={"answer": "approve"})
    assert status == 200
    status, allowed = await api.call("POST", "/v1/calls", json=body)
    assert status == 200 and allowed["decision"] == "allow", allowed
    return str(allowed["receipt"])


async def jwks(api: Api) -> dict[str, Any]:
    async with api.session.get(api.url + "/v1/keys") as resp:  # no token
        assert resp.status == 200
        return await resp.json()  # type: ignore[no-any-return]


def kid(receipt: str) -> str:
    return str(jwt.get_unverified_header(receipt)["kid"])


def rotate(tmp: Path, database_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", "keys", "rotate"], cwd=tmp,
                          env=base_env(tmp, database_url, **env), capture_output=True, text=True,
                          timeout=60)


async def restarted(tmp: Path, url: str, servers: list[Server], old: Server | None = None,
                    **env: str) -> Server:
    if old is not None:
        stop(old)
    server = await start_server(tmp, url, **env)
    servers.append(server)
    return server


async def test_the_key_is_kept_rotated_and_replaced_by_a_file_and_old_receipts_verify(
    tmp_path: Path, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    gated(tmp_path)
    url = f"sqlite+aiosqlite:///{tmp_path}/aye.db"
    server = await restarted(tmp_path, url, servers)
    first = await receipt(Api(session, server.url), "1")
    server = await restarted(tmp_path, url, servers, server)
    api = Api(session, server.url)
    assert [k["kid"] for k in (await jwks(api))["keys"]] == [kid(first)]  # kept in the store
    assert kid(await receipt(api, "2")) == kid(first)

    stop(server)
    rotated = rotate(tmp_path, url)
    assert rotated.returncode == 0 and rotated.stdout.startswith("new current key "), rotated
    server = await restarted(tmp_path, url, servers)
    api = Api(session, server.url)
    second = await receipt(api, "3")
    keys = await jwks(api)
    assert [k["kid"] for k in keys["keys"]] == [kid(second), kid(first)]
    assert verify_receipt(first, keys)["input_sha256"] and verify_receipt(second, keys)

    pem = tmp_path / "receipts.pem"
    pem.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    server = await restarted(tmp_path, url, servers, server, AYE_SIGNING_KEY_PATH=str(pem))
    api = Api(session, server.url)
    third = await receipt(api, "4")
    keys = await jwks(api)
    assert [k["kid"] for k in keys["keys"]] == [kid(third), kid(second), kid(first)]
    assert all(verify_receipt(r, keys) for r in (first, second, third))
    assert "private" not in str(keys) and "BEGIN" not in str(keys)
    refused = rotate(tmp_path, url, AYE_SIGNING_KEY_PATH=str(pem))
    assert refused.returncode == 2 and "AYE_SIGNING_KEY_PATH" in refused.stderr

    # aye show: what ran, and the receipt.
    status, _ = await api.call("POST", "/v1/calls/outcome", json={
        "approval": verify_receipt(third, keys)["sub"], "outcome": "ran", "detail": "v4 is live"})
    assert status == 200
    shown = run_cli(tmp_path, server.url, "show", verify_receipt(third, keys)["ref"])
    assert shown.returncode == 0, shown.stderr
    assert "ran: ran at " in shown.stdout and ": v4 is live" in shown.stdout
    assert f"receipt: {third}" in shown.stdout


@pytest.mark.parametrize("problem", ["missing", "not ed25519"])
def test_a_signing_key_that_cannot_be_used_stops_serve(tmp_path: Path, problem: str) -> None:
    pem = tmp_path / "receipts.pem"
    if problem == "not ed25519":
        pem.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
    env = base_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/aye.db",
                   AYE_PORT="0", AYE_SIGNING_KEY_PATH=str(pem))
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "AYE_SIGNING_KEY_PATH" in done.stderr
    assert not (tmp_path / "aye.db").exists()  # refused before a store was made


async def test_two_processes_on_postgresql_sign_with_one_key_and_follow_a_rotation(
    tmp_path: Path, pg_session_url: str | None, servers: list[Server],
    session: aiohttp.ClientSession,
) -> None:
    gated(tmp_path)
    url = await postgres_url(pg_session_url)
    # Both start at once: the store decides which generated key is the one.
    started = await asyncio.gather(*(start_server(tmp_path, url, name=n) for n in ("a", "b")))
    servers.extend(started)
    a, b = (Api(session, s.url) for s in started)
    from_a, from_b = await receipt(a, "1"), await receipt(b, "2")
    assert kid(from_a) == kid(from_b)
    assert await jwks(a) == await jwks(b)
    assert len((await jwks(a))["keys"]) == 1

    rotated = rotate(tmp_path, url)
    assert rotated.returncode == 0, rotated.stderr
    new = (await jwks(a))["keys"][0]["kid"]
    assert new != kid(from_a)
    # Each process reads the current key again within 5 s (core.app.keys.REFRESH_S). A receipt
    # is two calls, and the agent may make 120 a minute: 0.05 s apart, the 5 s took it over
    # the limit (429) on a busy machine, so 0.25 s apart, for up to 15 s.
    for n in range(60):
        signed = await receipt(b, f"after {n}")
        if kid(signed) == new:
            break
        await asyncio.sleep(0.25)
    assert kid(signed) == new
    assert verify_receipt(from_a, await jwks(b))  # signed before: still verifies
