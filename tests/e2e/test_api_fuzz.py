"""Property-based tests: arbitrary JSON-ish bodies and query strings, sent over HTTP to the real
app on SQLite and PostgreSQL, never get a 5xx, and every 4xx is the API's error shape.

Bodies are written by hand (`dump`), so they can hold what json.dumps will not write: numbers
like 1e400 or 5,000 digits, and nesting 1,000 deep. Strings mix any code point with NUL, lone
surrogates, Unicode digits and the like. Each test reuses one app over its examples (hence the
function-scoped-fixture health check is off), and the example count is bounded so that the
file stays well under a minute on two cores.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import ClientResponse
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from yarl import URL

from ask_api.tokens import TokenBook
from bot.config import Config
from core.domain.types import AgentInfo
from tests.conftest import AGENT_HEADERS, AGENT_TOKEN, OPERATOR_HEADERS, OPERATOR_TOKEN, Aye, StartAye

# AYE_FUZZ_EXAMPLES=2000 for a longer hunt; the default keeps the file well under a minute.
FUZZ = settings(
    max_examples=int(os.environ.get("AYE_FUZZ_EXAMPLES", "150")),
    deadline=None, database=None, print_blob=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
    ],
)
GATED = {"gates": [{"operations": ["deploy."], "timeout": "1h"}]}


@dataclass(frozen=True, slots=True)
class Raw:
    """JSON text put in a body as it is."""

    text: str


def dump(value: Any, escape: bool = True) -> str:
    """JSON text: NaN and Infinity as such, and with `escape` every character past ASCII as a
    `\\u` escape (a lone surrogate too); without, as itself (a lone surrogate is then bytes
    that are not UTF-8)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        items = (f"{json.dumps(k, ensure_ascii=escape)}:{dump(v, escape)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v, escape) for v in value) + "]"
    return json.dumps(value, ensure_ascii=escape)


def nest(depth: int, objects: bool) -> Raw:
    if objects:
        return Raw('{"a":' * depth + "1" + "}" * depth)
    return Raw("[" * depth + "]" * depth)


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, about as often as its weight says (one_of gives each the same
    share, and folds repeated ones into one)."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(range(len(table))).flatmap(lambda index: table[index])


ODD = ["\x00", "\ud800", "\udbff", "\udc80", "\udfff", "²", "١", "٣", "\u202e", "\ufeff",
       "\U0001f4a5", "İ", "ß", "\u3000", "\x7f", "\\", '"', "%", "\t", "\n", " "]
plain_texts = st.text(max_size=30)  # any code point but a surrogate
odd_texts = st.builds(  # at least one odd character: NUL, a lone surrogate, a Unicode digit…
    lambda head, odd, tail: head + odd + tail, plain_texts, st.sampled_from(ODD), plain_texts
)
texts = weighted((3, plain_texts), (1, odd_texts))
RAW_NUMBERS = [
    "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "9" * 30, "-" + "9" * 400, "9" * 4301,
    "-0", "1E+999999999", "1e-400", "0.1e1", "123456789012345678901234567890.5",
]
raw_numbers = st.sampled_from(range(len(RAW_NUMBERS))).map(lambda index: Raw(RAW_NUMBERS[index]))
deep = st.builds(nest, st.integers(60, 1200), st.booleans())
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), texts, raw_numbers
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=12,
)

anything = weighted((6, json_values), (1, deep))


