"""Every JSON body aye reads is UTF-8 without a byte-order mark: UTF-16 and UTF-32 (with and
without their marks) and UTF-8 with a BOM are 400 `malformed_body` on the API, at an external
ask's door and on the GitHub webhook (signed, and naming its charset), and nothing is created
or answered; on both stores."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest

from bot.config import Config
from tests.conftest import OPERATOR_HEADERS, Aye, StartAye
from tests.e2e.test_external import DOCSIGN, GOOD, door_path, external, post, started
from tests.e2e.test_github_e2e import NUMBER, REPO, SECRET, Hub, hub, reactions_on
from tests.fake_github import HOOKSHOT_USER_AGENT, issue_comment_event, sign

__all__ = ["hub"]  # a fixture, used by name below

# Python's codec names; "utf-16" and "utf-32" write their byte-order mark, the -le/-be ones none.
ENCODINGS = ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "utf-8-sig")
MARKED = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}


def encoded(value: Any, encoding: str, mark: bytes = b"") -> bytes:
    return mark + json.dumps(value, ensure_ascii=False).encode(encoding)


def variants(value: Any) -> list[tuple[str, bytes]]:
    """The body in every encoding aye refuses, each named, the marks added by hand included."""
    out = [(name, encoded(value, name)) for name in ENCODINGS]
    out += [(f"{name}+bom", encoded(value, name, mark)) for name, mark in MARKED.items()]
    return out


def test_every_variant_is_decodable_json() -> None:
    # What is refused is the encoding, not the JSON: Python itself would read each of these.
    for name, raw in variants({"question": "Ship it? ✓"}):
        assert json.loads(raw) == {"question": "Ship it? ✓"}, name


GATED = Config.model_validate({
    "defaults": {"responders": ["operator:local"]},
    "gates": [{"operations": ["deploy."], "responders": ["operator:local"]}],
})


async def open_asks(aye: Aye) -> list[dict[str, Any]]:
    resp = await aye.client.get("/v1/asks", headers=OPERATOR_HEADERS)
    assert resp.status == 200
    return list((await resp.json())["asks"])


async def refused(aye: Aye, path: str, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
    resp = await aye.client.post(path, data=raw, headers={
        **headers, "Content-Type": "application/json"})
    body = await resp.json()
    assert resp.status == 400, body
    assert body["error"] == "malformed_body" and "UTF-8" in body["message"], body
    return dict(body)


async def test_the_api_refuses_other_encodings_and_creates_nothing(
    start_aye: StartAye, database_url: str
) -> None:
    aye = await start_aye(database_url, GATED)
    for name, raw in variants({"question": "Ship it? ✓", "options": ["yes", "no"]}):
        body = await refused(aye, "/v1/asks", raw, aye.headers)
        assert "field" not in body, name
    for _, raw in variants({"operation": "deploy.prod", "input": {"v": "1.4.2"}}):
        await refused(aye, "/v1/calls", raw, aye.headers)
    for _, raw in variants({"work": {"github": {"repo": "octo/app", "number": 7}}}):
        await refused(aye, "/v1/starts", raw, aye.headers)
    assert await open_asks(aye) == []  # no question, and no approval pending for the call
    # The same bodies in UTF-8 are taken: it was the encoding, nothing else.
    asked = await aye.ask(question="Ship it? ✓", options=["yes", "no"])
    for _, raw in variants({"answer": "yes"}):
        await refused(aye, f"/v1/asks/{asked['id']}/answer", raw, OPERATOR_HEADERS)
    for _, raw in variants({"ids": [asked["id"]], "timeout": 0}):
        await refused(aye, "/v1/asks/wait", raw, aye.headers)
    assert (await aye.get(asked["id"], operator=True))["status"] == "open"
    assert await aye.answer(asked["id"], "yes") == (200, {"outcome": "taken", "ref": asked["ref"]})


async def test_the_external_door_refuses_other_encodings_and_the_ticket_stays_usable(
    start_aye: StartAye, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aye = await started(start_aye, database_url, monkeypatch)
    ask = await external(aye)
    for name, raw in variants(GOOD):
        status, body = await post(aye, door_path(ask), None, raw=raw)
        assert (status, body["error"]) == (400, "malformed_body"), (name, body)
        assert "UTF-8" in body["message"]
    view = await aye.get(ask["id"], operator=True)
    assert view["status"] == "open" and view["ticket"] == "waiting"
    refusals = [e for e in view["history"] if e["event"] == "refused"]
    assert len(refusals) == len(variants(GOOD))  # recorded, as any payload that does not fit
    # Unsigned, the encoding is not even looked at: the signature comes first.
    status, body = await post(aye, door_path(ask), None, verifier=None, raw=encoded(GOOD, "utf-16"))
    assert (status, body["error"]) == (401, "bad_signature")
    assert await post(aye, door_path(ask), GOOD, verifier=DOCSIGN) == (200, {"outcome": "taken"})


async def test_a_signed_webhook_in_another_encoding_is_400_and_answers_nothing(hub: Hub) -> None:
    ask = await hub.ask(question="Which plan?", options=["a", "b"])
    url = str(hub.aye.client.make_url("/github/webhook"))
    for number, (name, raw) in enumerate(variants(issue_comment_event(
            body="/answer 2", login="octocat", repo=REPO, number=NUMBER, comment_id=9000))):
        # The charset names the encoding truly: gidgethub would decode it by that name.
        charset = name.removesuffix("+bom")
        headers = {
            "Content-Type": f"application/json; charset={charset}",
            "User-Agent": HOOKSHOT_USER_AGENT, "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": f"d-{number}", "X-Hub-Signature-256": sign(raw, SECRET),
        }
        async with hub.aye.client.session.post(url, data=raw, headers=headers) as resp:
            body = await resp.json()
            assert resp.status == 400, (name, body)
            assert body["error"] == "malformed_body", (name, body)
    view = await hub.aye.get(ask["ref"], operator=True)
    assert view["status"] == "open" and reactions_on(hub.fake, 9000) == []
    # The same comment in UTF-8 answers.
    reply, _ = await hub.say("/answer 2")
    assert reply.status == 200
    assert (await hub.aye.get(ask["ref"], operator=True))["status"] == "answered"
