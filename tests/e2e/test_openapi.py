"""`GET /v1/openapi.json`: a valid OpenAPI 3.1 document, generated from the request models, that
names every `/v1` route; and real responses of the running app, route by route and status by
status, match the document's schemas (which forbid keys they do not name, so a view cannot
drift from the document unseen)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import schemathesis
from jsonschema import Draft202012Validator, FormatChecker

from ask_api.openapi_parts import REF
from ask_api.schemas import AnswerBody, WaitBody, bodies
from ask_api.tokens import TokenBook
from bot.config import Config
from bot.surfaces import KINDS
from core.app.timing import ManualClock
from tests.conftest import OPERATOR_TOKEN, Aye, StartAye
from tests.e2e.test_policy import GitHubLike

AGENT, TIGHT, LONELY = "token-openapi", "token-tight", "token-lonely"
ISSUE = {"github": {"repo": "octo/app", "number": 7}}
HOOKS = "http://127.0.0.1:9/hooks/"  # a callback that is refused at once, off the test's path
CONFIG = {
    "defaults": {"responders": ["operator:local"], "question_remind_after": "2h"},
    "agents": [
        {"name": "fuzz", "token_env": "AYE_TOKEN_OA", "callback_secret_env": "AYE_SECRET_OA",
         "callback_urls": [HOOKS]},
        {"name": "tight", "token_env": "AYE_TOKEN_TIGHT", "max_open": 1, "asks_per_minute": 3},
        {"name": "lonely", "token_env": "AYE_TOKEN_LONELY", "responders": ["slack:U0123ABCD"]},
    ],
    "gates": [
        {"operations": ["deploy."], "timeout": "1h", "approvals": 2, "remind_after": "30m",
         "escalate": {"responders": ["operator:local", "github:bob"], "timeout": "30m"}},
        {"operations": ["db."]},
        {"operations": ["far."], "responders": ["slack:U0123ABCD"]},
        {"operations": ["ship."], "responders": ["github", "operator:local"],
         "prevent_self_approval": True},
        {"operations": ["theirs."], "responders": ["github"]},
        {"kinds": ["github."], "agents": ["fuzz"]},
        {"kinds": ["slack."], "responders": ["slack:U0123ABCD"]},
    ],
}


class Checked:
    """Requests to the app whose responses must match the document it serves."""

    def __init__(self, aye: Aye, document: dict[str, Any]) -> None:
        self.aye, self.document = aye, document

    async def __call__(self, method: str, route: str, status: int, token: str | None = AGENT,
                       raw: bytes | None = None, **kw: Any) -> Any:
        ident = kw.pop("id", None)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = await self.aye.client.request(
            method, route.format(id=ident, ticket=ident), headers=headers, data=raw, **kw)
        data = await resp.json()
        assert resp.status == status, data
        response = self.document["paths"][route][method.lower()]["responses"][str(status)]
        schema = response["content"]["application/json"]["schema"]
        matches(self.document, schema, data)
        for name, header in response.get("headers", {}).items():
            assert not header["required"] or name in resp.headers, name
        return data


def matches(document: dict[str, Any], schema: dict[str, Any], data: Any) -> None:
    """`data` is valid against `schema`, whose refs point into the document's components."""
    rooted = {**schema, "components": document["components"]}
    Draft202012Validator(rooted, format_checker=FormatChecker()).validate(data)


async def served(aye: Aye, token: str = AGENT) -> tuple[int, bytes]:
    resp = await aye.client.get("/v1/openapi.json", headers={"Authorization": f"Bearer {token}"})
    return resp.status, await resp.read()


@pytest.fixture
async def app(start_aye: StartAye, database_url: str, manual_clock: ManualClock,
              monkeypatch: pytest.MonkeyPatch) -> Aye:
    for name, value in (("AYE_TOKEN_OA", AGENT), ("AYE_SECRET_OA", "s3cret"),
                        ("AYE_TOKEN_TIGHT", TIGHT), ("AYE_TOKEN_LONELY", LONELY)):
        monkeypatch.setenv(name, value)
    config = Config.model_validate(CONFIG)
    aye = await start_aye(database_url, config, manual_clock,
                          tokens=TokenBook.build(config, OPERATOR_TOKEN, None))
    aye.asks.add_surface(GitHubLike(author=None))  # reaches `github` people; cannot read authors
    return aye


