"""Callbacks on the agent's side: a real receiver on 127.0.0.1 is called back by a real aye
(SQLite and PostgreSQL) for an ask made with `callback_url` (ask() returning at once) and for a
start's approval; verify_callback accepts aye's signature and refuses a tampered body, another
secret or none; and the README's receiver runs as printed, deduping on X-Aye-Delivery."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ask_api.tokens import TokenBook
from aye_client import AyeClient, BadSignature, answer_value, verify_callback
from bot.config import Config
from tests.conftest import OPERATOR_TOKEN, Aye, StartAye, eventually
from tests.e2e.test_process import free_port
from tests.local_server import LocalServer

ROOT = Path(__file__).resolve().parents[2]
SECRET = "callback-secret-for-client-tests"
TOKEN = "token-cb-client"
ISSUE = {"github": {"repo": "octo/app", "number": 7}}


class Receiver(LocalServer):
    """An agent's callback endpoint: it keeps what it was sent and answers 204."""

    name = "callback receiver"

    def __init__(self) -> None:
        super().__init__()
        self.got: list[tuple[dict[str, str], bytes]] = []

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hooks/aye", self.handle)
        await self._serve(app)

    async def handle(self, request: web.Request) -> web.Response:
        self.got.append((dict(request.headers), await request.read()))
        return web.Response(status=204)

    @property
    def url(self) -> str:
        return self.base_url + "/hooks/aye"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as found:
        yield found


async def aye_calling_back(
    start_aye: StartAye, database_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
    **extra: Any,
) -> Aye:
    monkeypatch.setenv("AYE_TOKEN_CB_CLIENT", TOKEN)
    monkeypatch.setenv("AYE_CB_CLIENT_SECRET", SECRET)
    cfg = Config.model_validate({"agents": [{
        "name": "cb", "token_env": "AYE_TOKEN_CB_CLIENT", "callback_secret_env": "AYE_CB_CLIENT_SECRET",
        "callback_urls": [prefix]}], **extra})
    return await start_aye(database_url, cfg, tokens=TokenBook.build(cfg, OPERATOR_TOKEN, None))


async def delivered(receiver: Receiver, count: int = 1) -> None:
    async def enough() -> bool:
        return len(receiver.got) >= count

    await eventually(enough, 15)


async def test_a_callback_from_aye_is_verified_and_a_tampered_one_refused(
    start_aye: StartAye, database_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await aye_calling_back(start_aye, database_url, receiver.base_url + "/hooks/",
                                 monkeypatch)
    async with AyeClient(aye.url, TOKEN) as client:
        made = await asyncio.wait_for(
            client.ask("Ship it?", options=["yes", "no"], callback_url=receiver.url), 5)
    assert made["status"] == "open" and made["callback_url"] == receiver.url  # at once
    assert (await aye.answer(made["ref"], "yes"))[0] == 200
    await delivered(receiver)
    headers, body = receiver.got[0]
    payload = verify_callback(body, headers, SECRET)
    assert payload["event"] == "ask.closed" and payload["ask"]["id"] == made["id"]
    assert answer_value(payload["ask"]) == "yes"
    lower = {k.lower(): v for k, v in headers.items()}  # any case; the secret as bytes too
    assert verify_callback(body, lower, SECRET.encode()) == payload

    tampered = body.replace(b'"yes"', b'"no"')
    assert tampered != body
    for wrong_body, wrong_headers, secret in (
        (tampered, headers, SECRET),
        (body, headers, "another-secret"),
        (body, {k: v for k, v in headers.items() if k != "X-Aye-Signature-256"}, SECRET),
        (body, {**headers, "X-Aye-Signature-256": "sha1=00"}, SECRET),
    ):
        with pytest.raises(BadSignature):
            verify_callback(wrong_body, wrong_headers, secret)
    with pytest.raises(ValueError, match="secret"):
        verify_callback(body, headers, "")


async def test_a_start_with_a_callback_url_is_called_back_when_decided(
    start_aye: StartAye, database_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates = {"gates": [{"kinds": ["github.issue"], "responders": ["operator:local"]}]}
    aye = await aye_calling_back(start_aye, database_url, receiver.base_url + "/hooks/",
                                 monkeypatch, **gates)
    async with AyeClient(aye.url, TOKEN) as client:
        pending = await client.start(ISSUE, title="Fix it", wait=False, callback_url=receiver.url)
        assert pending["decision"] == "pending"
        assert (await aye.answer(pending["ask"]["ref"], "approve"))[0] == 200
        await delivered(receiver)
        ask = verify_callback(receiver.got[0][1], receiver.got[0][0], SECRET)["ask"]
        assert (ask["id"], ask["outcome"]) == (pending["ask"]["id"], "approved")
        assert (await client.start(ISSUE))["decision"] == "allow"  # the job, called back


def readme_receiver() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("#### Callbacks"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def signed(body: bytes, delivery: str, secret: str = SECRET) -> dict[str, str]:
    mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Aye-Signature-256": f"sha256={mac}", "X-Aye-Delivery": delivery,
            "X-Aye-Event": "ask.closed", "Content-Type": "application/json"}


async def test_the_readme_receiver_verifies_and_dedupes(
    start_aye: StartAye, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    (tmp_path / "receiver.py").write_text(readme_receiver().replace("8090", str(port)))
    env = {**os.environ, "AGENT_CALLBACK_SECRET": SECRET, "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "receiver.py", cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            await eventually(lambda: _up(session, base), 15)
            aye = await aye_calling_back(start_aye, f"sqlite+aiosqlite:///{tmp_path}/aye.db",
                                         base + "/hooks/", monkeypatch)
            async with AyeClient(aye.url, TOKEN) as client:
                made = await client.ask("Go?", format="confirm", callback_url=base + "/hooks/aye")
            await aye.answer(made["ref"], "yes")
            assert proc.stdout is not None
            first = await asyncio.wait_for(_printed(proc.stdout), 15)
            assert first == f"{made['ref']} answered True"

            # A replay of one delivery is taken (2xx) and not handled again; a forgery is 401.
            body = json.dumps({"event": "ask.closed", "ask": {"ref": "q99", "status": "expired"}})
            for delivery in ("d-1", "d-1", "d-2"):
                status = await _post(session, base, body.encode(), signed(body.encode(), delivery))
                assert status == 204
            forged = signed(body.encode(), "d-3", "not-the-secret")
            assert await _post(session, base, body.encode(), forged) == 401
            assert await asyncio.wait_for(_printed(proc.stdout), 5) == "q99 expired None"
    finally:
        proc.terminate()
        out, err = await proc.communicate()
    assert out.decode().count("q99 expired None") == 1, (out, err)


async def _up(session: aiohttp.ClientSession, base: str) -> bool:
    try:
        async with session.get(base + "/") as resp:
            return resp.status == 404
    except aiohttp.ClientError:
        return False


async def _post(session: aiohttp.ClientSession, base: str, body: bytes, headers: Any) -> int:
    async with session.post(base + "/hooks/aye", data=body, headers=headers) as resp:
        return resp.status


async def _printed(stream: asyncio.StreamReader) -> str:
    """The receiver's next line of its own (not aiohttp's start-up banner)."""
    while True:
        raw = await stream.readline()
        if not raw:
            raise AssertionError("the receiver stopped printing")
        text = raw.decode().strip()
        if text and not text.startswith(("=", "(Press")):
            return text
