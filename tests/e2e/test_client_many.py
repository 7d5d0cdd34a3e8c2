"""The Python client's waits on several asks, its starts and its callback helper, against the
real app (SQLite and PostgreSQL) and a real `aye serve`: wait_all and wait_any woken by answers
with each value typed, across short slices and a restart; start allowed once approved and
refused with who and why; a real receiver on 127.0.0.1 checking aye's signed callbacks."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from aye_client import (
    AskClosed,
    AyeClient,
    AyeError,
    StartRefused,
    answer_value,
    connect,
)
from aye_client import client as client_module
from bot.config import Config
from tests.conftest import AGENT_TOKEN, OPERATOR_HEADERS, Aye, StartAye, eventually
from tests.e2e.test_process import AGENT, OP, Api, free_port, start_server

ISSUE = {"github": {"repo": "octo/app", "number": 7}}
OTHER = {"github": {"repo": "octo/app", "number": 9}}
START_GATES = {"gates": [{"kinds": ["github.issue"], "responders": ["operator:local"],
                          "timeout": "1h"}]}


async def history(aye: Aye, ident: str) -> list[str]:
    return [e["event"] for e in (await aye.get(ident, operator=True))["history"]]


# -- several asks -------------------------------------------------------------------------------


async def test_wait_all_is_woken_by_the_last_answer_with_every_value_typed(aye: Aye) -> None:
    async with connect(aye.url, AGENT_TOKEN) as client:
        asks = [await client.create("Go?", format="confirm"),
                await client.create("Which?", options=["red", "green", "blue"], format="multi"),
                await client.create("Region?", options=["eu", "us"])]
        # By id, by ref, and as the ask itself; in an order of the caller's own.
        given = [asks[2]["ref"], asks[0], asks[1]["id"]]
        waiting = asyncio.create_task(client.wait_all(given))
        await aye.parked(3)
        await aye.answer(asks[0]["ref"], "yes")
        await aye.answer(asks[2]["ref"], "2")
        await asyncio.sleep(0.1)
        assert not waiting.done()  # one is still open
        await aye.answer(asks[1]["ref"], "3, 1")
        got = await asyncio.wait_for(waiting, 10)
    assert [a["id"] for a in got] == [asks[2]["id"], asks[0]["id"], asks[1]["id"]]
    assert [answer_value(a) for a in got] == ["us", True, ["red", "blue"]]


async def test_wait_any_returns_on_the_first_answer(aye: Aye) -> None:
    async with AyeClient(aye.url, AGENT_TOKEN) as client:
        asks = [await client.create(f"q{i}?", options=["yes", "no"]) for i in range(3)]
        waiting = asyncio.create_task(client.wait_any(asks))
        await aye.parked(3)
        await aye.answer(asks[1]["ref"], "no")
        got = await asyncio.wait_for(waiting, 10)
        assert [a["status"] for a in got] == ["open", "answered", "open"]
        assert answer_value(got[1]) == "no"
        with pytest.raises(ValueError, match="still open"):
            answer_value(got[0])
        # A timeout returns them as they stand; a withdrawn one reads as AskClosed.
        await aye.client.delete(f"/v1/asks/{asks[0]['id']}", headers=OPERATOR_HEADERS)
        stand = await client.wait_all([asks[0], asks[2]], timeout=0.3)
        assert [a["status"] for a in stand] == ["withdrawn", "open"]
        with pytest.raises(AskClosed) as closed:
            answer_value(stand[0])
        assert closed.value.code == "withdrawn"


async def test_wait_all_across_slices_reads_a_closed_ask_once(
    aye: Aye, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request parks one second here: the sensitive ask answered first is read (and so
    erased) by the first request, and kept; only the open one is asked for again."""
    monkeypatch.setattr(client_module, "WAIT_SLICE_S", 1)
    async with AyeClient(aye.url, AGENT_TOKEN) as client:
        pin = await client.create("PIN?", sensitive=True)
        other = await client.create("Ready?", format="ack")
        await aye.answer(pin["ref"], "2468")
        waiting = asyncio.create_task(client.wait_all([pin, other]))

        async def pin_read() -> bool:
            return "read" in await history(aye, pin["ref"])

        await eventually(pin_read)
        await asyncio.sleep(1.5)  # at least one more slice, on the open ask alone
        assert not waiting.done()
        await aye.answer(other["ref"], "ok")
        got = await asyncio.wait_for(waiting, 10)
    assert [answer_value(a) for a in got] == ["2468", True]
    assert (await aye.get(pin["id"]))["answer"].get("erased") is True


async def test_bad_waits_are_refused(aye: Aye) -> None:
    async with AyeClient(aye.url, AGENT_TOKEN) as client:
        ask = await client.create("Go?")
        for many in ([], ["q1"] * 101):
            with pytest.raises(ValueError, match="1 to 100 asks"):
                await client.wait_all(many)
        with pytest.raises(AyeError) as unknown:
            await client.wait_any([ask, "q999999"])
    assert (unknown.value.status, unknown.value.field) == (404, "ids[1]")