@pytest.fixture
async def api(app: Aye) -> Checked:
    status, raw = await served(app)
    assert status == 200
    return Checked(app, json.loads(raw))


# -- the document -------------------------------------------------------------------------------


async def test_the_document_is_valid_openapi_3_1(api: Checked) -> None:
    document = api.document
    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


async def test_every_v1_route_is_in_the_document_and_nothing_else(api: Checked) -> None:
    routed = {
        (route.resource.canonical, route.method.lower())
        for route in api.aye.app.router.routes()
        if route.resource is not None and route.resource.canonical.startswith("/v1/")
        and route.method != "HEAD"
    }
    documented = {(path, method) for path, item in api.document["paths"].items()
                  for method in item if method != "parameters"}
    assert documented == routed


async def test_request_schemas_are_the_models_that_validate_requests(api: Checked) -> None:
    schemas = api.document["components"]["schemas"]
    made = bodies(KINDS)
    for model in (made.ask, made.call, made.start, AnswerBody, WaitBody):
        own = model.model_json_schema(ref_template=REF)
        own.pop("$defs", None)
        assert schemas[model.__name__] == own


async def test_it_is_built_once_and_served_to_any_token(api: Checked) -> None:
    first = await served(api.aye)
    assert first == await served(api.aye) == await served(api.aye, OPERATOR_TOKEN)
    await api("GET", "/v1/openapi.json", 200, token=OPERATOR_TOKEN)
    await api("GET", "/v1/openapi.json", 401, token="nobody")


async def test_every_route_refuses_alike(api: Checked) -> None:
    """The errors every route shares: no token; and a body that is not JSON, too large, or
    not the model's."""
    for route, item in api.document["paths"].items():
        for method, spec in item.items():
            if method == "parameters":
                continue
            if spec.get("security") != []:  # GET /v1/keys is for anyone checking a receipt
                await api(method.upper(), route, 401, token=None, id="q1")
            if "requestBody" not in spec or spec.get("security") == []:
                continue  # an external ask's door checks its signature before its body
            token = OPERATOR_TOKEN if route.endswith("/answer") else AGENT
            for status, raw in ((400, b"[1"), (413, b"[" + b"0," * 40_000 + b"0]"),
                                (422, b'{"unknown": 1}')):
                await api(method.upper(), route, status, token=token, raw=raw, id="q1")
    calls, starts = ("/v1/calls", {"operation": "plain.op"}), ("/v1/starts", {"work": ISSUE})
    for route, body in (calls, calls, starts):  # `tight` may make 3 a minute
        await api("POST", route, 200, token=TIGHT, json=body)
    for route, body in (calls, starts):
        await api("POST", route, 429, token=TIGHT, json=body)


# -- real responses, route by route ---------------------------------------------------------------

OP = OPERATOR_TOKEN
ASK = {"question": "Ship it?", "options": ["yes", "no"], "key": "k1",
       "media": [{"kind": "image", "url": "https://example.com/a.png", "caption": "the graph"}],
       "callback_url": HOOKS + "one", "work": {"slack": {"channel": "C0123", "thread_ts": "1.2"}}}


