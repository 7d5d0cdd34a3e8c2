"""Email end to end, on both stores: aye sends to a real SMTP server on 127.0.0.1 (aiosmtpd) and
the tests read the MIME messages it took, follow their links over HTTP, and answer as the
recipient would. A scanner's GET answers nothing; a used, replayed, unknown or closed link is
one uniform 404; 451 is tried again as the same message; 550 is a dead letter, tried once."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from bot.config import AyeConfig, Config
from core.app.timing import ManualClock
from core.domain.responders import Responder
from handlers.email.settings import SURFACE
from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, Aye, StartAye, eventually
from tests.e2e.test_gates import RecordingSurface
from tests.smtp_server import MAIL_FROM, PUBLIC_URL, Received, SmtpServer, email_env, smtp_server

ADA, BOB = "ada@example.com", "bob@example.com"
LINK = re.compile(re.escape(PUBLIC_URL) + r"/e/[A-Za-z0-9_-]{43}(?:\?answer=[a-z0-9]+)?")
GONE = "This link is no longer valid."
PEOPLE = [{"name": "ada", "ids": ["github:ada-l", f"email:{ADA}"]},
          {"name": "bob", "ids": [f"email:{BOB}"]}]


@pytest.fixture
async def smtp() -> AsyncIterator[SmtpServer]:
    async with smtp_server() as server:
        yield server


async def start(start_aye: StartAye, database_url: str, smtp: SmtpServer, config: AyeConfig | None = None,
                clock: ManualClock | None = None) -> Aye:
    return await start_aye(database_url, config=config, clock=clock, env=email_env(smtp))


def asking(*responders: str, **more: Any) -> AyeConfig:
    """A config whose agents' questions are for `responders`."""
    return Config.model_validate({"defaults": {"responders": list(responders)}, **more})


async def mails(smtp: SmtpServer, count: int, to: str | None = None,
                clock: ManualClock | None = None) -> list[Received]:
    """The first `count` mails (to `to`), once they arrived; time moves on `clock` meanwhile
    (the outbox looks again at a row being sent a moment later)."""
    async def arrived() -> bool:
        if clock is not None:
            clock.advance(1.0)
        found = smtp.mailbox.to(to) if to else smtp.mailbox.received
        return len(found) >= count

    await eventually(arrived)
    return smtp.mailbox.to(to) if to else list(smtp.mailbox.received)


def links(mail: Received) -> list[str]:
    """The links of the HTML part, each also in the text part."""
    html, text = mail.part("html"), mail.part("plain")
    found = [h.replace("&amp;", "&") for h in re.findall(r'href="([^"]+)"', html)]
    assert found and all(LINK.fullmatch(h) for h in found), found
    assert all(h in text for h in found)
    return found


def local(aye: Aye, link: str) -> str:
    """The link's path and query on the test server (AYE_PUBLIC_URL is the https front)."""
    parts = urlsplit(link)
    return parts.path + (f"?{parts.query}" if parts.query else "")


async def page(aye: Aye, link: str) -> tuple[int, str]:
    resp = await aye.client.get(local(aye, link))
    return resp.status, await resp.text()


async def confirm(aye: Aye, link: str, html: str, **fields: str) -> tuple[int, str]:
    form = dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', html))
    resp = await aye.client.post(urlsplit(link).path, data={**form, **fields})
    return resp.status, await resp.text()


async def history(aye: Aye, ident: str) -> list[dict[str, Any]]:
    return (await aye.get(ident, operator=True))["history"]  # type: ignore[no-any-return]


