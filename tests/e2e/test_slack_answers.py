"""Answer formats in Slack end to end: the real aye (its HTTP API, store and outbox) and the
real slack-bolt/slack-sdk against the fake Slack on 127.0.0.1, which refuses blocks and views
as Slack does. Buttons are pressed and modals submitted over Socket Mode; what the agent reads
is checked over the HTTP API, JSON types included.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conftest import AGENT_HEADERS, Aye, StartAye
from tests.e2e.test_slack_surface import (
    DEFAULT_CHANNEL,
    GATED,
    RESPONDER,
    labels,
    ok,
    posted,
    press,
    shown,
    start,
    told,
)
from tests.fake_slack import FakeSlack, SlackCall

FORM = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
        "nodes": {"type": "integer", "minimum": 1, "maximum": 9, "title": "Nodes"},
        "ha": {"type": "boolean", "title": "High availability"},
        "note": {"type": "string", "title": "Note"},
    },
    "required": ["region", "nodes"],
}
SLACK_CALLS = ("chat.postMessage", "chat.update", "chat.postEphemeral", "views.open")


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/aye.db"


async def ask_and_post(aye: Aye, fake: FakeSlack, **body: Any) -> tuple[dict[str, Any], SlackCall]:
    after = len(fake.calls)
    ask = await aye.ask(**body)
    return ask, await posted(fake, after=after)


async def open_modal(fake: FakeSlack, call: SlackCall, label: str = "Answer") -> dict[str, Any]:
    """Press `label` on the posted question and return the modal it opened."""
    after = len(fake.calls)
    await press(fake, RESPONDER, call, label)
    opened = await fake.wait_for_call("views.open", ok, after=after)
    view: dict[str, Any] = opened.args["view"]
    return view


def chosen(view: dict[str, Any], block: str, *texts: str) -> dict[str, Any]:
    """The state Slack sends for the options labelled `texts` picked in `block`'s element."""
    element = next(b["element"] for b in view["blocks"] if b.get("block_id") == block)
    options = [o for o in element["options"] if o["text"]["text"] in texts]
    assert len(options) == len(texts), f"no option among {texts} in {block}"
    if element["type"] == "static_select":
        return {"type": "static_select", "selected_option": options[0]}
    return {"type": element["type"], "selected_options": options}


def errors_of(ack: dict[str, Any]) -> dict[str, str] | None:
    payload = ack.get("payload") or {}
    return payload.get("errors") if payload.get("response_action") == "errors" else None


async def refusals(aye: Aye, ref: str) -> list[dict[str, Any]]:
    history = (await aye.get(ref, operator=True))["history"]
    return [e for e in history if e["event"] in ("refused", "late", "answered")]


def all_accepted(fake: FakeSlack) -> None:
    refused = [(c.method, c.response) for c in fake.calls if c.method in SLACK_CALLS and not c.ok]
    assert refused == []


# -- buttons ------------------------------------------------------------------------------------