async def test_wait_all_survives_a_restart_of_aye(tmp_path: Path, sqlite_url: str) -> None:
    url = sqlite_url
    port = free_port()
    first = await start_server(tmp_path, url, name="first", port=port)
    async with AyeClient(first.url, AGENT) as client, aiohttp.ClientSession() as session:
        api = Api(session, first.url)
        asks = [await client.create(f"Ship {name}?", format="confirm") for name in ("api", "web")]
        waiting = asyncio.create_task(client.wait_all(asks))
        await eventually(lambda: _parked(api), 10)
        first.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(first.proc.wait, 10) == 0
        done, _ = await asyncio.wait({waiting}, timeout=0.5)
        assert not done  # aye is down: the client keeps trying
        second = await start_server(tmp_path, url, name="second", port=port)
        try:
            for ask, said in zip(asks, ("yes", "no"), strict=True):
                status, _ = await api.call("POST", f"/v1/asks/{ask['ref']}/answer", token=OP,
                                           json={"answer": said})
                assert status == 200
            got = await asyncio.wait_for(waiting, 20)
            assert [answer_value(a) for a in got] == [True, False]
        finally:
            second.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(second.proc.wait, 10)


async def _parked(api: Api) -> bool:
    try:
        status, health = await api.call("GET", "/healthz")
    except aiohttp.ClientError:
        return False
    return status == 200 and health["parked"] >= 1


# -- starts -------------------------------------------------------------------------------------


async def open_approval(aye: Aye) -> dict[str, Any]:
    await aye.parked(1)
    resp = await aye.client.get("/v1/asks?status=open", headers=OPERATOR_HEADERS)
    [ask] = (await resp.json())["asks"]
    return ask  # type: ignore[no-any-return]


async def test_start_waits_for_the_approval_then_is_allowed(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, Config.model_validate(START_GATES))
    async with connect(aye.url, AGENT_TOKEN) as client:
        started = asyncio.create_task(client.start(
            ISSUE, title="Fix the login bug", links=["https://github.com/octo/app/issues/7"],
            trigger="label: agent"))
        approval = await open_approval(aye)
        assert approval["operation"] == "human.start"
        assert approval["input"]["title"] == "Fix the login bug"
        assert approval["input"]["trigger"] == "label: agent"
        await asyncio.sleep(0.1)
        assert not started.done()
        assert (await aye.answer(approval["ref"], "approve"))[0] == 200
        decision = await asyncio.wait_for(started, 10)
        assert decision["decision"] == "allow" and decision["approval"] == approval["id"]
        again = await asyncio.wait_for(client.start(ISSUE), 2)  # later starts: at once
        assert again["decision"] == "allow"
        # Work that no gate names is allowed without an approval (a pull request's kind would
        # need GitHub to confirm it, which is off here: a thread is never a `github.issue`).
        thread = {"slack": {"channel": "C0123ABCD", "thread_ts": "1.2"}}
        assert await client.start(thread) == {"decision": "allow"}


async def test_a_refused_start_raises_with_who_and_why_for_good(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, Config.model_validate(START_GATES))
    async with connect(aye.url, AGENT_TOKEN) as client:
        pending = await client.start(OTHER, title="Rewrite it all", wait=False)
        assert pending["decision"] == "pending"
        started = asyncio.create_task(client.start(OTHER, title="Rewrite it all"))
        await aye.parked(1)
        assert (await aye.answer(pending["ask"]["ref"], "refuse", "not this one"))[0] == 200
        with pytest.raises(StartRefused) as refused:
            await asyncio.wait_for(started, 10)
        for error in (refused.value, await _refusal(client)):  # and at once, every later start
            assert (error.error, error.code, error.status) == ("start_refused", "start_refused", 403)
            assert (error.by, error.note, error.work) == ("operator:local", "not this one", OTHER)
            assert "github:octo/app#9 was refused by operator:local" in str(error)


async def _refusal(client: AyeClient) -> StartRefused:
    try:
        await asyncio.wait_for(client.start(OTHER), 2)
    except StartRefused as refused:
        return refused
    raise AssertionError("a refused start was let through")


async def test_a_start_bounded_by_timeout_comes_back_pending(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, Config.model_validate(START_GATES))
    async with connect(aye.url, AGENT_TOKEN) as client:
        decision = await asyncio.wait_for(client.start(ISSUE, timeout=0.5), 5)
        assert decision["decision"] == "pending" and decision["ask"]["status"] == "open"
        again = await client.start(ISSUE, wait=False)
        assert again["ask"]["id"] == decision["ask"]["id"]  # the same approval
        await aye.client.delete(f"/v1/asks/{again['ask']['id']}", headers=OPERATOR_HEADERS)
        with pytest.raises(StartRefused) as withdrawn:  # waiting on one that gets withdrawn
            started = asyncio.create_task(client.start(ISSUE))
            approval = await open_approval(aye)
            await aye.client.delete(f"/v1/asks/{approval['id']}", headers=OPERATOR_HEADERS)
            await asyncio.wait_for(started, 10)
        assert withdrawn.value.error == "approval_withdrawn"