def maybe(specific: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a value of the field's own kind, sometimes anything at all."""
    return weighted((4, specific), (1, anything))


def _iso(seconds: int, minutes: int) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.astimezone(timezone(timedelta(minutes=minutes))).isoformat()


offsets = st.integers(-23 * 60, 23 * 60)
future = st.builds(_iso, st.integers(120, 3 * 10**7), offsets)
deadlines = st.one_of(
    st.builds(_iso, st.integers(-(10**5), 4 * 10**7), offsets),
    st.sampled_from(["2099-01-01", "2099-01-01T00:00:00", "0001-01-01T00:00:00+01:00",
                     "9999-12-31T23:59:59-14:00", "now"]),
    texts,
)


def work(wild: bool) -> st.SearchStrategy[Any]:
    """`work`: a Slack thread or a GitHub issue, valid unless `wild` (then `\\d` is any digit)."""
    field = maybe if wild else same
    digit = r"\d" if wild else "[0-9]"
    slack = st.fixed_dictionaries({
        "channel": field(st.from_regex(r"[CGD][A-Z0-9]{2,30}", fullmatch=True)),
        "thread_ts": field(st.from_regex(rf"{digit}{{1,12}}\.{digit}{{1,8}}", fullmatch=True)),
    })
    github = st.fixed_dictionaries({
        "repo": field(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,5}/[A-Za-z0-9._-]{1,8}", fullmatch=True)),
        "number": field(st.integers(1, 2**31 - 1) if not wild else st.integers(-5, 2**70)),
    })
    variants = [st.builds(lambda w: {"slack": w}, slack), st.builds(lambda w: {"github": w}, github)]
    return st.one_of(*variants, anything) if wild else st.one_of(*variants)


def same(specific: st.SearchStrategy[Any], wider: Any = None) -> st.SearchStrategy[Any]:
    return specific


def wide(specific: st.SearchStrategy[Any], wider: Any = None) -> st.SearchStrategy[Any]:
    return maybe(wider if wider is not None else specific)


def _choosable(text: str) -> bool:
    return bool(text.strip()) and len(text) <= 75


options = st.lists(
    texts.filter(_choosable), min_size=2, max_size=4, unique_by=lambda t: t.strip().casefold()
)


def ask_shape(wild: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A POST /v1/asks body: its fields of their own kind (most of them valid, their text still
    hostile), or (`wild`) of wider kinds, now and then anything at all."""
    field = wide if wild else same
    optional = {
        "options": field(options, st.lists(texts, max_size=4)),
        "context": field(texts),
        "work": work(wild),
        "key": field(st.sampled_from(["k1", "k2"]) | texts),
        "sensitive": field(st.booleans()),
    } | ({"colour": anything} if wild else {})
    deadline = st.fixed_dictionaries({"deadline": field(future, deadlines)})
    timeout_s = field(st.integers(1, 31_536_000), st.integers(-10, 2**70))
    timeout = st.fixed_dictionaries({"timeout_s": timeout_s})
    when = st.one_of(st.just({}), deadline, timeout, st.builds(dict.__or__, deadline, timeout))
    question = field(texts.filter(lambda text: bool(text.strip())), texts)
    body = st.fixed_dictionaries({"question": question}, optional=optional)
    return st.builds(dict.__or__, body, when if wild else st.one_of(st.just({}), deadline, timeout))


def call_shape(wild: bool) -> st.SearchStrategy[dict[str, Any]]:
    field = wide if wild else same
    operation = st.from_regex(r"(deploy|db)\.[a-z0-9_-]{1,8}", fullmatch=True)
    optional = {"input": anything, "work": work(wild)} | ({"timeout_s": anything} if wild else {})
    return st.fixed_dictionaries({"operation": field(operation)}, optional=optional)


def answer_shape(wild: bool) -> st.SearchStrategy[dict[str, Any]]:
    field = wide if wild else same
    answer = st.sampled_from(["1", "2", "yes", " YES ", "approve", ""]) | texts
    optional = {"note": field(texts)} | ({"by": anything} if wild else {})
    return st.fixed_dictionaries({"answer": field(answer)}, optional=optional)


def bodies(shape: Any) -> st.SearchStrategy[Any]:
    """Mostly well-shaped bodies (their strings and numbers still hostile), then wilder ones."""
    return weighted(
        (5, shape(False)), (3, shape(True)), (1, st.dictionaries(texts, anything, max_size=5)),
        (1, anything),
    )


ask_bodies = bodies(ask_shape)
call_bodies = bodies(call_shape)
answer_bodies = bodies(answer_shape)
query_values = st.one_of(
    st.integers(-5, 400).map(str),
    st.sampled_from(["", "open", "answered", "²", "١", "1.5", " 1e1", "9" * 30, "nan", "HUGE"])
    .map(lambda value: "9" * 4301 if value == "HUGE" else value),
    texts,
    st.binary(max_size=8),
)
queries = st.lists(
    st.tuples(st.sampled_from(["status", "limit", "cursor", "timeout"]) | texts, query_values),
    max_size=4,
)
odd_ids = st.one_of(texts, st.binary(max_size=40), st.sampled_from(["q1", "Q1", "a1", "qzzzzzzz"]))


def encoded(value: str | bytes) -> str:
    """Percent-encoded as sent: a lone surrogate goes as its (invalid) UTF-8 bytes."""
    data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    return quote(data, safe="")


def storable(value: Any) -> bool:
    """What every store holds: no NUL, no lone surrogate, no number that is not finite (a body
    with one is refused on SQLite too, though SQLite could hold it)."""
    if isinstance(value, str):
        return "\x00" not in value and value.encode("utf-8", "replace").decode() == value
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(storable(item) for item in value)
    if isinstance(value, dict):
        return all(storable(key) and storable(item) for key, item in value.items())
    return True


async def checked(resp: ClientResponse) -> Any:
    """The response's JSON, having checked it is no 5xx and, for a 4xx, the error shape."""
    text = await resp.text()
    assert resp.status < 500, (resp.status, text[:500])
    data = json.loads(text)
    event(f"{resp.status} {data.get('error', '')}")  # shown by --hypothesis-show-statistics
    if resp.status >= 400:
        assert isinstance(data.get("error"), str) and data["error"], data
        assert isinstance(data.get("message"), str) and data["message"], data
        if data["error"] == "invalid_field":
            assert isinstance(data.get("field"), str) and data["field"], data
    return data


async def post(
    aye: Aye, path: str, body: Any, escape: bool, operator: bool = False
) -> tuple[int, Any]:
    url = URL(f"{aye.url.rstrip('/')}{path}", encoded=True)
    headers = (OPERATOR_HEADERS if operator else AGENT_HEADERS) | {"Content-Type": "application/json"}
    raw = dump(body, escape).encode("utf-8", "surrogatepass")
    async with aye.client.session.post(url, data=raw, headers=headers) as resp:
        return resp.status, await checked(resp)


async def get(aye: Aye, path: str) -> tuple[int, Any]:
    url = URL(f"{aye.url.rstrip('/')}{path}", encoded=True)
    async with aye.client.session.get(url, headers=AGENT_HEADERS) as resp:
        return resp.status, await checked(resp)


def roomy() -> TokenBook:
    """The default agent with limits far above what a fuzz run sends: the limits are tested in
    test_limits.py; here every generated request must reach the code it fuzzes."""
    agent = AgentInfo("default", max_open=10**6, asks_per_minute=10**6)
    return TokenBook(OPERATOR_TOKEN, [(AGENT_TOKEN, agent)])


@pytest.fixture
async def aye(start_aye: StartAye, database_url: str) -> Aye:
    return await start_aye(database_url, tokens=roomy())


@pytest.fixture
async def gated(start_aye: StartAye, database_url: str) -> Aye:
    return await start_aye(database_url, Config.model_validate(GATED), tokens=roomy())


@FUZZ
@given(body=ask_bodies, escape=st.booleans())
async def test_asks_never_5xx(aye: Aye, body: Any, escape: bool) -> None:
    status, data = await post(aye, "/v1/asks", body, escape)
    if status == 201:  # what was taken comes back as it was sent, on either store
        sent = json.loads(dump(body))
        assert (data["question"], data["options"], data["context"]) == (
            sent["question"], sent.get("options"), sent.get("context"))
        assert storable(sent), sent


@FUZZ
@given(body=call_bodies, escape=st.booleans())
async def test_calls_never_5xx(gated: Aye, body: Any, escape: bool) -> None:
    status, data = await post(gated, "/v1/calls", body, escape)
    if status in (200, 202):
        assert storable(json.loads(dump(body))), body
    if status == 202:  # the input kept exactly, numbers of any size included
        assert data["ask"]["input"] == json.loads(dump(body)).get("input")


@FUZZ
@given(options=st.booleans(), ident=weighted((2, st.none()), (1, odd_ids)), body=answer_bodies,
       escape=st.booleans())
async def test_answers_never_5xx(
    aye: Aye, options: bool, ident: Any, body: Any, escape: bool
) -> None:
    ask = await aye.ask(question="Go?", **({"options": ["yes", "no"]} if options else {}))
    path = f"/v1/asks/{ask['id'] if ident is None else encoded(ident)}/answer"
    status, data = await post(aye, path, body, escape, operator=True)
    if status == 200:  # an odd ident may still name an earlier ask (`qP`)
        assert data["outcome"] == "taken" and (ident is not None or data["ref"] == ask["ref"])


@FUZZ
@given(query=queries, ident=st.none() | odd_ids, route=st.sampled_from(["list", "get", "wait"]))
async def test_queries_and_ids_never_5xx(
    aye: Aye, query: list[tuple[Any, Any]], ident: Any, route: str
) -> None:
    if not (await get(aye, "/v1/asks?limit=1"))[1]["asks"]:
        ask = await aye.ask(question="q")  # withdrawn: a wait on it returns at once
        await aye.client.delete(f"/v1/asks/{ask['id']}", headers=AGENT_HEADERS)
    ident_text = "q1" if ident is None else encoded(ident)
    text = "&".join(f"{encoded(k)}={encoded(v)}" for k, v in query)
    path = {"list": "/v1/asks", "get": f"/v1/asks/{ident_text}",
            "wait": f"/v1/asks/{ident_text}/wait"}[route]
    assume(len(path) + len(text) < 8000)  # longer request lines are aiohttp's own 400, not ours
    await get(aye, f"{path}?{text}")


@FUZZ
@given(value=st.binary(max_size=60).filter(lambda v: b"\r" not in v and b"\n" not in v))
async def test_authorization_bytes_never_5xx(aye: Aye, value: bytes) -> None:
    url = URL(aye.url)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(b"GET /v1/asks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Authorization: " + value + b"\r\n\r\n")
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    status = int(answer.split(b" ", 2)[1])
    # 400: aiohttp's own parser refused the header (control characters) before the app saw it.
    assert status in (400, 401), answer[:300]
    if status == 401:
        body = json.loads(answer.partition(b"\r\n\r\n")[2])
        assert body["error"] == "unauthorized" and body["message"]