async def test_a_question_mails_each_responder_once_and_its_link_answers_after_a_confirm(
    start_aye: StartAye, database_url: str, smtp: SmtpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    aye = await start(start_aye, database_url, smtp, asking(f"email:{ADA}", f"email:{BOB}"))
    ask = await aye.ask(question="Ship <b>v2</b> & tell \"ops\"?", options=["Ship it", "Hold"],
                        context="<img src=https://tracker.example/p.gif>")
    both = await mails(smtp, 2)
    mail = smtp.mailbox.to(ADA)[0]
    headers = mail.message
    assert headers["Subject"] == "[aye] Ship <b>v2</b> & tell \"ops\"?"
    assert (headers["From"], headers["To"], headers["Auto-Submitted"]) == (
        MAIL_FROM, ADA, "auto-generated")
    assert mail.mail_from == "aye@example.test"
    html = mail.part("html")
    # Everything the agent wrote is text; nothing loads from elsewhere.
    assert "Ship &lt;b&gt;v2&lt;/b&gt; &amp; tell &#34;ops&#34;?" in html
    assert "&lt;img src=https://tracker.example/p.gif&gt;" in html
    tags = re.findall(r"<([a-z][a-z0-9]*)([^>]*)>", html, re.I)
    assert {t.lower() for t, _ in tags} <= {"html", "head", "meta", "title", "body", "p", "h1",
                                             "a", "table", "tr", "td", "pre", "code"}
    assert not [a for _, a in tags if re.search(r"\b(src|background|srcset)=|url\(|@import", a, re.I)]
    assert "Ship <b>v2</b>" in mail.part("plain")
    ship, hold = links(mail)
    assert ship.endswith("?answer=1") and hold.endswith("?answer=2")
    assert links(both[0])[0] != links(both[1])[0]  # one capability per recipient
    # A scanner opens every link: nothing is answered.
    for link in (ship, hold, ship.split("?")[0]):
        status, html = await page(aye, link)
        assert status == 200 and "Ship &lt;b&gt;v2&lt;/b&gt;" in html
    assert (await aye.get(ask["id"]))["status"] == "open"
    assert not [e for e in await history(aye, ask["id"]) if e["event"] in ("answered", "refused")]
    status, html = await page(aye, hold)
    assert "Confirm: Hold" in html
    status, done = await confirm(aye, hold, html, note="not today")
    assert status == 200 and "Answered: Hold" in done
    view = await aye.get(ask["id"], operator=True)
    assert (view["status"], view["answered_by"], view["answer"]["value"]) == (
        "answered", f"email:{ADA}", "Hold")
    assert [e["where"] for e in view["history"] if e["event"] == "posted"] == [
        f"a mail to {ADA}", f"a mail to {BOB}"] or len(both) == 2
    # Used, replayed, closed or unknown: one page, one status.
    replay = await confirm(aye, hold, html)
    used = await page(aye, ship)
    closed = await page(aye, links(smtp.mailbox.to(BOB)[0])[0])
    unknown = await page(aye, f"{PUBLIC_URL}/e/{'A' * 43}")
    malformed = await page(aye, f"{PUBLIC_URL}/e/short")
    assert replay == used == closed == unknown == malformed
    assert replay[0] == 404 and GONE in replay[1]
    tokens = {urlsplit(link).path.rsplit("/", 1)[1] for m in both for link in links(m)}
    # aye's own lines and its SMTP client's (the test's server, mail.log, is the far side).
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name != "mail.log")
    assert not any(token in logged for token in tokens)


