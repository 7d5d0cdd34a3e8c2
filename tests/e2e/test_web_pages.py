"""The web inbox over HTTP, on both stores: signing in, what a page shows, and answering with
plain HTML forms (no JavaScript), as the operator would in a browser."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from bot.config import Config
from core.app.parts import Parts
from core.app.service import Service
from core.domain.policy import Defaults
from handlers.web import setup
from store.db import Store
from tests.conftest import AGENT_HEADERS, AGENT_TOKEN, OPERATOR_TOKEN, Aye
from tests.unit.test_web_harness import SESSION_KEY, Forms, Operator, StartInbox, alert, inboxes


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


GATES = Config.model_validate({"gates": [
    {"operations": ["deploy."]},
    {"operations": ["release."], "approvals": 2, "timeout": "1h", "remind_after": "30m",
     "escalate": {"responders": ["operator:local", "github:bob"], "timeout": "1h"}},
]})
FORM_SCHEMA = {"type": "object", "required": ["count"], "properties": {
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Nodes"},
    "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["fast", "cheap"]}, "title": "Tags"},
    "urgent": {"type": "boolean", "title": "Urgent"},
    "when": {"type": "string", "format": "date", "title": "When"},
}}


async def call(aye: Aye, operation: str, input_: Any) -> str:
    resp = await aye.client.post("/v1/calls", json={"operation": operation, "input": input_},
                                 headers=AGENT_HEADERS)
    assert resp.status == 202, await resp.text()
    return str((await resp.json())["ask"]["ref"])


async def history(aye: Aye, ref: str) -> list[dict[str, Any]]:
    return list((await aye.get(ref, operator=True))["history"])


# -- signing in ----------------------------------------------------------------------------


async def test_a_stranger_is_sent_to_sign_in(start_inbox: StartInbox, database_url: str) -> None:
    aye = await start_inbox(database_url)
    q = (await aye.ask(question="Deploy?", options=["yes", "no"]))["ref"]
    resp = await aye.client.get("/", allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (302, "/inbox")
    for path, back in (("/inbox", None), ("/inbox?status=all", "/inbox?status=all"),
                       (f"/inbox/{q}", f"/inbox/{q}")):
        resp = await aye.client.get(path, allow_redirects=False)
        target = URL(resp.headers["Location"])
        assert (resp.status, target.path, target.query.get("next")) == (302, "/login", back)
    resp = await aye.client.post(f"/inbox/{q}/answer", data={"answer": "1"}, allow_redirects=False)
    assert resp.status == 403
    assert (await aye.get(q))["status"] == "open"


async def test_a_wrong_token_is_not_valid_and_sets_no_cookie(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    page = await Operator(aye).page("/login")
    form = Forms(page).forms[0]
    assert form.labels() == ["Operator token"] and form.buttons() == ["Sign in"]
    assert 'type="password"' in page
    for token in ("nope", AGENT_TOKEN, ""):
        resp = await aye.client.post("/login", data={"token": token}, allow_redirects=False)
        assert resp.status == 401
        assert alert(await resp.text()) == "That token is not valid."
        assert "Set-Cookie" not in resp.headers
    resp = await aye.client.get("/inbox", allow_redirects=False)
    assert resp.status == 302


async def test_signing_in_gives_a_strict_cookie_for_twelve_hours_and_sign_out_ends_it(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    resp = await aye.client.post("/login", data={"token": f" {OPERATOR_TOKEN}\n", "next": "/inbox/q9"},
                                 allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/inbox/q9")
    cookie = resp.headers["Set-Cookie"]
    assert cookie.startswith("aye_session=")
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"):
        assert flag in cookie
    assert "Secure" not in cookie
    operator = Operator(aye)
    page = await operator.page("/inbox")
    signout = next(f for f in Forms(page).forms if f.action == "/logout")
    assert signout.buttons() == ["Sign out"]
    resp = await aye.client.post("/logout", data=signout.data("Sign out", {}, set()), allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/login")
    assert (await aye.client.get("/inbox", allow_redirects=False)).status == 302


async def test_over_https_the_cookie_is_secure(tmp_path: Any) -> None:
    store = Store(f"sqlite+aiosqlite:///{tmp_path}/aye.db")
    await store.open()
    app = web.Application()
    service = Service(Parts.build(store, Defaults()))
    setup(app, service, lambda token: token == OPERATOR_TOKEN, True, SESSION_KEY)
    try:
        async with TestClient(TestServer(app)) as client:
            resp = await client.post("/login", data={"token": OPERATOR_TOKEN}, allow_redirects=False)
            assert resp.status == 303
            cookie = resp.headers["Set-Cookie"]
            assert cookie.startswith("__Host-aye_session=") and "Secure" in cookie
    finally:
        await store.close()




# -- what protects the pages ------------------------------------------------------------------


async def test_a_post_without_this_sessions_csrf_token_is_403_and_changes_nothing(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    q = (await aye.ask(question="Deploy?", options=["yes", "no"]))["ref"]
    before = await history(aye, q)
    other = Operator(aye)
    await other.sign_in()
    stale = other.form(await other.page(), q).data("yes", {}, set())
    await aye.client.post("/logout", data=stale)  # a new session has another token
    await other.sign_in()
    for data in ([("answer", "1")], [("answer", "1"), ("csrf", "forged")], stale):
        resp = await aye.client.post(f"/inbox/{q}/answer", data=data, allow_redirects=False)
        assert resp.status == 403
        assert "nothing was changed" in await resp.text()
    assert (await aye.get(q))["status"] == "open"
    assert await history(aye, q) == before
    resp = await aye.client.post("/logout", data=[("csrf", "forged")], allow_redirects=False)
    assert resp.status == 403
    assert (await aye.client.get("/inbox", allow_redirects=False)).status == 200


async def test_every_response_carries_the_security_headers(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    q = (await aye.ask(question="Deploy?", options=["yes", "no"]))["ref"]
    operator = Operator(aye)
    responses = [await aye.client.get("/login"), await aye.client.get("/", allow_redirects=False),
                 await aye.client.get("/inbox", allow_redirects=False)]
    await operator.sign_in()
    for path in ("/inbox", f"/inbox/{q}", "/inbox/q999", "/inbox?fragment=1", "/inbox/assets/inbox.css",
                 "/inbox/assets/inbox.js"):
        responses.append(await aye.client.get(path))
    responses.append(await aye.client.post(f"/inbox/{q}/answer", data={"csrf": "x"}))
    for resp in responses:
        csp = resp.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    html = await operator.page("/inbox")
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "an inline script"
    assert not re.search(r"\s(style|on[a-z]+)=", html), "an inline style or handler"


async def test_everything_an_agent_wrote_shows_as_text(start_inbox: StartInbox, database_url: str) -> None:
    aye = await start_inbox(database_url, GATES)
    evil = "<script>alert(1)</script>"
    await aye.ask(question=evil, options=[evil, "<b>no</b>"], context=f"<img src=x onerror=alert(2)>{evil}",
                  media=[{"kind": "link", "url": "https://example.com/x", "caption": evil}])
    await aye.ask(question="Form", format="form", schema={"type": "object", "properties": {
        "a": {"type": "string", "title": evil, "description": evil, "enum": [evil]}}})
    await call(aye, f"deploy.{'x' * 3}", {"html": evil})
    operator = Operator(aye)
    await operator.sign_in()
    for path in ("/inbox", "/inbox/q1", "/inbox/a3"):
        page = await operator.page(path)
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>no" not in page
    page = await operator.page("/inbox")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert Forms(page).forms[-1].buttons() == [evil, "<b>no</b>"]


async def test_a_sensitive_answer_is_never_shown(start_inbox: StartInbox, database_url: str) -> None:
    aye = await start_inbox(database_url)
    by_web = (await aye.ask(question="Password?", sensitive=True))["ref"]
    by_api = (await aye.ask(question="PIN?", sensitive=True))["ref"]
    operator = Operator(aye)
    await operator.sign_in()
    page = await operator.page("/inbox")
    assert 'type="password"' in page
    said = await operator.answer(by_web, "Send", {"Answer": "hunter2-secret", "Note": "note-secret"})
    assert said == f"{by_web} Answered (the answer is sensitive and is not shown)"
    assert (await aye.answer(by_api, "4242-secret"))[0] == 200
    pages = [await operator.page(p) for p in ("/inbox?status=all", f"/inbox/{by_web}", f"/inbox/{by_api}")]
    for page in pages:
        assert "secret" not in page
        assert "the answer is sensitive and is not shown" in page


async def test_the_list_is_newest_first_fifty_a_page(start_inbox: StartInbox, database_url: str) -> None:
    aye = await start_inbox(database_url)
    refs = [(await aye.ask(question=f"Question {n}?"))["ref"] for n in range(55)]
    assert (await aye.answer(refs[0], "done"))[0] == 200
    operator = Operator(aye)
    await operator.sign_in()
    first = await operator.page("/inbox")
    shown = re.findall(r'data-ref="(\w+)"', first)
    assert shown == refs[::-1][:50]
    following = re.search(r'<a href="([^"]+)" rel="next">Next page</a>', first)
    assert following is not None
    second = await operator.page(following.group(1).replace("&amp;", "&"))
    assert re.findall(r'data-ref="(\w+)"', second) == refs[4:0:-1]
    assert "Next page" not in second and "First page" in second
    every = await operator.page(f"/inbox?status=all&cursor={int(refs[1][1:], 36)}")
    assert re.findall(r'data-ref="(\w+)"', every) == [refs[0]]
    assert "Answered by the operator: done" in every
    fragment = await operator.page("/inbox?fragment=1")
    assert fragment.lstrip().startswith('<div id="live"') and "<html" not in fragment
