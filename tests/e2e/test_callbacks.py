"""Callbacks: a closed ask is POSTed to its agent's callback URL, signed, retried until a 2xx
with one delivery id, kept across a restart, counted as the agent's read; URLs the operator
did not allow are refused when the ask is made."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ask_api.tokens import TokenBook
from bot.config import Config
from core.app.timing import ManualClock
from tests.conftest import OPERATOR_TOKEN, Aye, StartAye, eventually

SECRET = "callback-secret-for-tests"
AGENT = {"Authorization": "Bearer token-cb"}


@dataclass
class Receiver:
    """An agent's callback endpoint on 127.0.0.1 that refuses its first `fail` deliveries."""

    fail: int = 0
    tries: list[dict[str, Any]] = field(default_factory=list)
    server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.tries.append({"headers": dict(request.headers), "body": body})
        if len(self.tries) <= self.fail:
            return web.Response(status=503)
        return web.Response(status=204)

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("/hooks/aye"))


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver(fail=2)
    app = web.Application()
    app.router.add_post("/hooks/aye", found.handle)
    found.server = TestServer(app, host="127.0.0.1")
    await found.server.start_server()
    yield found
    await found.server.close()


def config(prefix: str, monkeypatch: pytest.MonkeyPatch, secret: bool = True) -> Config:
    monkeypatch.setenv("AYE_TOKEN_CB", "token-cb")
    monkeypatch.setenv("AYE_CB_SECRET", SECRET)
    agent: dict[str, Any] = {"name": "cb", "token_env": "AYE_TOKEN_CB", "callback_urls": [prefix]}
    if secret:
        agent["callback_secret_env"] = "AYE_CB_SECRET"
    return Config.model_validate({"agents": [agent]})


async def start(start_aye: StartAye, url: str, cfg: Config, clock: ManualClock) -> Aye:
    return await start_aye(url, cfg, clock, tokens=TokenBook.build(cfg, OPERATOR_TOKEN, None))


def verified(attempt: dict[str, Any]) -> dict[str, Any]:
    expected = "sha256=" + hmac.new(SECRET.encode(), attempt["body"], hashlib.sha256).hexdigest()
    assert hmac.compare_digest(attempt["headers"]["X-Aye-Signature-256"], expected)
    assert attempt["headers"]["X-Aye-Event"] == "ask.closed"
    return json.loads(attempt["body"])  # type: ignore[no-any-return]


async def tried(receiver: Receiver, count: int, clock: ManualClock) -> None:
    async def enough() -> bool:
        clock.advance(1900)  # past any backoff
        return len(receiver.tries) >= count

    await eventually(enough, 10)


async def test_retried_until_taken_with_one_delivery_id(
    start_aye: StartAye, database_url: str, receiver: Receiver, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = receiver.url.rsplit("/", 1)[0] + "/"
    aye = await start(start_aye, database_url, config(prefix, monkeypatch), manual_clock)
    ask = await aye.ask(headers=AGENT, question="Ship?", options=["yes", "no"],
                        callback_url=receiver.url)
    assert ask["callback_url"] == receiver.url
    await aye.answer(ask["ref"], "yes")
    await tried(receiver, 3, manual_clock)
    assert len({t["headers"]["X-Aye-Delivery"] for t in receiver.tries}) == 1
    body = verified(receiver.tries[-1])
    assert body["event"] == "ask.closed" and body["ask"]["answer"]["value"] == "yes"
    manual_clock.advance(3600)
    await asyncio.sleep(0.2)
    assert len(receiver.tries) == 3  # taken: never sent again
    view = await aye.get(ask["id"], operator=True)
    assert any(e["event"] == "read" for e in view["history"])


async def test_a_sensitive_answer_is_erased_once_called_back(
    start_aye: StartAye, database_url: str, receiver: Receiver, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    receiver.fail = 0
    prefix = receiver.url.rsplit("/", 1)[0] + "/"
    aye = await start(start_aye, database_url, config(prefix, monkeypatch), manual_clock)
    ask = await aye.ask(headers=AGENT, question="PIN?", sensitive=True, callback_url=receiver.url)
    await aye.answer(ask["ref"], "2468")
    await tried(receiver, 1, manual_clock)
    assert verified(receiver.tries[0])["ask"]["answer"]["value"] == "2468"

    async def erased() -> bool:
        got = await aye.client.get(f"/v1/asks/{ask['id']}", headers=AGENT)
        return bool((await got.json())["answer"].get("erased"))

    await eventually(erased)


async def test_a_receiver_down_across_a_restart_still_gets_it(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hooks/aye", found.handle)
    found.server = TestServer(app, host="127.0.0.1")
    await found.server.start_server()
    url = found.url
    await found.server.close()  # down: its port refuses connections
    cfg = config(url.rsplit("/", 1)[0] + "/", monkeypatch)
    first = await start(start_aye, database_url, cfg, manual_clock)
    ask = await first.ask(headers=AGENT, question="Go?", format="confirm", callback_url=url)
    await first.answer(ask["ref"], "yes")
    await first.client.close()  # the process stops with the callback unsent

    found.server = TestServer(app, host="127.0.0.1", port=int(url.split(":")[2].split("/")[0]))
    await found.server.start_server()
    try:
        await start(start_aye, database_url, cfg, manual_clock)  # the restart
        await tried(found, 1, manual_clock)
        assert verified(found.tries[0])["ask"]["answer"]["value"] is True
    finally:
        await found.server.close()


@pytest.mark.parametrize(
    ("url", "secret", "words"),
    [("https://elsewhere.example/hook", True, "is not under this agent's callback_urls"),
     ("https://agents.example/hooks/x", False, "no callback_secret_env"),
     ("ftp://agents.example/hooks/x", True, "absolute http(s) URL")],
)
async def test_urls_the_operator_did_not_allow_are_refused(
    start_aye: StartAye, database_url: str, manual_clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch, url: str, secret: bool, words: str,
) -> None:
    cfg = config("https://agents.example/hooks/", monkeypatch, secret)
    aye = await start(start_aye, database_url, cfg, manual_clock)
    body = await aye.ask(expect=422, headers=AGENT, question="?", callback_url=url)
    assert body["field"] == "callback_url" and words in body["message"]
    resp = await aye.client.post("/v1/calls", headers=AGENT,
                                 json={"operation": "x.y", "callback_url": url})
    assert resp.status == 422
    listed = await (await aye.client.get("/v1/asks", headers=AGENT)).json()
    assert listed["asks"] == []
