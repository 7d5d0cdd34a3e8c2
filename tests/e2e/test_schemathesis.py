"""Schemathesis against a live `aye serve`, on SQLite and on PostgreSQL.

Requests are generated from the OpenAPI document the server itself serves: its examples,
boundary and invalid values of every field, random data, then chains of calls that follow the
document's links (an ask made, then read, waited on, answered, withdrawn). Each response must
be no 5xx, have a documented status, content type, headers and body, be a 4xx for data the
document calls invalid, and come within REQUEST_TIMEOUT_S (a hang fails).

This is schemathesis' engine (what `st run` runs), driven from a test: its pytest loader for a
fixture (`schemathesis.pytest.from_fixture`) reads `node._nodeid`, which pytest 9.2 removed.

Bounded: about a thousand requests per store, most of them schemathesis' boundary cases of each
field (`max-examples` small for the random ones, fewer still where a request parks; no
shrinking: a failure is reported as found); about 20 s per store. The long polls would park
for up to `timeout` seconds (the document allows 300), or 30 without one: `park_briefly` cuts
every valid `timeout` above WAIT_S (and an absent one) to WAIT_S just before the request goes
out, so one run cannot take minutes (a `timeout` the document calls invalid is sent as
generated). The event stream never ends: it is read for
STREAM_S, and the events read are checked against the document.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from schemathesis.engine import StopReason, events

from ask_api.openapi import document
from ask_api.schemas import bodies
from bot.surfaces import PLUGINS, register
from tests.conftest import postgres_url
from tests.e2e.test_process import AGENT, OP, Server, start_server, stop

WAIT_S = 1  # the longest a generated long poll parks
STREAM_S = 0.5  # how long the event stream is read
FEW = {"max-examples": 4}  # random cases of the operations that park (most of their time)
REQUEST_TIMEOUT_S = 5  # no response for this long is a hang
DEFAULT_WAIT_S = 30  # what a long poll parks without a `timeout`
LONG_POLLS = {("GET", "/v1/asks/{id}/wait"): "query", ("POST", "/v1/asks/wait"): "body"}
# What the live server runs with: limits out of the way, so that asks, calls and starts reach
# their logic rather than 429; a gate on `deploy.` operations and on GitHub starts, so that
# calls and starts can be pending (202) and their approvals answered.
AYE_TOML = """
[defaults]
responders = ["operator:local"]

[[agents]]
name = "fuzz"
token_env = "AYE_AGENT_TOKEN"
max_open = 1000000
asks_per_minute = 1000000

[[gates]]
operations = ["deploy."]

