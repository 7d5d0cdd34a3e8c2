"""Answer formats on GitHub: `/answer` lines for a multi, a confirm, an ack and a form, end to
end (signed webhooks over HTTP, the real gidgethub against the fake GitHub, SQLite and
PostgreSQL), a misfit refused with its reason in the history, a refusal's note reaching the
agent; and the question comment saying how to answer each format, listing a form's fields and
the media inertly, within GitHub's comment limit."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from bot.config import Config
from core.domain import formats, rules
from handlers.github.guide import destination
from handlers.github.messages import COMMENT_BUDGET, closed_comment, question_comment
from handlers.github.parsing import parse_command
from tests import builders
from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_github_e2e import COMMENT, ISSUE_COMMENTS, WORK, Hub, app_env, config
from tests.e2e.test_github_shown import HOSTILE, outside_code_is_inert
from tests.fake_github import MAX_COMMENT_BODY, FakeGitHub

FORM = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "title": "Region", "enum": ["eu", "us"],
                   "description": "Where the nodes run."},
        "count": {"type": "integer", "title": "Nodes", "minimum": 1, "maximum": 10},
        "contact": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["gpu", "spot", "arm"]},
                 "minItems": 1, "maxItems": 2},
        "urgent": {"type": "boolean"},
    },
    "required": ["region", "count"],
}
COLOURS = ["red", "green", "blue"]
MEDIA_LINK = r"^(- (?:Image|Link): )\[(.*)\]\(https://[^\s()<>\\\"']+\) \("


@pytest.fixture
async def hub(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    return Hub(await start_aye(database_url, config=config(), env=app_env(fake_github)),
               fake_github)


@pytest.fixture
async def posting(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    aye = await start_aye(database_url, config=config(post_questions=True),
                          env=app_env(fake_github))
    return Hub(aye, fake_github)


async def taken(hub: Hub, body: str) -> None:
    _, comment_id = await hub.say(body)
    assert (await hub.reaction(comment_id)).json_body == {"content": "+1"}


async def confused(hub: Hub, body: str) -> None:
    _, comment_id = await hub.say(body)
    assert (await hub.reaction(comment_id)).json_body == {"content": "confused"}


# -- answers, end to end ---------------------------------------------------------------------


async def test_a_multi_takes_numbers_separated_by_commas(hub: Hub) -> None:
    ask = await hub.ask(question="Which colours?", options=COLOURS, format="multi", max=2)
    parked = asyncio.create_task(hub.aye.wait(ask["id"], timeout=10))

    await confused(hub, "/answer 1, 2, 3")  # three of at most two
    await taken(hub, "/answer 1, 3\nThe cheap ones.")

    woken = await asyncio.wait_for(parked, 10)
    assert woken["answer"] == {"value": ["red", "blue"], "option": None, "options": [1, 3],
                               "note": "The cheap ones."}
    refused = [e for e in await hub.history(ask["ref"]) if e["event"] == "refused"]
    assert [(e["why"], e["answer"], e["message"]) for e in refused] == [
        ("invalid_answer", "1, 2, 3", "must pick at most 2 options")
    ]


async def test_a_multi_with_its_ref_among_several_open_asks(hub: Hub) -> None:
    first = await hub.ask(question="Which colours?", options=COLOURS, format="multi")
    second = await hub.ask(question="Ship?", format="confirm")

    await taken(hub, f"/answer {first['ref']} green, 3")

    assert (await hub.aye.get(first["id"]))["answer"]["value"] == ["green", "blue"]
    assert (await hub.aye.get(second["id"]))["status"] == "open"
    await taken(hub, f"/answer {second['ref']} no")
    assert (await hub.aye.get(second["id"]))["answer"]["value"] is False


@pytest.mark.parametrize(("fmt", "said", "value"), [
    ("confirm", "/answer yes", True), ("confirm", "/answer N", False), ("ack", "/answer ok", True),
    ("ack", "/answer Continue", True),
])
async def test_a_confirm_and_an_ack(hub: Hub, fmt: str, said: str, value: bool) -> None:
    ask = await hub.ask(question="Go on?", format=fmt)

    await taken(hub, said)

    answer = (await hub.aye.wait(ask["id"]))["answer"]
    assert answer["value"] is value and answer["option"] is None


async def test_an_ack_refuses_no_and_stays_open(hub: Hub) -> None:
    ask = await hub.ask(question="Go on?", format="ack")

    await confused(hub, "/answer no")

    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    last = (await hub.history(ask["ref"]))[-1]
    assert (last["why"], last["field"], last["answer"]) == ("invalid_answer", "answer", "no")


async def test_a_form_misfit_is_refused_with_its_reason_then_a_good_one_is_taken(hub: Hub) -> None:
    ask = await hub.ask(question="How to run it?", format="form", schema=FORM)

    await confused(hub, '/answer {"region": "eu", "count": 30}')
    await confused(hub, "/answer region=eu count=3")
    await confused(hub, '/answer {"count": 3}')
    assert (await hub.aye.get(ask["id"]))["status"] == "open"
    await taken(hub, '/answer {"region": "eu", "count": 3, "tags": ["gpu"]}\nKeep it small.')

    history = await hub.history(ask["ref"])
    refused = [(e["why"], e["field"], e["message"]) for e in history if e["event"] == "refused"]
    assert refused == [
        ("invalid_answer", "answer.count", "Nodes must be at most 10"),
        ("invalid_answer", "answer", 'must be a JSON object like {"field": "value"}'),
        ("invalid_answer", "answer.region", "Region is required"),
    ]
    assert next(e["answer"] for e in history if e["event"] == "refused") == (
        '{"region": "eu", "count": 30}'
    )
    answer = (await hub.aye.wait(ask["id"]))["answer"]
    assert answer == {"value": {"region": "eu", "count": 3, "tags": ["gpu"]}, "option": None,
                      "note": "Keep it small."}


async def test_a_refusal_on_github_carries_its_note_to_the_agent(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    gates = Config.model_validate({"gates": [{
        "operations": ["deploy."], "responders": ["github:octocat"], "timeout": "1h"}]})
    hub = Hub(await start_aye(database_url, gates, env=app_env(fake_github)), fake_github)
    body = {"operation": "deploy.prod", "input": {"version": "1.4.2"}, "work": WORK}
    resp = await hub.aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    assert resp.status == 202
    ask = (await resp.json())["ask"]

    await taken(hub, "/answer refuse\nNot on a Friday.\n\nTry Monday.")

    seen = await hub.aye.wait(ask["id"])
    assert (seen["outcome"], seen["by"]) == ("approval_refused", "github:octocat")
    assert seen["answer"]["note"] == "Not on a Friday.\n\nTry Monday."


# -- the question comment, end to end --------------------------------------------------------


async def posted(hub: Hub) -> str:
    call = await hub.fake.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    return str(call.json_body["body"])


async def test_a_posted_form_lists_its_fields_and_media_and_closes_with_the_plain_answer(
    posting: Hub,
) -> None:
    hub = posting
    media = [{"kind": "image", "url": "https://cdn.example/plot(1).png", "caption": HOSTILE[:200]},
             {"kind": "link", "url": "https://docs.example/runbook"}]
    ask = await hub.ask(question="How to run it?", format="form", schema=FORM, media=media)

    body = await posted(hub)

    # aye's own links to the media aside (their targets are checked below), all is inert.
    outside_code_is_inert(re.sub(MEDIA_LINK, r"\1\2 (", body, flags=re.M))
    assert "- `region` Region (required): one of `eu`, `us`. Where the nodes run." in body
    assert "- `count` Nodes (required): a whole number from 1 to 10" in body
    assert "- `contact` (optional): an email address" in body
    assert "- `tags` (optional): a list of `gpu`, `spot`, `arm` (pick 1 to 2)" in body
    assert "- `urgent` (optional): `true` or `false`" in body
    assert "](https://cdn.example/plot%281%29.png) (cdn.example)" in body
    assert "- Link: [link](https://docs.example/runbook) (docs.example)" in body
    assert "![" not in body and "<img" not in body
    example = _example(body)
    assert formats.fit(builders.make_ask(format="form", options=None, form_schema=FORM),
                       parse_command(example).text).value == {  # type: ignore[union-attr]
        "region": "eu", "count": 1, "contact": "name@example.com", "tags": ["gpu"],
        "urgent": True}

    await taken(hub, '/answer {"region": "us", "count": 2, "urgent": false}')

    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    first = str(edited.json_body["body"]).splitlines()[0]
    assert first.endswith("answered by @octocat: **Region: us, Nodes: 2, urgent: no**")
    assert ask["ref"] in first


@pytest.mark.parametrize(("fmt", "extra", "words", "shown"), [
    ("multi", {"options": COLOURS, "min": 1, "max": 3},
     "`/answer 1, 3` (pick 1 to 3", "red, blue"),
    ("confirm", {}, "`/answer yes` or `/answer no`", "yes"),
    ("ack", {}, "`/answer ok` when the work may go on", "ok"),
])
async def test_a_posted_question_says_how_to_answer_its_format(
    posting: Hub, fmt: str, extra: dict[str, Any], words: str, shown: str
) -> None:
    hub = posting
    ask = await hub.ask(question="Well?", format=fmt, **extra)

    body = await posted(hub)
    assert words in body and f"`/answer {ask['ref']} …`" in body
    await taken(hub, _example(body))

    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    assert str(edited.json_body["body"]).splitlines()[0].endswith(
        f"answered by @octocat: **{shown}**")


async def test_the_largest_form_with_media_still_fits_one_comment(posting: Hub) -> None:
    hub = posting
    # DEL goes as one byte (JSON need not escape it), so the request is within 64 KiB.
    sent = json.dumps(worst_form(), ensure_ascii=False).encode()
    resp = await hub.aye.client.post("/v1/asks", data=sent, headers={
        **AGENT_HEADERS, "Content-Type": "application/json"})
    assert resp.status == 201, await resp.text()
    ask = await resp.json()

    body = await posted(hub)  # the fake refuses a body over GitHub's limit with a 422

    assert len(body) <= MAX_COMMENT_BODY and len(body.encode()) <= COMMENT_BUDGET
    assert f"**The question is cut here**: read it whole with `aye show {ask['ref']}`" in body
    assert "**The context is cut here**" in body
    assert body.count("too long to show here") == 15  # 10 fields and 5 media addresses
    assert 'answer with a comment whose first line is `/answer {"field"' in body


# -- pure ---------------------------------------------------------------------------------------


def _example(body: str) -> str:
    found = re.search(r"first line is (`+) ?(/answer .*?) ?\1", body)
    assert found is not None, body
    return found.group(2)


@pytest.mark.parametrize("row", [
    {"format": "multi", "options": COLOURS},
    {"format": "multi", "options": COLOURS, "pick_min": 3},
    {"format": "multi", "options": ["a", "b"], "pick_min": 2, "pick_max": 2},
    {"format": "multi", "options": COLOURS, "pick_max": 1},
    {"format": "confirm", "options": None},
    {"format": "ack", "options": None},
    {"format": "choice", "options": COLOURS},
    {"format": "text", "options": None},
    {"format": "form", "options": None, "form_schema": FORM},
    {"format": "form", "options": None, "form_schema": {
        "type": "object", "properties": {
            "n": {"type": "number", "minimum": -5.5, "maximum": -2},
            "code": {"type": "string", "minLength": 9, "maxLength": 9},
            "on": {"type": "string", "format": "date"}, "site": {"type": "string", "format": "uri"},
            "few": {"type": "array", "items": {"enum": ["x", "y", "z"]}, "minItems": 2}},
        "required": ["n", "code", "few"]}},
])
def test_the_example_in_every_comment_is_an_answer_that_fits(row: dict[str, Any]) -> None:
    ask = builders.make_ask(**row)
    command = parse_command(_example(question_comment(ask, "q7")))
    assert command is not None
    formats.fit(ask, command.text)  # no Misfit


def test_an_approval_says_approve_or_refuse() -> None:
    text = question_comment(builders.make_ask(kind=rules.APPROVAL, options=["approve", "refuse"]),
                            "a7")
    assert "`/answer approve` or `/answer refuse`" in text


@pytest.mark.parametrize(("url", "target"), [
    ("https://x.example/a b)<c>\"d'\\e", "https://x.example/a%20b%29%3Cc%3E%22d%27%5Ce"),
    ("https://x.example/é?q=1&r=[2]#f", "https://x.example/%C3%A9?q=1&r=%5B2%5D#f"),
    ("javascript:alert(1)", None),
    ("http://x.example/", None),
])
def test_a_media_link_cannot_end_early_or_leave_https(url: str, target: str | None) -> None:
    assert destination(url) == target


@pytest.mark.parametrize(("row", "line"), [
    ({"format": "multi", "options": COLOURS, "answer_value": '["red","blue"]'}, "**red, blue**"),
    ({"format": "confirm", "options": None, "answer_value": "false"}, "**no**"),
    ({"format": "ack", "options": None, "answer_value": "true"}, "**ok**"),
    ({"format": "form", "options": None, "form_schema": FORM,
      "answer_value": '{"region":"eu","count":3,"tags":["gpu","arm"]}'},
     "**Region: eu, Nodes: 3, tags: gpu, arm**"),
])
def test_the_closed_comment_shows_the_answer_as_people_read_it(row: dict[str, Any], line: str) -> None:
    ask = builders.make_ask(status="answered", answered_by="github:octocat", **row)
    assert closed_comment(ask, "q7").splitlines()[0].endswith(f"answered by @octocat: {line}")
    hidden = builders.make_ask(status="answered", answered_by="github:octocat", sensitive=True,
                               **row)
    first = closed_comment(hidden, "q7").splitlines()[0]
    assert first.endswith("answered by @octocat.") and str(row["answer_value"]) not in first


@pytest.mark.parametrize("char", ["\x7f", "\U000e0041", "<", "\u202e"])
def test_the_worst_form_fits_as_a_pure_comment_too(char: str) -> None:
    body = worst_form(char)
    ask = builders.make_ask(question=body["question"], context=body["context"], options=None,
                            format="form", form_schema=body["schema"], media=body["media"])
    text = question_comment(ask, "q7")
    assert len(text.encode()) <= COMMENT_BUDGET
    small = builders.make_ask(format="form", options=None, form_schema=FORM)
    assert "cut" not in question_comment(small, "q7")


def worst_form(char: str = "\x7f") -> dict[str, Any]:
    """An ask at every limit of the API, in characters that render at their largest: DEL is one
    byte in the request and the 6-byte escape `\\u007f` in the comment; `<` in a URL is `%3C`."""
    field = {"type": "string", "title": char * 75, "description": char * 300,
             "enum": [f"{i:02}{char * 73}" for i in range(20)]}
    schema = {"type": "object", "properties": {f"{i}{char * 63}": dict(field) for i in range(10)}}
    media = [{"kind": "image", "url": "https://x.example/" + "<" * 1980, "caption": char * 200}
             for _ in range(5)]
    return {"question": char * 3000, "context": char * 3000, "format": "form", "schema": schema,
            "media": media, "work": WORK}


def test_the_worst_forms_request_is_within_the_api_limits() -> None:
    assert len(json.dumps(worst_form(), ensure_ascii=False).encode()) < 64 * 1024