async def test_confirm_yes_answers_true(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask, call = await ask_and_post(aye, fake_slack, question="Rotate the keys?", format="confirm")
    parked = asyncio.create_task(aye.wait(ask["id"], timeout=10))

    assert labels(call.args) == ["Yes", "No"]
    ack = await press(fake_slack, RESPONDER, call, "Yes")

    assert "payload" not in ack
    got = await parked
    assert got["answer"] == {"value": True, "option": None, "note": None}
    reply = await told(fake_slack, RESPONDER)
    assert reply.args["text"] == f"Thanks: your answer to `{ask['ref']}` was taken: *yes*"
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert f"Answered by <@{RESPONDER}>: *yes*" in shown(update.args)
    assert labels(update.args) == []
    all_accepted(fake_slack)


async def test_ack_continue_answers_true_and_shows_ok(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)
    ask, call = await ask_and_post(aye, fake_slack, question="Tell me when the disk is in.",
                                   format="ack")

    assert labels(call.args) == ["Continue"]
    await press(fake_slack, RESPONDER, call, "Continue")

    assert (await aye.wait(ask["id"]))["answer"]["value"] is True
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert f"Answered by <@{RESPONDER}>: *ok*" in shown(update.args)
    assert "true" not in shown(update.args)


# -- modals -------------------------------------------------------------------------------------


async def test_a_multi_takes_the_checked_options_in_their_order(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask, call = await ask_and_post(aye, fake_slack, question="Which caches to flush?",
                                   format="multi", options=["web", "cache", "db", "queue"], max=3)

    view = await open_modal(fake_slack, call)
    too_many = await fake_slack.submit_view(
        RESPONDER, {"answer": {"picks": chosen(view, "answer", "web", "cache", "db", "queue")}})
    taken = await fake_slack.submit_view(
        RESPONDER, {"answer": {"picks": chosen(view, "answer", "queue", "web", "cache")}})

    [field] = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["element"]["type"] == "checkboxes"
    assert field["label"]["text"] == "Pick 1 to 3"
    assert errors_of(too_many) == {"answer": "must pick at most 3 options"}
    assert errors_of(taken) is None
    got = await aye.wait(ask["id"])
    assert got["answer"] == {"value": ["web", "cache", "queue"], "option": None, "note": None,
                             "options": [1, 2, 4]}
    assert [e["event"] for e in await refusals(aye, ask["ref"])] == ["answered"]
    reply = await told(fake_slack, RESPONDER)
    assert reply.args["text"].endswith("was taken: *web, cache, queue*")
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert "*web, cache, queue*" in shown(update.args)
    all_accepted(fake_slack)


async def test_a_form_refuses_a_bad_number_under_its_field_then_takes_typed_values(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack)
    ask, call = await ask_and_post(aye, fake_slack, question="Where and how big?", format="form",
                                   schema=FORM)

    view = await open_modal(fake_slack, call)
    region = chosen(view, "region", "eu")
    bad = await fake_slack.submit_view(RESPONDER, {
        "region": {"field": region},
        "nodes": {"field": {"type": "number_input", "value": "12"}},
    })
    assert errors_of(bad) == {"nodes": "must be at most 9"}
    assert (await aye.get(ask["id"]))["status"] == "open"
    assert await refusals(aye, ask["ref"]) == []  # nothing recorded for a form that did not fit

    good = await fake_slack.submit_view(RESPONDER, {
        "region": {"field": region},
        "nodes": {"field": {"type": "number_input", "value": "3"}},
        "ha": {"field": chosen(view, "ha", "Yes")},
        "note": {"field": {"type": "plain_text_input", "value": None}},
    })

    assert errors_of(good) is None
    await aye.wait(ask["id"])
    # What the agent reads, over the HTTP API: JSON types, not Slack's strings.
    resp = await aye.client.get(f"/v1/asks/{ask['id']}", headers=AGENT_HEADERS)
    value = (await resp.json())["answer"]["value"]
    assert value == {"region": "eu", "nodes": 3, "ha": True}
    assert type(value["nodes"]) is int and type(value["ha"]) is bool
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert "*Region: eu, Nodes: 3, High availability: yes*" in shown(update.args)
    all_accepted(fake_slack)


async def test_a_modal_on_an_answered_ask_says_so_in_the_modal(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)
    ask, call = await ask_and_post(aye, fake_slack, question="Release name?")
    await open_modal(fake_slack, call)
    status, _ = await aye.answer(ask["ref"], "Aurora")
    assert status == 200

    ack = await fake_slack.submit_view(RESPONDER, {"answer": {"text": "Borealis"}})

    assert errors_of(ack) == {"answer": "Not taken: it was already answered."}
    assert (await aye.get(ask["id"]))["answer"]["value"] == "Aurora"
    assert fake_slack.calls_to("chat.postEphemeral") == []  # said in the modal, not after it


async def test_refuse_opens_a_modal_whose_reason_the_agent_reads_as_the_note(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=GATED)
    resp = await aye.client.post("/v1/calls", json={"operation": "deploy.prod", "input": {"v": 2}},
                                 headers=AGENT_HEADERS)
    assert resp.status == 202
    ask = (await resp.json())["ask"]
    call = await posted(fake_slack)

    view = await open_modal(fake_slack, call, "Refuse")
    assert (await aye.get(ask["id"]))["status"] == "open"  # nothing decided by the press
    ack = await fake_slack.submit_view(RESPONDER, {"reason": {"text": "  not during the freeze \n"}})

    assert errors_of(ack) is None
    assert [b["block_id"] for b in view["blocks"] if b["type"] == "input"] == ["reason"]
    got = await aye.wait(ask["id"])
    assert got["answer"] == {"value": "refuse", "option": 2, "note": "not during the freeze"}
    reply = await told(fake_slack, RESPONDER)
    assert reply.args["text"] == f"You refused `deploy.prod` (`{ask['ref']}`)."
    update = await fake_slack.wait_for_call("chat.update", ok)
    assert f"Refused by <@{RESPONDER}>.\n>not during the freeze" in shown(update.args)
    all_accepted(fake_slack)


# -- pictures -----------------------------------------------------------------------------------


PICTURE = {"kind": "image", "url": "https://example.com/graph.png", "caption": "p99 latency"}
LINK = {"kind": "link", "url": "https://example.com/runbook", "caption": "the runbook"}


async def test_a_picture_is_shown_beside_the_question(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    aye = await start(start_aye, sqlite_url, fake_slack)

    await ask_and_post(aye, fake_slack, question="Roll back?", format="confirm",
                       media=[PICTURE, LINK])

    [message] = fake_slack.messages(DEFAULT_CHANNEL)
    [image] = [b for b in message["blocks"] if b["type"] == "image"]
    assert (image["image_url"], image["alt_text"]) == (PICTURE["url"], "p99 latency")
    assert "<https://example.com/runbook|the runbook>" in shown(message)


async def test_a_picture_slack_cannot_fetch_is_shown_as_a_link_and_posted_once(
    fake_slack: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    fake_slack.broken_images.add(PICTURE["url"])
    aye = await start(start_aye, sqlite_url, fake_slack)

    ask, call = await ask_and_post(aye, fake_slack, question="Roll back?", format="confirm",
                                   media=[PICTURE, LINK])
    await press(fake_slack, RESPONDER, call, "No")
    await aye.wait(ask["id"])
    update = await fake_slack.wait_for_call("chat.update", ok)

    refused = [c for c in fake_slack.calls_to("chat.postMessage") if not c.ok]
    assert [c.response["error"] for c in refused] == ["invalid_blocks"]
    [message] = fake_slack.messages(DEFAULT_CHANNEL)  # posted once
    for blocks in (message["blocks"], update.args["blocks"]):
        assert [b for b in blocks if b["type"] == "image"] == []
        assert "<https://example.com/graph.png|p99 latency>" in shown({"blocks": blocks})
    assert labels(update.args) == []
