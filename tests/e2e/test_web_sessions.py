"""The inbox's sessions, kept in the store, on both stores: Sign out ends a session for every
process (a copy of the cookie opens nothing after it), a restart keeps it, it expires after 12
hours, the store holds only a hash of it; and failed sign-ins are limited per client address
without ever refusing the right token."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select

import ask_api.sse
from core.app.sessions import SESSION_S
from core.app.timing import ManualClock
from handlers.web.failures import FAILURES_PER_MINUTE
from store.models import SessionRow
from tests.conftest import OPERATOR_TOKEN, Aye
from tests.unit.test_web_harness import Forms, StartInbox, alert, inboxes

COOKIE = "aye_session"
NOT_VALID = "That token is not valid."
TOO_MANY = "Too many failed sign-ins from this address. Wait a minute, then try again."
SESSIONS = SessionRow.__table__  # type: ignore[attr-defined]


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


@contextlib.asynccontextmanager
async def browser(aye: Aye, address: str = "127.0.0.1") -> AsyncIterator[aiohttp.ClientSession]:
    """A client of its own, connecting from `address` (any of 127/8 reaches the server), that
    keeps no cookies: each request carries exactly the cookie the test gives it."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(aye.url, connector=connector,
                                     cookie_jar=aiohttp.DummyCookieJar()) as http:
        yield http


