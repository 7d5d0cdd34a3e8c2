"""The Python client's external asks: ask_external returns the answer URL, sign_external signs
the outside system's delivery as the verifier expects, and wait reads the payload; on both
stores, through a real aye over HTTP."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from aye_client import AyeClient, AyeError, answer_value, sign_external
from tests.conftest import StartAye
from tests.e2e.test_external import GOOD, PINNED, PUBLIC, SECRET, SIGNER_TOKEN, started


async def test_ask_external_then_a_signed_delivery_wakes_wait(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    async with AyeClient(aye.url, SIGNER_TOKEN) as client:
        ask = await client.ask_external("Contract signed?", schema=PINNED, verifier="docsign")
        assert ask["answer_url"].startswith(PUBLIC + "/v1/external/")
        waiting = asyncio.create_task(client.wait(ask["id"], timeout=10))
        body = json.dumps(GOOD).encode()
        headers = {"Content-Type": "application/json", **sign_external(body, SECRET)}
        door = aye.url.rstrip("/") + ask["answer_url"].removeprefix(PUBLIC)
        async with aiohttp.ClientSession() as http, http.post(door, data=body, headers=headers) as resp:
            assert (resp.status, await resp.json()) == (200, {"outcome": "taken"})
        assert answer_value(await waiting) == GOOD

        with pytest.raises(AyeError) as refused:
            await client.ask_external("Contract signed?", schema=PINNED, verifier="nobody")
        assert (refused.value.status, refused.value.field) == (422, "verifier")


def test_sign_external_signs_as_the_verifier_checks() -> None:
    from aye_client.verifiers import SCHEMES, Verifier

    body = b'{"a": 1}'
    plain = Verifier("v", b"k", "X-Sig", SCHEMES["hmac-sha256"])
    assert plain.verify(sign_external(body, "k", header="X-Sig"), body)
    assert not plain.verify(sign_external(body, "other", header="X-Sig"), body)
    stamped = Verifier("v", b"k", "X-Sig", SCHEMES["hmac-sha256"], "X-Time", 300)
    headers = sign_external(body, b"k", header="X-Sig", timestamp_header="X-Time")
    assert set(headers) == {"X-Sig", "X-Time"} and stamped.verify(headers, body)
    old = sign_external(body, b"k", header="X-Sig", timestamp_header="X-Time", timestamp=1)
    assert not stamped.verify(old, body)
    with pytest.raises(ValueError):
        sign_external(body, "")
    with pytest.raises(ValueError):
        sign_external(body, "k", scheme="md5")
