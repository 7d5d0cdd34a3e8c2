"""External asks on every surface a person sees: Slack, GitHub and the web inbox show that the
ask waits on its outside system (the verifier), with no answer controls; a person's answer
there is refused with that reason and recorded; once the system answers through its door, each
shows the payload on one line (never a sensitive one). The ticket is in no post, comment or page.

End to end on both stores: the real slack-bolt/slack-sdk against the fake Slack, signed
webhooks and the real gidgethub against the fake GitHub, the inbox over HTTP. The CLI's side is
tests/e2e/test_cli_external.py's.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from yarl import URL

from bot.config import Config
from handlers.github.messages import closed_comment
from handlers.slack import blocks
from tests import builders
from tests.conftest import OPERATOR_TOKEN, Aye, StartAye
from tests.e2e.test_external import GOOD, PINNED, SECRET, SIGNER, door_path, post
from tests.e2e.test_github_e2e import COMMENT, ISSUE_COMMENTS, WORK, Hub, app_env
from tests.e2e.test_slack_surface import RESPONDER, WORK_CHANNEL, labels, ok, posted, shown, slack_env
from tests.fake_github import FakeGitHub
from tests.fake_slack import FakeSlack, block_problems
from tests.unit.test_web_harness import Forms, Operator, alert

PUBLIC = "https://aye.example.com"
SIGNER_TOKEN = SIGNER["Authorization"].removeprefix("Bearer ")
QUESTION = "Wait for the contract to be signed"
WAITS = "Waits on *docsign*, an outside system; it answers through its signed door"
SHOWN_GOOD = '{"reference": "inv-42", "status": "signed", "signer": "Ada"}'


def config(monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("AYE_T_SIGNER", SIGNER_TOKEN)
    monkeypatch.setenv("AYE_DOCSIGN_SECRET", SECRET)
    return Config.model_validate({
        "defaults": {"responders": [f"slack:{RESPONDER}", "github:octocat", "operator:local"]},
        "github": {"post_questions": True},
        "agents": [{"name": "signer", "token_env": "AYE_T_SIGNER", "verifiers": ["docsign"]}],
        "verifiers": [{"name": "docsign", "secret_env": "AYE_DOCSIGN_SECRET",
                       "header": "X-Signature-256", "scheme": "hmac-sha256"}],
    })


async def started(start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch,
                  **env: str) -> Aye:
    aye = await start_aye(database_url, config(monkeypatch), env={"AYE_PUBLIC_URL": PUBLIC, **env})
    aye.headers = dict(SIGNER)
    return aye


async def external(aye: Aye, **extra: Any) -> tuple[dict[str, Any], str]:
    """A new external ask, and its ticket (the last part of its answer_url)."""
    ask = await aye.ask(question=QUESTION, format="external", verifier="docsign", schema=PINNED,
                        **extra)
    return ask, door_path(ask).rsplit("/", 1)[1]


async def refused(aye: Aye, ref: str) -> list[tuple[str, str]]:
    history = (await aye.get(ref, operator=True))["history"]
    return [(e["by"], e["why"]) for e in history if e["event"] == "refused"]


# -- Slack ------------------------------------------------------------------------------------


async def test_slack_shows_the_wait_without_buttons_then_the_payload(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread_ts = fake_slack.add_message(WORK_CHANNEL, "the contract for inv-42")
    aye = await started(start_aye, database_url, monkeypatch, **slack_env(fake_slack))
    work = {"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}}
    ask, ticket = await external(aye, context="Sent to Ada for signing.", work=work)

    call = await posted(fake_slack)

    assert (call.args["channel"], call.args["thread_ts"]) == (WORK_CHANNEL, thread_ts)
    assert call.args["text"] == f"[{ask['ref']}] {QUESTION} (waits on docsign)"
    assert labels(call.args) == []  # no buttons, so no Answer modal either
    text = shown(call.args)
    assert QUESTION in text and "Sent to Ada for signing." in text and WAITS in text
    assert "*For:* docsign (an outside system)" in text
    assert await post(aye, door_path(ask), GOOD) == (200, {"outcome": "taken"})
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert f"Answered by docsign (an outside system): *{SHOWN_GOOD}*" in shown(update.args)
    assert labels(update.args) == [] and WAITS not in shown(update.args)
    assert update.args["text"] == f"[{ask['ref']}] {QUESTION} (answered)"
    assert ticket not in json.dumps([c.args for c in fake_slack.calls])


async def test_slack_refuses_a_press_or_a_modal_on_it_and_shows_its_withdrawal(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread_ts = fake_slack.add_message(WORK_CHANNEL, "the contract for inv-42")
    aye = await started(start_aye, database_url, monkeypatch, **slack_env(fake_slack))
    work = {"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}}
    ask, _ = await external(aye, work=work)
    call = await posted(fake_slack)
    ts = call.response["ts"]
    # Its message has no buttons: presses made up from another message's, as Slack would send.
    for action_id, value in (("aye_answer", ask["id"]), ("aye_word_ok", f"{ask['id']}:ok")):
        after = len(fake_slack.calls)
        await fake_slack.press_button(RESPONDER, action_id, value, WORK_CHANNEL, ts)
        told = await fake_slack.wait_for_call("chat.postEphemeral", ok, after=after)
        assert told.args["text"] == (f"Your answer to `{ask['ref']}` was not taken: only "
                                     "docsign, an outside system, answers it, through its "
                                     "signed door.")
    assert fake_slack.calls_to("views.open") == []
    # A text ask's modal, submitted as if it were the external ask's.
    after = len(fake_slack.calls)
    text_ask = await aye.ask(question="Anything else?", work=work)
    text_call = await posted(fake_slack, after=after)
    await fake_slack.press_button(RESPONDER, "aye_answer", text_ask["id"], WORK_CHANNEL,
                                  text_call.response["ts"])
    await fake_slack.wait_for_call("views.open", ok)
    ack = await fake_slack.submit_view(RESPONDER, {"answer": {"text": json.dumps(GOOD)}},
                                       private_metadata=ask["id"])
    assert ack["payload"]["errors"] == {"answer": "Not taken: only docsign, an outside system, "
                                        "answers this question, through its signed door."}
    assert await refused(aye, ask["ref"]) == [(f"slack:{RESPONDER}", "not_a_responder")] * 3
    assert (await aye.get(ask["id"]))["status"] == "open"
    resp = await aye.client.delete(f"/v1/asks/{ask['id']}", headers=SIGNER)
    assert resp.status == 200
    update = await fake_slack.wait_for_call("chat.update", lambda c: c.ok and c.args["ts"] == ts)
    assert "Withdrawn: the answer is no longer needed." in shown(update.args)


def closed(**fields: Any) -> Any:
    """A closed external ask (answered by docsign unless `fields` say otherwise)."""
    values = {"format": "external", "verifier": "docsign", "options": None,
              "form_schema": PINNED, "responders": ["external:docsign"],
              "answered_by": "external:docsign", "answer_value": json.dumps(GOOD),
              "closed_at": builders.DEADLINE}
    return builders.question(**{**values, **fields})


@pytest.mark.parametrize(("ask", "line", "on_github"), [
    (builders.question(format="external", verifier="docsign", options=None,
                       responders=["external:docsign"]), "", "closed."),
    (closed(status="answered"), f"Answered by docsign (an outside system): *{SHOWN_GOOD}*",
     "answered by `docsign` (an outside system): **{"),
    (closed(status="answered", sensitive=True),
     "Answered by docsign (an outside system). The answer is private.",
     "answered by `docsign` (an outside system)."),
    (closed(status="expired", answered_by=None, answer_value=None), "Expired: nobody answered",
     "expired with no answer."),
    (closed(status="withdrawn", answered_by=None, answer_value=None), "Withdrawn", "withdrawn."),
], ids=["open", "answered", "sensitive", "expired", "withdrawn"])
def test_slack_messages_and_github_comments_of_an_external_ask(
    ask: Any, line: str, on_github: str
) -> None:
    for message in (blocks.question_message(ask, "q7"), blocks.closed_message(ask, "q7")):
        assert block_problems(message.blocks) == []
        assert not [b for b in message.blocks if b["type"] == "actions"]
    text = shown({"blocks": blocks.closed_message(ask, "q7").blocks})
    comment = closed_comment(ask, "q7")
    assert line in text and on_github in comment.splitlines()[0]
    if ask.sensitive:
        assert "inv-42" not in text and "inv-42" not in comment


# -- GitHub -----------------------------------------------------------------------------------


async def test_github_shows_the_wait_refuses_an_answer_then_shows_the_payload(
    fake_github: FakeGitHub, start_aye: StartAye, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aye = await started(start_aye, database_url, monkeypatch, **app_env(fake_github))
    hub = Hub(aye, fake_github)
    ask, ticket = await external(aye, work=WORK)

    made = await fake_github.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)

    body = str(made.json_body["body"])
    assert ("Waits on `docsign`, an outside system; it answers through its signed door, so "
            "nobody answers this question here: an `/answer` is refused.") in body
    assert "first line is" not in body and "inv-42" not in body  # no how-to, no schema
    _, comment_id = await hub.say("/answer " + json.dumps(GOOD))
    assert (await hub.reaction(comment_id)).json_body == {"content": "confused"}
    assert await refused(aye, ask["ref"]) == [("github:octocat", "not_a_responder")]
    assert (await aye.get(ask["id"]))["status"] == "open"
    assert await post(aye, door_path(ask), GOOD) == (200, {"outcome": "taken"})
    edited = await fake_github.wait_for_call("PATCH", COMMENT)
    first = str(edited.json_body["body"]).splitlines()[0]
    assert first == (f"**Question** from an agent (ref `{ask['ref']}`): answered by `docsign` "
                     '(an outside system): **{"reference": "inv-42", "status": "signed", '
                     '"signer": "Ada"}**')
    assert ticket not in json.dumps([c.json_body for c in fake_github.calls], default=str)


# -- the web inbox ----------------------------------------------------------------------------


def keep_cookies(aye: Aye, resp: Any) -> None:
    """The inbox's cookies are Secure (AYE_PUBLIC_URL is https): kept for this plain-http
    test client as a browser keeps them for https."""
    for name, morsel in resp.cookies.items():
        aye.client.session.cookie_jar.update_cookies({name: morsel.value},
                                                     response_url=URL(aye.url))


async def sign_in(aye: Aye) -> Operator:
    resp = await aye.client.post("/login", data={"token": OPERATOR_TOKEN}, allow_redirects=False)
    assert resp.status == 303, await resp.text()
    keep_cookies(aye, resp)
    return Operator(aye)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "no csrf field on the page"
    return found.group(1)


async def test_the_inbox_shows_the_wait_and_the_ticket_state_with_no_controls(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    ask, ticket = await external(aye, context="Sent to Ada for signing.")
    ref = ask["ref"]
    operator = await sign_in(aye)

    for path in ("/inbox", f"/inbox/{ref}"):
        page = await operator.page(path)
        words = html.unescape(page)
        assert ("Waits on docsign, an outside system; it answers through its signed door, so "
                "nobody answers it here.") in words
        assert "Waiting: its door is open for the outside system's answer" in words
        assert "docsign (an outside system)" in words
        assert [f.action for f in Forms(page).forms if ref in f.action] == []
        assert ticket not in page
    # A made-up answer form is refused, in words, and the ask stays open.
    resp = await aye.client.post(f"/inbox/{ref}/answer", allow_redirects=False, data={
        "csrf": _csrf(page), "back": f"/inbox/{ref}", "answer": json.dumps(GOOD)})
    assert resp.status == 303
    keep_cookies(aye, resp)
    said = alert(await operator.page(resp.headers["Location"]))
    assert said == (f"{ref} Not answered: only docsign, an outside system, answers this ask, through "
                    "its signed door.")
    assert await refused(aye, ref) == [("operator:local", "not_a_responder")]
    assert await post(aye, door_path(ask), GOOD) == (200, {"outcome": "taken"})
    page = await operator.page(f"/inbox/{ref}")
    words = html.unescape(page)
    assert f"Answered by docsign (an outside system): {SHOWN_GOOD}" in words
    assert "Used: the outside system answered through it" in words
    assert "Waits on docsign" not in words and ticket not in page