def carrying(cookie: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={cookie}"}


async def sign_in(http: aiohttp.ClientSession, token: str = OPERATOR_TOKEN) -> str:
    """Sign in through /login: the session cookie's value."""
    async with http.post("/login", data={"token": token}, allow_redirects=False) as resp:
        assert resp.status == 303, await resp.text()
        return resp.cookies[COOKIE].value


async def opens(http: aiohttp.ClientSession, cookie: str, path: str = "/inbox") -> bool:
    """Whether `cookie` opens `path` (200), or is sent to sign in (302 to /login)."""
    async with http.get(path, headers=carrying(cookie), allow_redirects=False) as resp:
        assert resp.status in (200, 302), resp.status
        if resp.status == 302:
            assert resp.headers["Location"].startswith("/login")
        return resp.status == 200


async def sign_out(http: aiohttp.ClientSession, cookie: str) -> None:
    """Press the page's Sign out button."""
    async with http.get("/inbox", headers=carrying(cookie)) as resp:
        page = await resp.text()
    form = next(f for f in Forms(page).forms if f.action == "/logout")
    async with http.post("/logout", data=form.data("Sign out", {}, set()), headers=carrying(cookie),
                         allow_redirects=False) as resp:
        assert (resp.status, resp.headers["Location"]) == (303, "/login")
        assert resp.cookies[COOKIE].value == ""  # and the browser's copy is deleted


async def kept_sessions(aye: Aye) -> list[Any]:
    async with aye.asks.parts.store.read() as conn:
        return list((await conn.execute(select(SESSIONS))).all())


# -- Sign out ends the session, everywhere ------------------------------------------------------


async def test_a_cookie_copied_before_sign_out_opens_nothing_after_it(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    ref = (await aye.ask(question="Deploy?", options=["yes", "no"]))["ref"]
    async with browser(aye) as http:
        cookie = await sign_in(http)
        async with http.get("/inbox", headers=carrying(cookie)) as resp:
            answer = next(f for f in Forms(await resp.text()).forms if f.action == f"/inbox/{ref}/answer")
        async with http.get("/v1/events", headers=carrying(cookie)) as resp:
            assert resp.status == 200  # the page's live updates take the session

        await sign_out(http, cookie)

        for path in ("/inbox", f"/inbox/{ref}", "/inbox?status=all"):
            assert not await opens(http, cookie, path), path
        async with http.get("/login", headers=carrying(cookie), allow_redirects=False) as resp:
            assert resp.status == 200  # the sign-in page, not a redirect into the inbox
        async with http.post(answer.action, data=answer.data("yes", {}, set()),
                             headers=carrying(cookie), allow_redirects=False) as resp:
            assert resp.status == 403
        async with http.get("/v1/events", headers=carrying(cookie)) as resp:
            assert resp.status == 401
    assert (await aye.get(ref))["status"] == "open"
    assert await kept_sessions(aye) == []


async def test_an_event_stream_opened_with_the_session_ends_at_sign_out(
    start_inbox: StartInbox, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ask_api.sse, "HEARTBEAT_S", 0.2)  # the session is asked at each one
    aye = await start_inbox(database_url)
    async with browser(aye) as http:
        cookie = await sign_in(http)
        async with http.get("/v1/events", headers=carrying(cookie)) as stream:
            assert stream.status == 200
            assert await asyncio.wait_for(stream.content.readline(), 5) == b"retry: 2000\n"
            await sign_out(http, cookie)
            # The stream ends by itself (the heartbeat found no session), nothing more sent.
            rest = await asyncio.wait_for(stream.content.read(), 10)
        assert b"ask." not in rest
        await aye.ask(question="Deploy?")  # made after: nobody signed out is told


async def test_sign_out_on_one_process_ends_the_session_on_the_other(
    start_inbox: StartInbox, database_url: str
) -> None:
    one, other = await start_inbox(database_url), await start_inbox(database_url)
    async with browser(one) as on_one, browser(other) as on_other:
        cookie = await sign_in(on_one)
        assert await opens(on_other, cookie)  # a session of the store, not of one process
        second = await sign_in(on_other)

        await sign_out(on_other, cookie)

        assert not await opens(on_one, cookie) and not await opens(on_other, cookie)
        assert await opens(on_one, second)  # only that session ended
        # Sign out from the page still open on the first: its browser forgets the dead cookie.
        async with on_one.post("/logout", headers=carrying(cookie), allow_redirects=False) as resp:
            assert (resp.status, resp.headers["Location"]) == (303, "/login")
            assert resp.cookies[COOKIE].value == ""
        assert await opens(on_one, second)


async def test_a_session_survives_a_restart_and_a_sign_out_after_it_still_ends_it(
    start_inbox: StartInbox, database_url: str
) -> None:
    first = await start_inbox(database_url)
    async with browser(first) as http:
        cookie = await sign_in(http)
    await first.client.close()

    again = await start_inbox(database_url)
    async with browser(again) as http:
        assert await opens(http, cookie)
        await sign_out(http, cookie)
        assert not await opens(http, cookie)


async def test_a_session_ends_after_twelve_hours_and_is_forgotten_at_a_later_sign_in(
    start_inbox: StartInbox, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_inbox(database_url, clock=manual_clock)
    async with browser(aye) as http:
        cookie = await sign_in(http)
        manual_clock.advance(SESSION_S - 1)
        assert await opens(http, cookie)
        manual_clock.advance(2)
        assert not await opens(http, cookie)
        assert len(await kept_sessions(aye)) == 1

        later = await sign_in(http)

        assert await opens(http, later) and not await opens(http, cookie)
        [kept] = await kept_sessions(aye)
        assert kept.expires_at == manual_clock.now() + SESSION_S


async def test_the_store_keeps_who_signed_in_how_and_when_but_never_the_cookie(
    start_inbox: StartInbox, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_inbox(database_url, clock=manual_clock)
    async with browser(aye) as http:
        cookie = await sign_in(http)
        [kept] = await kept_sessions(aye)
        assert (kept.identity, kept.method) == ("operator:local", "token")
        assert (kept.signed_in_at, kept.expires_at) == (manual_clock.now(), manual_clock.now() + SESSION_S)
        assert len(kept.id_hash) == 64 and cookie not in repr(tuple(kept))
        assert len(cookie) >= 22  # at least 128 random bits
        # Neither a forged cookie nor the stored hash itself opens the inbox.
        for forged in (kept.id_hash, cookie[:-1] + ("A" if cookie[-1] != "A" else "B"), cookie + "."):
            assert not await opens(http, forged)


# -- failed sign-ins ---------------------------------------------------------------------------


async def test_twenty_wrong_tokens_from_one_address_never_keep_the_right_one_out(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    async with browser(aye) as http:
        said = []
        for _ in range(20):
            async with http.post("/login", data={"token": "guess"}, allow_redirects=False) as resp:
                said.append((resp.status, alert(await resp.text())))
                assert COOKIE not in resp.cookies
                if resp.status == 429:
                    assert 1 <= int(resp.headers["Retry-After"]) <= 60
        limit = FAILURES_PER_MINUTE
        assert said == [(401, NOT_VALID)] * limit + [(429, TOO_MANY)] * (20 - limit)

        cookie = await sign_in(http)  # from the limited address itself
        assert await opens(http, cookie)
        async with http.post("/login", data={"token": "guess"}, allow_redirects=False) as resp:
            assert resp.status == 429  # the right token did not lift the limit for guesses
    async with browser(aye, "127.0.0.2") as elsewhere:
        async with elsewhere.post("/login", data={"token": "guess"}, allow_redirects=False) as resp:
            assert (resp.status, alert(await resp.text())) == (401, NOT_VALID)
        assert await opens(elsewhere, await sign_in(elsewhere))
