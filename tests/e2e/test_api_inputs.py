"""Hostile input over HTTP gets a 4xx naming what is wrong, never a 5xx, the same on SQLite and
PostgreSQL: deep nesting, non-finite numbers, lone surrogates and NUL in bodies, query
parameters that are not plain ASCII integers in range, non-UTF-8 tokens, odd ask ids.

Each test runs its cases against one app (a PostgreSQL reset per case would be slow)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from yarl import URL

from tests.conftest import AGENT_HEADERS, AGENT_TOKEN, OPERATOR_HEADERS, Aye

BIG = "9" * 30
HUGE = "9" * 4301


def nested(depth: int) -> str:
    """A JSON value of `depth` nested lists."""
    return "[" * depth + "]" * depth


async def post_raw(aye: Aye, path: str, raw: str, operator: bool = False) -> tuple[int, Any]:
    headers = (OPERATOR_HEADERS if operator else AGENT_HEADERS) | {"Content-Type": "application/json"}
    resp = await aye.client.post(path, data=raw.encode(), headers=headers)
    assert resp.status < 500, (raw[:200], await resp.text())
    return resp.status, await resp.json()


async def get_raw(aye: Aye, path_and_query: str, headers: dict[str, str] | None = None,
                  method: str = "GET") -> tuple[int, Any]:
    """`path_and_query` is sent as written: already percent-encoded, so any bytes can be sent."""
    url = URL(f"{aye.url.rstrip('/')}{path_and_query}", encoded=True)
    resp = await aye.client.session.request(method, url, headers=headers or AGENT_HEADERS)
    assert resp.status < 500, (path_and_query[:200], await resp.text())
    return resp.status, await resp.json()


async def raw_request(aye: Aye, head: bytes) -> tuple[int, Any]:
    """One request written byte for byte on a socket (no client normalises it), and its answer."""
    url = URL(aye.url)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(head + b"Host: localhost\r\nConnection: close\r\n\r\n")
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(body) if body else None


def assert_invalid(status: int, body: Any, field: str, case: Any) -> None:
    assert (status, body["error"], body.get("field")) == (422, "invalid_field", field), (case, body)
    assert body["message"].startswith(f"{field}: "), (case, body)


async def assert_nothing_created(aye: Aye) -> None:
    listed = await aye.client.get("/v1/asks", headers=OPERATOR_HEADERS)
    assert (await listed.json())["asks"] == []


# -- bodies ------------------------------------------------------------------------------------

TOO_DEEP = [
    '{"operation": "deploy.prod", "input": ' + nested(1000) + "}",
    '{"operation": "deploy.prod", "input": ' + nested(64) + "}",
    '{"operation": "deploy.prod", "input": ' + "[" * 30000 + "}",
    '{"operation": "deploy.prod", "work": ' + '{"a":' * 100 + "1" + "}" * 101,
    '{"question": "q", "options": ' + nested(5000) + "}",
]


async def test_json_nested_deeper_than_64_is_malformed(aye: Aye) -> None:
    for raw in TOO_DEEP:
        path = "/v1/asks" if raw.startswith('{"question"') else "/v1/calls"
        status, body = await post_raw(aye, path, raw)
        assert (status, body["error"]) == (400, "malformed_body"), (raw[:80], body)
        assert "64" in body["message"]
    status, body = await post_raw(aye, "/v1/calls", '{"operation": "x", "input": ' + nested(63) + "}")
    assert (status, body) == (200, {"decision": "allow"})  # 64 levels, the body's own included
    status, body = await post_raw(aye, "/v1/asks", '{"question": "q", "work": ' + nested(63) + "}")
    assert_invalid(status, body, "work", "64 deep")
    await assert_nothing_created(aye)


UNUSABLE = [
    ("/v1/asks", r'{"question": "\ud800"}', "question"),
    ("/v1/asks", r'{"question": "ok \udfff then"}', "question"),
    ("/v1/asks", r'{"question": "q", "options": ["a", "\ud83d"]}', "options[1]"),
    ("/v1/asks", r'{"question": "q", "context": "\udc00"}', "context"),
    ("/v1/asks", r'{"question": "q", "key": "k\ud800"}', "key"),
    ("/v1/asks", r'{"question": "q", "deadline": "\ud800"}', "deadline"),
    ("/v1/asks", r'{"question": "q", "work": {"github": {"repo": "\ud800", "number": 1}}}',
     "work.github.repo"),
    ("/v1/calls", r'{"operation": "x", "input": {"a": ["\ud800"]}}', "input.a[0]"),
    ("/v1/calls", r'{"operation": "\ud800"}', "operation"),
    ("/v1/asks", r'{"question": "nul\u0000"}', "question"),
    ("/v1/asks", r'{"question": "q", "context": "\u0000"}', "context"),
    ("/v1/asks", r'{"question": "q", "key": "\u0000"}', "key"),
    ("/v1/asks", r'{"question": "q", "options": ["\u0000a", "b"]}', "options[0]"),
    ("/v1/calls", r'{"operation": "x", "input": "a\u0000b"}', "input"),
    ("/v1/calls", r'{"operation": "x", "input": {"v": {"w": "\u0000"}}}', "input.v.w"),
    ("/v1/calls", r'{"operation": "x", "input": {"k\u0000": 1}}', "input.k\\u0000"),
    ("/v1/calls", r'{"operation": "x", "input": [{"\ud800x": 1}]}', "input[0].\\ud800x"),
    ("/v1/asks", r'{"question": "q", "\ud800": 1}', "\\ud800"),
    ("/v1/asks", r'{"question": "q", "a\u0000": 1}', "a\\u0000"),
    ("/v1/calls", '{"operation": "x", "input": 1e400}', "input"),
    ("/v1/calls", '{"operation": "x", "input": [1, -1e999]}', "input[1]"),
    ("/v1/calls", '{"operation": "x", "input": {"n": NaN}}', "input.n"),
    ("/v1/calls", '{"operation": "x", "input": Infinity}', "input"),
    ("/v1/calls", '{"operation": "x", "input": -Infinity}', "input"),
    ("/v1/asks", '{"question": "q", "timeout_s": 1e400}', "timeout_s"),
    ("/v1/asks", '{"question": "q", "timeout_s": NaN}', "timeout_s"),
    ("/v1/asks", '{"question": "q", "work": {"github": {"repo": "o/r", "number": Infinity}}}',
     "work.github.number"),
    ("/v1/calls", '{"operation": "x", "input": {"": NaN}}', 'input.""'),
    ("/v1/asks", '{"question": "q", "": 1}', '""'),  # an unknown field with no name
]


async def test_unusable_strings_and_numbers_are_422_naming_the_field(aye: Aye) -> None:
    for path, raw, field in UNUSABLE:
        status, body = await post_raw(aye, path, raw)
        assert_invalid(status, body, field, raw)
        json.dumps(body).encode()  # the error itself is clean text: no NUL, no surrogate
        assert "\x00" not in body["field"]
    await assert_nothing_created(aye)


async def test_the_operators_answer_is_checked(aye: Aye) -> None:
    ask = await aye.ask(question="Go?", options=["yes", "no"])
    for raw, field in [
        (r'{"answer": "yes\u0000"}', "answer"),
        (r'{"answer": "\ud800"}', "answer"),
        (r'{"answer": "yes", "note": "\u0000"}', "note"),
        (r'{"answer": "yes", "note": "\udbff"}', "note"),
        ('{"answer": "yes", "note": NaN}', "note"),
    ]:
        status, body = await post_raw(aye, f"/v1/asks/{ask['id']}/answer", raw, operator=True)
        assert_invalid(status, body, field, raw)
    assert (await aye.get(ask["id"]))["status"] == "open"


async def test_an_answer_in_other_digits_is_refused_not_a_500(aye: Aye) -> None:
    ask = await aye.ask(question="Go?", options=["yes", "no"])
    for answer in ("²", "١", "¹²"):
        status, body = await post_raw(aye, f"/v1/asks/{ask['id']}/answer",
                                      json.dumps({"answer": answer}), operator=True)
        assert (status, body["error"], body["field"]) == (422, "invalid_answer", "answer"), answer
    assert (await aye.get(ask["id"]))["status"] == "open"


async def test_a_deadline_no_clock_reaches_is_422(aye: Aye) -> None:
    for deadline in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00"):
        status, body = await post_raw(aye, "/v1/asks", json.dumps({"question": "q", "deadline": deadline}))
        assert_invalid(status, body, "deadline", deadline)


# -- query parameters --------------------------------------------------------------------------

NOT_PLAIN_INTEGERS = [
    "%C2%B2", "%D9%A1", "%D9%A1%D9%A2", "1.5", "%205", "5%20", "%2B5", "-1", "1e3", BIG, HUGE,
    "%00", "%ED%A0%80", "%FF", "0x1f", "nan", "inf", "",
]


async def test_list_params_are_plain_integers_in_range(aye: Aye) -> None:
    for param, extra in (("limit", ["0", "201"]), ("cursor", ["0", str(2**63)])):
        for value in NOT_PLAIN_INTEGERS + extra:
            if param == "cursor" and value == "":
                continue  # an empty cursor is the first page
            status, body = await get_raw(aye, f"/v1/asks?{param}={value}")
            assert_invalid(status, body, param, value[:40])
    for query in ("limit=200", "limit=007", f"cursor={2**63 - 1}", "cursor=", "limit=1&cursor=1"):
        status, body = await get_raw(aye, f"/v1/asks?{query}")
        assert (status, body["asks"]) == (200, []), query


async def test_wait_timeout_is_a_plain_integer_from_0_to_300(aye: Aye) -> None:
    ask = await aye.ask(question="q")
    for value in [*NOT_PLAIN_INTEGERS, "%201e1", "0.0", "-0", "301", "1.0", "0.2"]:
        status, body = await get_raw(aye, f"/v1/asks/{ask['id']}/wait?timeout={value}")
        assert_invalid(status, body, "timeout", value[:40])
    for value in ("0", "000", "1"):
        status, body = await get_raw(aye, f"/v1/asks/{ask['id']}/wait?timeout={value}")
        assert (status, body["status"]) == (200, "open"), value


# -- the token and the ask id ------------------------------------------------------------------

NOT_UTF8_OR_UNKNOWN = [
    b"Bearer \xff\xfe", b"\xff", b"Bearer " + AGENT_TOKEN.encode() + b"\xc3",
    b"Bearer \xed\xa0\x80", b"bearer \xc0\xaf", b"Bearer caf\xc3\xa9", "Bearer токен".encode(),
]


async def test_a_token_that_is_not_utf8_is_401(aye: Aye) -> None:
    for value in NOT_UTF8_OR_UNKNOWN:
        for line in (b"GET /v1/asks HTTP/1.1\r\n", b"POST /v1/asks/q1/answer HTTP/1.1\r\n"):
            status, body = await raw_request(aye, line + b"Authorization: " + value + b"\r\n")
            assert (status, body["error"]) == (401, "unauthorized"), (value, body)
    head = b"GET /v1/asks HTTP/1.1\r\nAuthorization: Bearer " + AGENT_TOKEN.encode() + b"\r\n"
    assert (await raw_request(aye, head))[0] == 200


ODD_IDS = [
    "%00", "q%00", "q1%00", "%ED%A0%80", "%FF", "%C3%A9", "q%C2%B2", "Q%D9%A1", "qzzzzzzz",
    "azzzzzzz", "a" * 31 + "%00", "%00" * 32, "%C3%A9" * 32, "%ED%A0%80" * 32, "A" * 32,
    "0" * 33, "q-1", "q+1", "..%2F..", "%F0%9F%92%A5", "q1;", "q%0A1", "%7F" * 32, "%7F",
]


async def test_odd_ask_ids_are_404(aye: Aye) -> None:
    await aye.ask(question="q")
    for ident in ODD_IDS:
        for method, suffix, headers in (
            ("GET", "", AGENT_HEADERS), ("GET", "/wait?timeout=0", AGENT_HEADERS),
            ("DELETE", "", AGENT_HEADERS), ("GET", "", OPERATOR_HEADERS),
        ):
            status, body = await get_raw(aye, f"/v1/asks/{ident}{suffix}", headers, method)
            assert (status, body["error"]) == (404, "not_found"), (method, ident, body)
        url = URL(f"{aye.url.rstrip('/')}/v1/asks/{ident}/answer", encoded=True)
        resp = await aye.client.session.post(url, json={"answer": "x"}, headers=OPERATOR_HEADERS)
        assert resp.status == 404, (ident, await resp.text())
    assert (await aye.get("q1"))["status"] == "open"