async def test_the_page_is_guarded_as_the_inbox_and_a_form_without_its_csrf_changes_nothing(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start(start_aye, database_url, smtp, asking(f"email:{ADA}"))
    ask = await aye.ask(question="Name the release", format="text")
    (answer,) = links((await mails(smtp, 1))[0])
    resp = await aye.client.get(local(aye, answer))
    assert "default-src 'self'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["Cache-Control"] == "no-store"
    assert resp.headers["Referrer-Policy"] == "no-referrer"
    html = await resp.text()
    assert '<textarea id="' in html and "Confirm" not in html
    status, said = await confirm(aye, answer, html.replace('name="csrf" value="', 'name="csrf" value="x'),
                                 answer="Atlas")
    assert status == 403 and "stale" in said
    assert (await aye.get(ask["id"]))["status"] == "open"
    status, said = await confirm(aye, answer, html, answer="Atlas")
    assert status == 200 and "Answered: Atlas" in said


async def test_451_is_tried_again_as_the_same_mail_and_550_is_a_dead_letter_tried_once(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    clock = ManualClock()
    aye = await start(start_aye, database_url, smtp, asking(f"email:{ADA}"), clock=clock)
    smtp.mailbox.replies = ["451 4.3.0 Try again later"]
    ask = await aye.ask(question="Ship?", options=["yes", "no"])

    async def sent_again() -> bool:
        clock.advance(2.0)  # past the backoff, as time would go
        return len(smtp.mailbox.received) == 1

    await eventually(sent_again, timeout=10)
    assert smtp.mailbox.datas == 2
    assert [m for m, _ in smtp.mailbox.tried] == [smtp.mailbox.received[0].message["Message-ID"]] * 2
    # 550: refused for good, once; a dead letter in /healthz and the ask's history.
    smtp.mailbox.replies = ["550 5.1.1 No such user here"]
    refused = await aye.ask(question="Ship again?", options=["yes", "no"])

    async def buried() -> bool:
        clock.advance(2.0)
        return bool((await (await aye.client.get("/healthz")).json())["dead_letters"] == 1)

    await eventually(buried, timeout=10)
    for _ in range(20):
        clock.advance(60.0)
        await aye.tick()
    assert smtp.mailbox.datas == 3 and len(smtp.mailbox.received) == 1
    undelivered = [e for e in await history(aye, refused["id"]) if e["event"] == "undelivered"]
    assert len(undelivered) == 1 and undelivered[0]["surface"] == SURFACE
    assert "SMTP 550 5.1.1 No such user here" in undelivered[0]["why"]
    metrics = await (await aye.client.get("/metrics", headers=OPERATOR_HEADERS)).text()
    assert 'aye_outbox_dead_letters{surface="email"} 1.0' in metrics
    assert 'aye_surface_calls_total{result="gave_up",surface="email"} 1.0' in metrics
    assert (await aye.get(ask["id"]))["status"] == "open"


class Author(RecordingSurface):
    """GitHub as far as the core asks it who opened a work: ada did."""

    name = "github"

    def reaches(self, responder: Responder, work: dict[str, Any] | None) -> bool:
        return False

    def wants(self, ask: Any, action: str) -> bool:
        return False

    async def author(self, work: dict[str, Any]) -> str | None:
        return "github:ada-l"


async def test_policy_holds_for_a_mailed_approval_self_approval_through_people_and_step_up(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    config = Config.model_validate({"people": PEOPLE, "gates": [
        {"operations": ["deploy."], "responders": ["person:ada", "person:bob"],
         "prevent_self_approval": True},
        {"operations": ["payroll."], "responders": [f"email:{ADA}"], "sign_in_within": "15m"},
    ]})
    aye = await start(start_aye, database_url, smtp, config=config)
    aye.asks.add_surface(Author())
    work = {"github": {"repo": "octo/app", "number": 7}}
    resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS, json={
        "operation": "deploy.prod", "input": {"sha": "abc"}, "work": work})
    assert resp.status == 202
    ask = (await resp.json())["ask"]
    ada_mail, bob_mail = (await mails(smtp, 1, ADA))[0], (await mails(smtp, 1, BOB))[0]
    assert ada_mail.message["Subject"] == "[aye] Approval needed: deploy.prod"
    assert '"sha": "abc"' in ada_mail.part("plain")
    approve = links(ada_mail)[0]
    status, html = await page(aye, approve)
    status, said = await confirm(aye, approve, html)
    # ada opened the work (as github:ada-l): her mail's approval is her own.
    assert status == 409 and "you opened this work" in said
    assert (await aye.get(ask["id"]))["status"] == "open"
    approve = links(bob_mail)[0]
    status, said = await confirm(aye, approve, (await page(aye, approve))[1])
    assert status == 200 and "approved" in said
    # Step-up: a link is no sign-in, so its approval is refused.
    resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS, json={
        "operation": "payroll.run", "input": {}})
    payroll = (await resp.json())["ask"]
    approve = links((await mails(smtp, 2, ADA))[1])[0]
    status, said = await confirm(aye, approve, (await page(aye, approve))[1])
    assert status == 409 and "after a recent sign-in" in said
    assert (await aye.get(payroll["id"]))["status"] == "open"


async def test_an_escalation_mails_its_new_responders_and_a_reminder_those_still_awaited(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    clock = ManualClock()
    config = Config.model_validate({"people": PEOPLE, "gates": [
        {"operations": ["deploy."], "responders": [f"email:{ADA}"], "timeout": "1h",
         "remind_after": "10m", "escalate": {"responders": ["person:bob", f"email:{ADA}"],
                                             "timeout": "1h"}},
    ]})
    aye = await start(start_aye, database_url, smtp, config=config, clock=clock)
    resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS,
                                 json={"operation": "deploy.prod", "input": {}})
    ask = (await resp.json())["ask"]
    first = (await mails(smtp, 1, ADA, clock))[0]
    clock.advance(11 * 60)
    await aye.tick()
    reminder = (await mails(smtp, 2, ADA, clock))[1]
    assert "A reminder" in reminder.part("plain")
    assert reminder.message["Message-ID"] != first.message["Message-ID"]
    assert links(reminder) == links(first)  # the same link: one capability per recipient
    clock.advance(50 * 60)
    await aye.tick()
    escalated = (await mails(smtp, 1, BOB, clock))[0]
    assert "Nobody answered in time" in escalated.part("plain")
    assert len(smtp.mailbox.to(ADA)) == 2  # already asked: no second ask mail
    approve = links(escalated)[0]
    status, _ = await confirm(aye, approve, (await page(aye, approve))[1])
    assert status == 200 and (await aye.get(ask["id"]))["status"] == "answered"


async def test_a_sensitive_answer_given_from_a_link_is_in_no_page_and_no_mail(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start(start_aye, database_url, smtp, asking(f"email:{ADA}"))
    ask = await aye.ask(question="The deploy key?", format="text", sensitive=True)
    (answer,) = links((await mails(smtp, 1))[0])
    status, html = await page(aye, answer)
    assert 'type="password"' in html
    status, said = await confirm(aye, answer, html, answer="hunter2-value")
    assert status == 200 and "sensitive and is not shown" in said and "hunter2" not in said
    assert (await aye.get(ask["id"]))["status"] == "answered"
    assert not any("hunter2" in m.message.as_string() for m in smtp.mailbox.received)
