"""Answering from the web inbox with plain HTML forms (no JavaScript), on both stores: every
format's controls, the outcome each time, refusals in words, and what an approval shows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.app.timing import ManualClock
from tests.conftest import Aye
from tests.e2e.test_web_pages import FORM_SCHEMA, GATES, call, history
from tests.unit.test_web_harness import Forms, Operator, StartInbox, alert, inboxes


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


async def every_format(aye: Aye) -> dict[str, str]:
    """One open ask of each format (and an approval): format -> ref."""
    made = {
        "choice": await aye.ask(question="Which?", options=["red", "blue"]),
        "confirm": await aye.ask(question="Sure?", format="confirm"),
        "ack": await aye.ask(question="Go on?", format="ack"),
        "text": await aye.ask(question="Why?"),
        "multi": await aye.ask(question="Which ones?", format="multi", options=["red", "green", "blue"],
                               min=1, max=2),
        "form": await aye.ask(question="Size?", format="form", schema=FORM_SCHEMA),
    }
    refs = {fmt: str(ask["ref"]) for fmt, ask in made.items()}
    refs["approval"] = await call(aye, "deploy.prod", {"version": "1.4.2"})
    return refs


async def test_every_format_has_its_named_controls_and_a_note(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, GATES)
    refs = await every_format(aye)
    operator = Operator(aye)
    await operator.sign_in()
    page = await operator.page()
    expected = {
        "choice": (["Note"], ["red", "blue"]),
        "approval": (["Note"], ["Approve", "Refuse"]),
        "confirm": (["Note"], ["Yes", "No"]),
        "ack": (["Note"], ["Continue"]),
        "text": (["Answer", "Note"], ["Send"]),
        "multi": (["red", "green", "blue", "Note"], ["Send"]),
        "form": (["Nodes", "Region", "fast", "cheap", "Urgent", "When", "Note"], ["Send"]),
    }
    for fmt, (labels, buttons) in expected.items():
        form = operator.form(page, refs[fmt])
        assert (form.labels(), form.buttons()) == (labels, buttons), fmt
    assert "Approval needed" in page and "deploy.prod" in page and "1.4.2" in page
    # A required field is marked, and its bounds are shown beside it before any submit.
    for html in ('<label for="{r}-f0">Nodes <span class="req" aria-hidden="true">*</span>'
                 '</label>',
                 '<input id="{r}-f0" name="f.0" type="number" step="1" min="1" max="10" required '
                 'aria-required="true" aria-describedby="{r}-f0-h">',
                 '<small class="hint" id="{r}-f0-h">A whole number from 1 to 10</small>',
                 '<select id="{r}-f1" name="f.1">',
                 '<input id="{r}-f4" name="f.4" type="date" aria-describedby="{r}-f4-h">',
                 '<legend>Tags</legend>', 'type="checkbox" name="f.3" value="true"'):
        assert html.format(r=refs["form"]) in page


async def test_every_format_answers_without_javascript_and_says_so(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, GATES)
    refs = await every_format(aye)
    operator = Operator(aye)
    await operator.sign_in()
    answers: list[tuple[str, dict[str, Any], str, Any]] = [
        ("choice", {"press": "blue"}, "Answered: blue", "blue"),
        ("confirm", {"press": "No"}, "Answered: no", False),
        ("ack", {"press": "Continue"}, "Answered: ok", True),
        ("text", {"press": "Send", "fill": {"Answer": "  ship it "}}, "Answered: ship it", "ship it"),
        ("multi", {"press": "Send", "check": {"red", "blue"}}, "Answered: red, blue", ["red", "blue"]),
        ("form", {"press": "Send", "fill": {"Nodes": "3", "Region": "eu", "When": "2026-12-01"},
                  "check": {"fast", "Urgent"}},
         "Answered: Nodes: 3, Region: eu, Tags: fast, Urgent: yes, When: 2026-12-01",
         {"count": 3, "region": "eu", "tags": ["fast"], "urgent": True, "when": "2026-12-01"}),
        ("approval", {"press": "Approve", "fill": {"Note": "looks right"}}, "Answered: approved", "approve"),
    ]
    for fmt, how, said, value in answers:
        ref = refs[fmt]
        assert await operator.answer(ref, **how) == f"{ref} {said}", fmt
        view = await aye.get(ref, operator=True)
        assert (view["status"], view["answer"]["value"]) == ("answered", value), fmt
        assert (view["answered_by"], view["surface"]) == ("operator:local", "web"), fmt
    approved = await aye.get(refs["approval"], operator=True)
    assert approved["outcome"] == "approved" and approved["answer"]["note"] == "looks right"
    page = await operator.page("/inbox")
    assert "Nothing is waiting for an answer." in page


async def test_a_refused_answer_says_why_and_the_ask_stays_as_it_was(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    form = (await aye.ask(question="Size?", format="form", schema=FORM_SCHEMA))["ref"]
    multi = (await aye.ask(question="Which?", format="multi", options=["a", "b", "c"], max=2))["ref"]
    text = (await aye.ask(question="Why?"))["ref"]
    choice = (await aye.ask(question="Deploy?", options=["yes", "no"]))["ref"]
    operator = Operator(aye)
    await operator.sign_in()
    said = await operator.answer(form, "Send", {"Nodes": "11"})
    assert said == f"{form} Not answered: Nodes must be at most 10."
    said = await operator.answer(form, "Send", {"Nodes": "two"})
    assert said == f"{form} Not answered: Nodes must be a whole number."
    said = await operator.answer(multi, "Send", check={"a", "b", "c"})
    assert said == f"{multi} Not answered: the answer must pick at most 2 options."
    said = await operator.answer(text, "Send", {"Answer": "   "})
    assert said == f"{text} Not answered: the answer must not be empty."
    stale = operator.form(await operator.page(), choice)
    assert (await aye.answer(choice, "no"))[0] == 200
    resp = await aye.client.post(stale.action, data=stale.data("yes", {}, set()))
    assert alert(await resp.text()) == f"{choice} Not answered: it was already answered."
    for ref in (form, multi, text):
        assert (await aye.get(ref))["status"] == "open"
    refused = [e for e in await history(aye, form) if e["event"] == "refused"]
    seen = [(e["by"], e["surface"], e["field"]) for e in refused]
    assert seen == [("operator:local", "web", "answer.count")] * 2
    assert (await aye.get(choice, operator=True))["answer"]["value"] == "no"


async def test_an_approval_shows_its_quorum_reminder_and_escalation(
    start_inbox: StartInbox, database_url: str, manual_clock: ManualClock
) -> None:
    aye = await start_inbox(database_url, GATES, manual_clock)
    ref = await call(aye, "release.prod", {"version": "2.0"})
    operator = Operator(aye)
    await operator.sign_in()
    said = await operator.answer(ref, "Approve")
    assert said == f"{ref} Approved: 1 of 2 approvals: the operator; the approval waits for more"
    page = await operator.page(f"/inbox/{ref}")
    assert "1 of 2 approvals: the operator" in page and "Reminder in 30 min" in page
    assert "Escalates in 1 h to the operator" in page
    said = await operator.answer(ref, "Approve", page=f"/inbox/{ref}")
    assert said.startswith(f"{ref} Not answered: you have already approved it")
    manual_clock.advance(31 * 60)
    await aye.tick()
    manual_clock.advance(30 * 60)
    await aye.tick()
    page = await operator.page(f"/inbox/{ref}")
    assert "Reminded 30 min ago" in page and "Escalated just now to the operator" in page
    events = page.split('<span class="event">')[1:]
    assert [e.split("<")[0] for e in events][:4] == [
        "Asked by agent default to approve release.prod",
        "Approved by the operator on the web inbox: 1 of 2 approvals",
        "Refused answer from the operator on the web inbox: they had already approved it; "
        "another person&#39;s approval is needed", "Reminded"]
    assert events[4].startswith("Escalated to the operator, GitHub @bob, until ")
    said = await operator.answer(ref, "Refuse", {"Note": "not today"}, page=f"/inbox/{ref}")
    assert said == f"{ref} Answered: refused"
    page = await operator.page(f"/inbox/{ref}")
    assert "Refused by the operator" in page and "not today" in page
    assert not Forms(page).forms[-1].action.endswith("/answer")


async def test_a_long_input_is_cut_on_the_list_and_whole_on_its_page(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, GATES)
    big = {"script": "x" * 2500 + "THE-END"}
    ref = await call(aye, "deploy.prod", big)
    operator = Operator(aye)
    await operator.sign_in()
    listed = await operator.page()
    assert "Input, cut: 2000 of 2520 characters shown." in listed and "THE-END" not in listed
    canonical = json.dumps(big, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    sha = hashlib.sha256(canonical.encode()).hexdigest()
    assert f"input_sha256 <code>{sha}" in listed
    assert f'<a href="/inbox/{ref}">Read the whole input</a>' in listed
    whole = await operator.page(f"/inbox/{ref}")
    assert "THE-END" in whole and "cut" not in whole and f"input_sha256 <code>{sha}" in whole


async def test_media_context_work_and_deadline_beside_the_question(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    ref = (await aye.ask(
        question="Ship this?", options=["yes", "no"], context="The build is green.", timeout_s=7200,
        media=[{"kind": "image", "url": "https://example.com/shot.png", "caption": "The new page"},
               {"kind": "link", "url": "https://example.com/pr/1", "caption": "The pull request"}],
    ))["ref"]
    operator = Operator(aye)
    await operator.sign_in()
    page = await operator.page()
    assert '<img src="https://example.com/shot.png" alt="The new page"' in page
    assert '<a href="https://example.com/pr/1" rel="noopener noreferrer nofollow" target="_blank">' \
           'The pull request</a>' in page
    assert "The build is green." in page and "<dd>the operator</dd>" in page
    assert 'title="' in page and ">in 2 h</time>" in page
    # Its own page is headed by the question (and titled with it), not showing it again.
    one = await operator.page(f"/inbox/{ref}")
    assert one.count("Ship this?") == 2 and "<title>(1) " in one
    assert f'<h1 class="asked" id="{ref}-q">Ship this?</h1>' in one


async def test_unknown_asks_forged_outcomes_and_foreign_redirects_are_refused(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url)
    ref = (await aye.ask(question="Deploy?", options=["yes", "no"]))["ref"]
    operator = Operator(aye)
    await operator.sign_in()
    page = await operator.page("/inbox/q999", status=404)
    assert "No such ask" in page
    await operator.page("/inbox/%3Cscript%3E", status=404)
    form = operator.form(await operator.page(), ref)
    data = [(k, "https://evil.example/" if k == "back" else v) for k, v in form.data("yes", {}, set())]
    resp = await aye.client.post(form.action, data=data, allow_redirects=False)
    assert resp.headers["Location"] == "/inbox"
    resp = await aye.client.post("/inbox/q999/answer", data=data, allow_redirects=False)
    assert alert(await operator.page(resp.headers["Location"])) == "Not answered: there is no such ask."
    aye.client.session.cookie_jar.update_cookies({"aye_flash": "eyJvayI6dHJ1ZX0.forged"})
    assert 'role="alert"' not in await operator.page()
    resp = await aye.client.get("/login?next=//evil.example/", allow_redirects=False)
    assert resp.headers["Location"] == "/inbox"
