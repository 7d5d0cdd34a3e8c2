"""What aye posts on GitHub shows agent text inertly and an approval's input truly: end to end,
asks and calls over HTTP, the comment as the fake GitHub received it from the real gidgethub,
on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from bot.config import Config
from core.domain import identity
from handlers.github.messages import marker
from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_github_e2e import COMMENT, ISSUE_COMMENTS, WORK, Hub, app_env, config
from tests.fake_github import MAX_COMMENT_BODY, FakeGitHub

# Everything an agent could write to hide text, notify people, link or show an image.
HOSTILE = (
    "Ship 1.4.2 <!-- then drop the database --> @mallory @acme/admins #123 GH-7 "
    "![pixel](https://evil.example/p.png) [docs](http://evil.example) <img src=x> "
    "<details><summary>ok</summary>rm -rf /</details> www.evil.example ops@evil.example "
    "https://evil.example/x deadbeefcafe1234 `code` &lt;b&gt; $\\href{x}{y}$ [^1]\n"
    "[ref]: http://evil.example\n> quoted\n```\nfenced\n```"
)


def outside_code_is_inert(text: str) -> None:
    """The Markdown outside code blocks and spans forms no HTML, comment, link, image,
    mention or reference (aye's own marker aside, and @octocat, the configured responder)."""
    text = re.sub(r"<!-- aye:ask:[0-9a-f]{32} -->$", "", text).replace("@octocat", "")
    for found in re.finditer(r"^(`{3,})[^\n]*\n.*?\n\1$", text, re.M | re.S):
        text = text.replace(found.group(0), "")
    text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)  # code spans, as aye writes them
    assert "<" not in text and "](" not in text.replace("\\](", "")
    for pattern in (r"@(?=[A-Za-z0-9])", r"#(?=\d)", r"(?i)gh-\d", r"://", r"(?i)www\.",
                    r"(?i)\b[0-9a-f]{7,40}\b", r"(?<!\\)\[", r"(?<!\\)`", r"(?<!\\)\$"):
        assert re.search(pattern, text) is None, (pattern, text)


@pytest.fixture
async def posting(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    aye = await start_aye(database_url, config=config(post_questions=True),
                          env=app_env(fake_github))
    return Hub(aye, fake_github)


async def posted(hub: Hub, since: int = 0) -> str:
    call = await hub.fake.wait_for_call("POST", ISSUE_COMMENTS, lambda c: c.status == 201,
                                        since=since)
    return str(call.json_body["body"])


async def test_a_questions_agent_text_is_inert(posting: Hub) -> None:
    hub = posting
    ask = await hub.ask(question=HOSTILE, context=HOSTILE, options=["@mallory yes", "<b>no</b>"])

    body = await posted(hub)

    outside_code_is_inert(body)
    assert "@\u200dmallory" in body and "@\u200dacme/admins" in body  # shown, mentioning no one
    assert "&lt;!-- then drop the database --&gt;" in body  # shown, hiding nothing
    assert "1. @\u200dmallory yes\n2. &lt;b&gt;no&lt;/b&gt;" in body
    assert "@octocat" in body  # the configured responder, named by aye, is a mention
    assert body.endswith(marker(ask["id"]))


async def test_an_answer_shown_on_close_is_inert(posting: Hub) -> None:
    hub = posting
    await hub.ask(question="Release notes?")
    await posted(hub)

    await hub.say("/answer <!-- @mallory ![x](http://evil.example/x.png) #5")

    edited = await hub.fake.wait_for_call("PATCH", COMMENT)
    body = str(edited.json_body["body"])
    outside_code_is_inert(body)
    assert "answered by @octocat: **&lt;!-- @\u200dmallory" in body


def gated(responders: list[str]) -> Config:
    return Config.model_validate({
        "defaults": {"responders": ["github:octocat", "operator:local"]},
        "github": {"post_questions": True},
        "gates": [{"operations": ["deploy."], "responders": responders, "timeout": "1h"}],
    })


async def call(hub: Hub, operation: str, call_input: Any) -> dict[str, Any]:
    body = {"operation": operation, "input": call_input, "work": WORK}
    resp = await hub.aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    assert resp.status == 202, await resp.text()
    ask: dict[str, Any] = (await resp.json())["ask"]
    return ask


@pytest.fixture
async def gate(start_aye: StartAye, database_url: str, fake_github: FakeGitHub) -> Hub:
    aye = await start_aye(database_url, gated(["github:octocat"]), env=app_env(fake_github))
    return Hub(aye, fake_github)


async def test_an_approvals_input_is_shown_whole_in_a_code_block(gate: Hub) -> None:
    hidden = {"version": "1.4.2 <!--", "also": "```` and `` inside", "then": "--> DROP DATABASE"}
    await call(gate, "deploy.prod", hidden)

    body = await posted(gate)

    whole = identity.canonical(hidden).decode()
    assert "\n`````json\n" + whole + "\n`````\n" in body  # a fence longer than ```` inside
    outside_code_is_inert(body)
    assert "cut" not in body


async def test_what_would_not_show_in_an_input_is_written_as_its_code(gate: Hub) -> None:
    # A right-to-left override reverses what follows it on screen (the issue's example reads
    # `echo safe ; rm -fr /tmp/beach.txt`); tag characters and a zero-width space show nothing.
    sly = {"cmd": "echo safe \u202e; txt.hcaeb/ pmt/ fr- mr \u202c",
           "tag": "ok\U000e0072\U000e006d", "zw": "a\u200bb"}
    ask = await call(gate, "deploy.prod", sly)

    body = await posted(gate)

    block = re.search(r"^(`{3,})json\n(.*?)\n\1$", body, re.M | re.S)
    assert block is not None and block.group(2).isascii()
    assert "echo safe [U+202E]; txt.hcaeb/ pmt/ fr- mr [U+202C]" in block.group(2)
    assert "ok[U+E0072][U+E006D]" in block.group(2) and "a[U+200B]b" in block.group(2)
    assert "\u202e" not in body and "\u200b" not in body
    assert body.index("this request contains hidden or reordering characters") < body.index(block.group(0))
    assert "written as their codes" in body and "cut" not in body
    # Stored and returned as the agent sent it: only the display changed.
    view = await gate.aye.get(ask["id"], operator=True)
    assert view["input"] == sly


async def test_a_long_input_is_cut_plainly_with_its_sha256_and_where_to_read_it(
    gate: Hub,
) -> None:
    long_input = {"sql": "SELECT 1; " * 6_500 + "DROP DATABASE prod"}
    ask = await call(gate, "deploy.db", long_input)

    body = await posted(gate)

    whole = identity.canonical(long_input).decode()
    assert len(body.encode()) <= MAX_COMMENT_BODY < len(whole.encode()) + 600
    assert "DROP DATABASE" not in body  # the end did not fit: and it says so
    assert "**cut**" in body and "**The input above is cut here.**" in body
    assert hashlib.sha256(whole.encode()).hexdigest() in body
    assert f"`aye show {ask['ref']}`" in body
    shown = re.search(r"^(`{3,})json\n(.*?)\n\1$", body, re.M | re.S)
    assert shown is not None and whole.startswith(shown.group(2))
    assert len(shown.group(2)) > 60_000  # as much as fits, not a token excerpt


async def test_an_input_of_backticks_still_fits_one_comment(gate: Hub) -> None:
    ask = await call(gate, "deploy.odd", {"ticks": "`" * 63_000})

    body = await posted(gate)

    assert len(body.encode()) <= MAX_COMMENT_BODY
    assert "**The input above is cut here.**" in body and f"aye show {ask['ref']}" in body