[[gates]]
kinds = ["github."]
"""
ON = {"enabled": True}
CONFIG: dict[str, Any] = {
    "headers": {"Authorization": f"Bearer {AGENT}"},
    "request-timeout": REQUEST_TIMEOUT_S,
    "generation": {"max-examples": 12, "no-shrink": True, "database": "none"},
    "phases": {"stateful": {"max-steps": 8}},
    "checks": {
        # What the document promises, and nothing else. Off: positive_data_acceptance (a schema
        # cannot say every rule: a blank question, a deadline in the past, an unknown cursor
        # are 422, as documented); use_after_free and ensure_resource_availability (a withdrawn
        # ask stays readable, by design); unsupported_method (405s are not in the document).
        "enabled": False, "not_a_server_error": ON, "status_code_conformance": ON,
        "content_type_conformance": ON, "response_headers_conformance": ON,
        "response_schema_conformance": ON, "negative_data_rejection": ON, "ignored_auth": ON,
    },
    "operations": [
        {"include-path": "/v1/asks/{id}/answer", "headers": {"Authorization": f"Bearer {OP}"}},
        {"include-path": "/v1/events", "request-timeout": STREAM_S, "generation": FEW},
        {"include-path-regex": "/wait$", "generation": FEW},
    ],
}


def park_briefly(context: schemathesis.HookContext, case: schemathesis.Case[Any], kwargs: Any) -> None:
    """Cut a long poll's valid `timeout` (absent: the server's 30 s) above WAIT_S to WAIT_S."""
    where = LONG_POLLS.get((case.method.upper(), case.path))
    if where == "query" and case.query is None:
        case.query = {}
    params = case.query if where == "query" else case.body if where == "body" else None
    if not isinstance(params, dict):
        return
    value = params.get("timeout", DEFAULT_WAIT_S)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number: Any = int(value)
    else:
        number = None if isinstance(value, bool) else value
    if isinstance(number, int) and WAIT_S < number <= 300:
        params["timeout"] = str(WAIT_S) if isinstance(value, str) else WAIT_S


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         pg_session_url: str | None) -> Iterator[Server]:
    """A real `aye serve` on each store."""
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp}/aye.db"
    else:
        url = asyncio.run(postgres_url(pg_session_url))
    (tmp / "aye.toml").write_text(AYE_TOML)
    server = asyncio.run(start_server(tmp, url))
    yield server
    stop(server)


@pytest.fixture
def long_polls_cut() -> Iterator[None]:
    """`park_briefly` before every request schemathesis sends (a global hook: for this test)."""
    schemathesis.hook("before_call")(park_briefly)
    yield
    schemathesis.hooks.unregister(park_briefly)


def reported(recorder: Any) -> Iterator[str]:
    """Each failed check of a scenario: what failed, and the requests that show it."""
    for checks in recorder.checks.values():
        for check in checks:
            info = check.failure_info
            if info is None:
                continue
            steps = "\n".join(step.curl for step in info.steps) or info.code_sample
            yield f"{check.name}: {info.failure.title}\n{info.failure.message}\n{steps}"


def run(schema: Any) -> tuple[int, list[str], StopReason | None]:
    """The engine's run: requests sent, what failed, and why it stopped."""
    sent, problems, stopped = 0, list[str](), None
    for event in schemathesis.engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            sent += len(event.recorder.interactions)
            problems.extend(reported(event.recorder))
        elif isinstance(event, events.NonFatalError | events.FatalError):
            problems.append(f"{getattr(event, 'label', 'the run')}: {getattr(event, 'value', event)}")
        elif isinstance(event, events.EngineFinished):
            stopped = event.stop_reason
            problems.extend(f"{f.title}: {f.message}" for f in event.failures)
    return sent, problems, stopped


@pytest.mark.usefixtures("long_polls_cut")
def test_the_live_api_holds_to_its_document(live: Server) -> None:
    config = schemathesis.Config.from_dict(CONFIG)
    schema = schemathesis.openapi.from_url(
        f"{live.url}/v1/openapi.json", config=config, headers={"Authorization": f"Bearer {AGENT}"}
    )
    began = time.monotonic()
    sent, problems, stopped = run(schema)
    took = time.monotonic() - began
    print(f"schemathesis: {sent} requests in {took:.1f}s, seed {config.seed}")
    assert not problems, "\n\n".join([f"seed {config.seed}", *problems])
    assert stopped == StopReason.COMPLETED, f"stopped: {stopped} after {took:.0f}s"
    assert sent >= 200, sent  # it did test: a few hundred requests
    assert "Traceback" not in live.output(), live.output()


def test_park_briefly_cuts_only_valid_long_timeouts() -> None:
    schema = schemathesis.openapi.from_dict(document(bodies(register(PLUGINS))))
    one, many = schema["/v1/asks/{id}/wait"]["GET"], schema["/v1/asks/wait"]["POST"]
    cases = [
        one.Case(path_parameters={"id": "q1"}, query={"timeout": 300}),
        one.Case(path_parameters={"id": "q1"}, query={"timeout": "301"}),
        one.Case(path_parameters={"id": "q1"}, query={"timeout": "x"}),
        one.Case(path_parameters={"id": "q1"}),  # the server's 30 s
        many.Case(body={"ids": ["q1"], "timeout": 0}),
        many.Case(body={"ids": ["q1"], "timeout": True}),
        many.Case(body={"ids": ["q1"]}),
        many.Case(body=[1]),
        schema["/v1/asks"]["POST"].Case(body={"question": "q?"}),
    ]
    for case in cases:
        park_briefly(None, case, {})  # type: ignore[arg-type]
    assert [case.query for case in cases[:4]] == [
        {"timeout": WAIT_S}, {"timeout": "301"}, {"timeout": "x"}, {"timeout": WAIT_S}]
    assert [case.body for case in cases[4:]] == [
        {"ids": ["q1"], "timeout": 0}, {"ids": ["q1"], "timeout": True},
        {"ids": ["q1"], "timeout": WAIT_S}, [1], {"question": "q?"}]