async def test_asking_reading_and_withdrawing_match_the_document(api: Checked) -> None:
    ask = await api("POST", "/v1/asks", 201, json=ASK)
    await api("POST", "/v1/asks", 200, json=ASK)
    await api("POST", "/v1/asks", 409, json={**ASK, "question": "Ship it now?"})
    await api("POST", "/v1/asks", 400, raw=b"{not json")
    await api("POST", "/v1/asks", 413, raw=b"{" + b" " * 70_000 + b"}")
    await api("POST", "/v1/asks", 422, json={"question": ""})
    await api("POST", "/v1/asks", 422, token=LONELY, json={"question": "Anyone?"})
    await api("POST", "/v1/asks", 403, token=OP, json={"question": "Me?"})
    await api("POST", "/v1/asks", 401, token=None, json={"question": "Me?"})
    await api("POST", "/v1/asks", 201, token=TIGHT, json={"question": "One?"})
    await api("POST", "/v1/asks", 429, token=TIGHT, json={"question": "Two?"})
    for token in (AGENT, OP):
        page = await api("GET", "/v1/asks", 200, token=token, params={"limit": "1"})
        await api("GET", "/v1/asks", 200, token=token, params={"cursor": page["next_cursor"] or ""})
        await api("GET", "/v1/asks/{id}", 200, token=token, id=ask["ref"])
        await api("GET", "/v1/asks/{id}/wait", 200, token=token, id=ask["id"],
                  params={"timeout": "0"})
    await api("GET", "/v1/asks", 422, params={"limit": "0"})
    await api("GET", "/v1/asks/{id}", 404, id="q999")
    await api("GET", "/v1/asks/{id}/wait", 404, id="nope")
    await api("GET", "/v1/asks/{id}/wait", 422, id=ask["id"], params={"timeout": "1.5"})
    await api("POST", "/v1/asks/wait", 200, json={"ids": [ask["ref"]], "timeout": 0})
    await api("POST", "/v1/asks/wait", 200, token=OP, json={"ids": [ask["id"]], "timeout": 0})
    await api("POST", "/v1/asks/wait", 404, json={"ids": ["q999"], "timeout": 0})
    await api("POST", "/v1/asks/wait", 400, raw=b"[]")
    await api("POST", "/v1/asks/wait", 422, json={"ids": []})
    await api("DELETE", "/v1/asks/{id}", 200, id=ask["id"])
    await api("DELETE", "/v1/asks/{id}", 409, token=OP, id=ask["id"])
    await api("DELETE", "/v1/asks/{id}", 404, id="q999")
    await api("GET", "/v1/asks/{id}", 200, token=OP, id=ask["id"])


async def test_answers_in_every_format_match_the_document(
    api: Checked, manual_clock: ManualClock
) -> None:
    multi = await api("POST", "/v1/asks", 201, json={
        "question": "Which?", "options": ["a", "b", "c"], "format": "multi", "max": 2})
    form = await api("POST", "/v1/asks", 201, json={
        "question": "How many?", "format": "form", "schema": {
            "type": "object", "properties": {"count": {"type": "integer", "maximum": 10}}}})
    confirm = await api("POST", "/v1/asks", 201, json={"question": "Sure?", "format": "confirm"})
    secret = await api("POST", "/v1/asks", 201, json={"question": "Password?", "sensitive": True})
    late = await api("POST", "/v1/asks", 201, json={"question": "Later?", "timeout_s": 60})
    path = "/v1/asks/{id}/answer"
    await api("POST", path, 422, token=OP, id=multi["id"], json={"answer": "1, 2, 3"})
    await api("POST", path, 200, token=OP, id=multi["id"], json={"answer": "1, 3", "note": "both"})
    await api("POST", path, 409, token=OP, id=multi["id"], json={"answer": "1"})
    await api("POST", path, 422, token=OP, id=form["id"], json={"answer": {"count": 11}})
    await api("POST", path, 200, token=OP, id=form["id"], json={"answer": {"count": 3}})
    await api("POST", path, 200, token=OP, id=confirm["id"], json={"answer": "yes"})
    await api("POST", path, 200, token=OP, id=secret["id"], json={"answer": "hunter2"})
    await api("POST", path, 403, id=confirm["id"], json={"answer": "yes"})
    await api("POST", path, 404, token=OP, id="q999", json={"answer": "yes"})
    await api("POST", path, 400, token=OP, id=confirm["id"], raw=b"")
    await api("POST", path, 422, token=OP, id=confirm["id"], json={"answer": 1, "extra": 2})
    manual_clock.advance(61)
    await api.aye.tick()
    for ask in (multi, form, confirm, secret, secret, late):
        await api("GET", "/v1/asks/{id}", 200, id=ask["id"])  # the secret's second read: erased
        await api("GET", "/v1/asks/{id}", 200, token=OP, id=ask["id"])
    await api("GET", "/v1/asks", 200, token=OP)


