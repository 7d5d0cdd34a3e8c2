"""One canonical identity decides every "same" (core/domain/identity.py): a call written another
way (`DEPLOY.prod`, `5.0`, `5e0`, `"\\u0032"`, key order, NFD, `Octo/App`, an explicit
`"type": "issue"`) is refused at once after a remembered refusal (no new ask, nothing posted),
uses a grant, and shares a pending approval; a start is about the work without its type, and a
GitHub work's kind is read from GitHub (the fake one, over HTTP), not taken from the agent.
The hashes are shown by their names, equal, in the operator's view, its history, `aye show`,
the inbox and GitHub's comment. Through the real API, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from bot.config import Config
from core.domain import identity, rules
from tests.conftest import AGENT_HEADERS, OPERATOR_HEADERS, OPERATOR_TOKEN, Aye, StartAye
from tests.e2e.test_github_e2e import app_env
from tests.e2e.test_process import base_env
from tests.fake_github import FakeGitHub
from tests.unit.test_web_harness import Operator

REPO, NUMBER = "octo/app", 7
ISSUE_COMMENTS = r"(?i)/repos/octo/app/issues/7/comments"  # GitHub: case-insensitive
# The call as the agent first makes it, as JSON text (so each variant below can differ from it
# in how it is written, not in what it says).
BASE = ('{"operation": "deploy.prod", "input": {"replicas": 5, "tag": "caf\u00e9", "n": "2", '
        '"region": "eu"}, "work": {"github": {"repo": "octo/app", "number": 7}}}')
VARIANTS = {
    "operation in capitals": BASE.replace('"deploy.prod"', '"DEPLOY.prod"'),
    "5.0": BASE.replace('"replicas": 5', '"replicas": 5.0'),
    "5e0": BASE.replace('"replicas": 5', '"replicas": 5e0'),
    "0.5e1": BASE.replace('"replicas": 5', '"replicas": 0.5e1'),
    "an escaped digit": BASE.replace('"n": "2"', '"n": "\\u0032"'),
    "an escaped letter": BASE.replace('"region": "eu"', '"region": "\\u0065u"'),
    "key order": ('{"work": {"github": {"number": 7, "repo": "octo/app"}}, "input": {"region": '
                  '"eu", "n": "2", "tag": "caf\u00e9", "replicas": 5}, "operation": "deploy.prod"}'),
    "NFD": BASE.replace("caf\u00e9", unicodedata.normalize("NFD", "caf\u00e9")),
    "repo case": BASE.replace('"repo": "octo/app"', '"repo": "Octo/App"'),
    "explicit issue": BASE.replace('"number": 7}', '"number": 7, "type": "issue"}'),
    "whitespace": json.dumps(json.loads(BASE), indent=4),
    "all at once": ('{"work":{"github":{"type":"issue","number":7,"repo":"OCTO/app"}},"input":'
                    '{"region":"\\u0065u","n":"\\u0032","tag":"cafe\u0301","replicas":5e0},'
                    '"operation":"Deploy.PROD"}'),
}


def gated(**gate: Any) -> Config:
    return Config.model_validate({"github": {"post_questions": True}, "gates": [{
        "operations": ["deploy."], "responders": ["github", "operator:local"], "timeout": "1h",
        **gate}]})


async def started(start_aye: StartAye, url: str, fake: FakeGitHub, config: Config) -> Aye:
    fake.open_issue(REPO, NUMBER, login="alice")
    return await start_aye(url, config, env=app_env(fake))


async def call(aye: Aye, raw: str) -> tuple[int, dict[str, Any]]:
    resp = await aye.client.post("/v1/calls", data=raw.encode(), headers={
        **AGENT_HEADERS, "Content-Type": "application/json"})
    return resp.status, await resp.json()


async def every_ask(aye: Aye) -> list[dict[str, Any]]:
    resp = await aye.client.get("/v1/asks", params={"limit": "100"}, headers=OPERATOR_HEADERS)
    return list((await resp.json())["asks"])


def posted_comments(fake: FakeGitHub) -> list[str]:
    return [c.json_body["body"] for c in fake.calls_matching("POST", ISSUE_COMMENTS)
            if c.status == 201]


# -- the identity itself (pure) ---------------------------------------------------------------


def test_every_variant_is_one_call_and_a_different_value_another() -> None:
    def of(raw: str) -> identity.Call:
        body = json.loads(raw)
        return identity.call("default", body["operation"], body["input"], body["work"])

    base = of(BASE)
    for name, raw in VARIANTS.items():
        assert of(raw) == base, name
    for other in (BASE.replace('"replicas": 5', '"replicas": 5.5'),
                  BASE.replace('"n": "2"', '"n": 2'),
                  BASE.replace('"number": 7}', '"number": 7, "type": "pull"}'),
                  BASE.replace('"deploy.prod"', '"deploy.prods"')):
        assert of(other).call_sha256 != base.call_sha256
    assert identity.call("a", "deploy.prod", {}, None) != identity.call("b", "deploy.prod", {}, None)


def test_the_canonical_input_is_rfc8785_of_its_nfc_form() -> None:
    value = {"b": [1, 2.5, None, True], "a": {"z\u00e9": "e\u0301", "\U0001f600": 1e-7}}
    normal = {"b": [1, 2.5, None, True], "a": {"z\u00e9": "\u00e9", "\U0001f600": 1e-7}}
    assert identity.canonical(value) == rfc8785.dumps(normal)
    assert identity.input_sha256(value) == hashlib.sha256(rfc8785.dumps(normal)).hexdigest()
    # What every surface shows as the input's SHA-256 is that same input_sha256, of the text
    # it shows (a person can hash what they read).
    shown = rules.input_shown(value, 10**6)
    assert shown.sha256 == identity.input_sha256(value)
    assert hashlib.sha256(shown.text.encode()).hexdigest() == shown.sha256


def test_numbers_are_compared_by_their_exact_value() -> None:
    # RFC 8785 reads numbers as doubles, which would merge these two different integers.
    assert identity.canonical(2**53 + 1) == b"9007199254740993"
    assert identity.canonical(2**53 + 1) != identity.canonical(2**53)
    assert identity.canonical(2.0**53) == identity.canonical(2**53) == b"9007199254740992"
    assert identity.canonical(1e21) == b"1" + b"0" * 21  # an integral double, exactly
    assert identity.canonical(-(2**60)) == str(-(2**60)).encode()
    assert identity.canonical(1152921504606847000) != identity.canonical(2.0**60)
    assert identity.canonical([5, 5.0, -0.0, 0.1]) == b"[5,5,0,0.1]"
    with pytest.raises(ValueError):
        identity.canonical(float("nan"))


def test_keys_that_nfc_would_merge_keep_their_own_text() -> None:
    both = {"\u00e9": 1, "e\u0301": 2}
    assert identity.canonical(both) not in (identity.canonical({"\u00e9": 2}),
                                            identity.canonical({"\u00e9": 1}))
    assert identity.canonical(both) == identity.canonical({"e\u0301": 2, "\u00e9": 1})


def test_a_start_is_the_work_without_its_type() -> None:
    issue = {"github": {"repo": "octo/app", "number": 7}}
    for same in ({"github": {"repo": "Octo/App", "number": 7, "type": "pull"}},
                 {"github": {"repo": "octo/app", "number": 7, "type": "issue"}}):
        assert identity.start_sha256("triage", same) == identity.start_sha256("triage", issue)
    assert identity.start_sha256("triage", issue) != identity.start_sha256("other", issue)
    assert identity.start_sha256("triage", issue) != identity.start_sha256(
        "triage", {"github": {"repo": "octo/app", "number": 8}})


# -- calls, end to end ------------------------------------------------------------------------


async def test_after_a_refusal_every_variant_is_refused_at_once_with_nothing_asked(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await started(start_aye, database_url, fake_github, gated(remember_refusal="1h"))
    status, first = await call(aye, BASE)
    assert status == 202, first
    await fake_github.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    assert (await aye.answer(first["ask"]["ref"], "refuse", "not today"))[0] == 200

    for name, raw in VARIANTS.items():
        status, body = await call(aye, raw)
        assert status == 403, (name, body)
        assert (body["error"], body["repeat"], body["approval"], body["note"]) == (
            "approval_refused", True, first["ask"]["id"], "not today"), name
    assert [a["id"] for a in await every_ask(aye)] == [first["ask"]["id"]]
    assert len(posted_comments(fake_github)) == 1  # nobody was asked again


async def test_a_grant_is_used_by_an_equivalent_call(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await started(start_aye, database_url, fake_github, gated())
    for name, raw in VARIANTS.items():
        status, pending = await call(aye, BASE)
        assert status == 202, pending
        assert (await aye.answer(pending["ask"]["ref"], "approve"))[0] == 200
        status, body = await call(aye, raw)
        assert (status, body["decision"], body["approval"]) == (
            200, "allow", pending["ask"]["id"]), name


async def test_a_pending_approval_is_shared_by_an_equivalent_call(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await started(start_aye, database_url, fake_github, gated())
    status, first = await call(aye, BASE)
    assert status == 202
    for name, raw in VARIANTS.items():
        status, body = await call(aye, raw)
        assert (status, body["ask"]["id"]) == (202, first["ask"]["id"]), name
    assert len(await every_ask(aye)) == 1
    # The operation is stored as it is matched: whichever spelling came first, one name.
    assert first["ask"]["operation"] == "deploy.prod"


# -- starts, end to end -----------------------------------------------------------------------


def start_gate(kinds: list[str]) -> Config:
    return Config.model_validate({"gates": [{"kinds": kinds, "responders": ["operator:local"],
                                             "timeout": "1h"}]})


async def start(aye: Aye, work: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    resp = await aye.client.post("/v1/starts", json={"work": {"github": work}},
                                 headers=AGENT_HEADERS)
    return resp.status, await resp.json()


async def test_a_refused_start_stays_refused_whatever_type_is_claimed(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await started(start_aye, database_url, fake_github, start_gate(["github.issue"]))
    status, pending = await start(aye, {"repo": REPO, "number": NUMBER})
    assert status == 202, pending
    assert (await aye.answer(pending["ask"]["ref"], "refuse", "not this one"))[0] == 200
    for work in ({"repo": REPO, "number": NUMBER, "type": "pull"},
                 {"repo": "Octo/App", "number": NUMBER, "type": "pull"},
                 {"repo": REPO, "number": NUMBER, "type": "issue"}):
        status, body = await start(aye, work)
        assert (status, body["error"], body["approval"]) == (
            403, "start_refused", pending["ask"]["id"]), work
    assert len(await every_ask(aye)) == 1


async def test_a_start_claimed_as_an_issue_that_github_says_is_a_pull_request_is_gated(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await start_aye(database_url, start_gate(["github.pull"]), env=app_env(fake_github))
    fake_github.open_issue(REPO, NUMBER, pull=True)
    fake_github.open_issue(REPO, 8)  # an issue
    status, body = await start(aye, {"repo": REPO, "number": NUMBER, "type": "issue"})
    assert (status, body["decision"]) == (202, "pending"), body
    status, body = await start(aye, {"repo": REPO, "number": NUMBER})  # the same work
    assert status == 202
    # Read from GitHub, the other way round too: a claimed pull request that is an issue.
    assert await start(aye, {"repo": REPO, "number": 8, "type": "pull"}) == (200, {"decision": "allow"})
    assert {c.status for c in fake_github.calls_matching("GET", r"/repos/octo/app/issues/\d+")} == {200}


async def test_a_kind_github_cannot_confirm_is_gated_as_either_kind(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub
) -> None:
    aye = await start_aye(database_url, start_gate(["github.pull"]), env=app_env(fake_github))
    # No such issue on GitHub (404), then GitHub down (502): the claim `issue` is not taken.
    status, body = await start(aye, {"repo": REPO, "number": 9, "type": "issue"})
    assert (status, body["decision"]) == (202, "pending"), body
    fake_github.open_issue(REPO, 10)
    fake_github.fail_next("GET", r"/repos/octo/app/issues/10", status=502)
    status, body = await start(aye, {"repo": REPO, "number": 10})
    assert (status, body["decision"]) == (202, "pending"), body
    # No gate that tells kinds apart: GitHub is not asked at all.
    other = await start_aye(database_url, start_gate(["github."]), env=app_env(fake_github))
    reads = len(fake_github.calls_matching("GET", r"/repos/octo/app/issues/\d+"))
    assert (await start(other, {"repo": REPO, "number": 11}))[0] == 202
    assert len(fake_github.calls_matching("GET", r"/repos/octo/app/issues/\d+")) == reads


# -- the hashes, shown by their names ---------------------------------------------------------


async def aye_show(aye: Aye, tmp: Path, ref: str) -> str:
    """The real `aye show REF`, run against this test's server (without blocking its loop)."""
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/cli.db", AYE_URL=aye.url.rstrip("/"),
                   AYE_OPERATOR_TOKEN=OPERATOR_TOKEN)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "show", ref, cwd=tmp, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_the_hashes_are_named_and_equal_everywhere(
    start_aye: StartAye, database_url: str, fake_github: FakeGitHub, tmp_path: Path
) -> None:
    aye = await started(start_aye, database_url, fake_github, gated())
    status, pending = await call(aye, VARIANTS["all at once"])
    assert status == 202
    ask = pending["ask"]
    view = await aye.get(ask["id"], operator=True)
    body = json.loads(BASE)
    expected = identity.call("default", "deploy.prod", body["input"], body["work"])
    input_sha, call_sha = view["input_sha256"], view["call_sha256"]
    assert (input_sha, call_sha) == (expected.input_sha256, expected.call_sha256)
    assert input_sha == hashlib.sha256(rfc8785.dumps(
        {"replicas": 5, "tag": "caf\u00e9", "n": "2", "region": "eu"})).hexdigest()
    created = view["history"][0]
    assert (created["event"], created["input_sha256"], created["call_sha256"]) == (
        "created", input_sha, call_sha)
    assert "input_hash" not in created

    shown = await aye_show(aye, tmp_path, ask["ref"])
    assert f"input_sha256: {input_sha}" in shown and f"call_sha256: {call_sha}" in shown

    operator = Operator(aye)
    await operator.sign_in()
    for page in (await operator.page(), await operator.page(f"/inbox/{ask['ref']}")):
        assert f"input_sha256 <code>{input_sha}</code>" in page
        assert f"call_sha256 <code>{call_sha}</code>" in page

    await fake_github.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201)
    [comment] = posted_comments(fake_github)
    assert f"`input_sha256`: `{input_sha}`" in comment
    assert f"`call_sha256`: `{call_sha}`" in comment
    assert len(re.findall(r"\b[0-9a-f]{64}\b", comment)) == 2  # no other, unnamed hash