async def test_gates_and_starts_match_the_document(api: Checked, manual_clock: ManualClock) -> None:
    call = "/v1/calls"
    await api("POST", call, 200, json={"operation": "plain.op"})
    await api("POST", call, 403, token=OP, json={"operation": "plain.op"})
    await api("POST", call, 403, json={"operation": "far.away"})
    await api("POST", call, 422, json={"operation": "no spaces"})
    quorum = (await api("POST", call, 202, json={"operation": "deploy.prod", "input": {"v": 1}}))
    answer = "/v1/asks/{id}/answer"
    await api("POST", answer, 200, token=OP, id=quorum["ask"]["id"], json={"answer": "approve"})
    await api("POST", answer, 409, token=OP, id=quorum["ask"]["id"], json={"answer": "approve"})
    once = {"operation": "db.migrate", "input": [1, "two"]}
    approval = await api("POST", call, 202, json=once)
    await api("POST", answer, 200, token=OP, id=approval["ask"]["id"], json={"answer": "approve"})
    await api("POST", call, 200, json=once)
    refused = await api("POST", call, 202, json={"operation": "db.drop"})
    await api("POST", answer, 200, token=OP, id=refused["ask"]["id"],
              json={"answer": "refuse", "note": "not today"})
    await api("POST", call, 403, json={"operation": "db.drop"})
    theirs = await api("POST", call, 202, json={"operation": "theirs.x", "work": ISSUE})
    await api("POST", answer, 403, token=OP, id=theirs["ask"]["id"], json={"answer": "approve"})
    ship = await api("POST", call, 202, json={"operation": "ship.it", "work": ISSUE})
    await api("POST", answer, 503, token=OP, id=ship["ask"]["id"], json={"answer": "approve"})
    start = "/v1/starts"
    await api("POST", start, 200, token=TIGHT, json={"work": ISSUE})
    await api("POST", start, 403, json={"work": {"slack": {"channel": "C0123", "thread_ts": "1.2"}}})
    await api("POST", start, 403, token=OP, json={"work": ISSUE})
    first = await api("POST", start, 202, json={"work": ISSUE, "title": "Fix it",
                                                 "links": ["https://example.com/7"]})
    await api("POST", answer, 200, token=OP, id=first["ask"]["id"], json={"answer": "refuse"})
    await api("POST", start, 403, json={"work": ISSUE})
    other = {"work": {"github": {"repo": "octo/app", "number": 8, "type": "pull"}}}
    await api("POST", start, 202, json=other)
    for _ in range(2):  # the quorum is reminded (at 30 min), then escalates (at 1 h)
        manual_clock.advance(1800 + 1)
        await api.aye.tick()
    await api("GET", "/v1/asks", 200, token=OP, params={"status": "open"})
    view = await api("GET", "/v1/asks/{id}", 200, token=OP, id=quorum["ask"]["id"])
    assert {"escalation", "approvals", "remind_at"} <= view.keys()
    assert {"approved", "reminded", "escalated"} <= {e["event"] for e in view["history"]}
    manual_clock.advance(2 * 24 * 3600)
    await api.aye.tick()
    await api("POST", start, 403, json=other)
    await api("GET", "/v1/asks", 200, token=OP)
    await api("GET", "/v1/asks", 200)


async def test_the_event_stream_matches_the_document(api: Checked) -> None:
    ask = await api("POST", "/v1/asks", 201, json={"question": "Streamed?", "sensitive": True})
    await api("POST", "/v1/asks/{id}/answer", 200, token=OP, id=ask["id"], json={"answer": "x"})
    last = await api("POST", "/v1/asks", 201, json={"question": "The last one"})
    response = api.document["paths"]["/v1/events"]["get"]["responses"]["200"]
    event = response["content"]["text/event-stream"]["schema"]
    for token in (AGENT, OP):
        frames = await asyncio.wait_for(stream(api.aye, token, last["id"]), 5)
        assert [f["event"] for f in frames] == ["ask.created", "ask.answered", "ask.created"]
        for frame in frames:
            matches(api.document, event, frame)
            matches(api.document, event["properties"]["data"]["contentSchema"],
                    json.loads(frame["data"]))


async def stream(aye: Aye, token: str, until: str) -> list[dict[str, str]]:
    """The stream's events from the first, up to the one whose ask is `until`."""
    headers = {"Authorization": f"Bearer {token}", "Last-Event-ID": "0"}
    frames: list[dict[str, str]] = []
    async with aye.client.get("/v1/events", headers=headers) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        while True:
            block = (await resp.content.readuntil(b"\n\n")).decode().strip()
            fields = dict(line.split(": ", 1) for line in block.splitlines()
                          if not line.startswith(":"))
            if "data" not in fields:
                continue
            frames.append(fields)
            if json.loads(fields["data"])["id"] == until:
                return frames
