"""What a mail and its page show, on both stores: an approval's `input_sha256` and
`call_sha256` (each named, in the text part, the HTML part and on the page, as the inbox and
Slack show them), whether its input is whole or cut; a text part that reads as paragraphs, no
sentence of aye's broken across lines; and a refused form shown again as it was typed (escaped),
with the reason, its link still good, a sensitive answer never written back."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import pytest

from bot.config import Config
from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_email import ADA, confirm, links, mails, page
from tests.smtp_server import SmtpServer, email_env, smtp_server

CONFIG = Config.model_validate({
    "defaults": {"responders": [f"email:{ADA}"]},
    "gates": [{"operations": ["deploy."], "responders": [f"email:{ADA}"]}],
})
# What aye writes in a text part, sentence by sentence, each on a line of its own.
FOOTER = ("Each link opens a page where you confirm; opening it answers nothing. The links are "
          f"yours alone ({ADA}): do not forward this mail.")


@pytest.fixture
async def smtp() -> AsyncIterator[SmtpServer]:
    async with smtp_server() as server:
        yield server


@pytest.mark.parametrize("call_input", [{"sha": "abc", "env": "prod"}, {"blob": "x" * 5000}],
                         ids=["whole", "cut"])
async def test_a_mailed_approval_shows_its_input_sha256_and_call_sha256_in_both_parts_and_the_page(
    start_aye: StartAye, database_url: str, smtp: SmtpServer, call_input: dict[str, Any]
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=email_env(smtp))
    resp = await aye.client.post("/v1/calls", headers=AGENT_HEADERS,
                                 json={"operation": "deploy.prod", "input": call_input})
    assert resp.status == 202
    view = await aye.get((await resp.json())["ask"]["id"], operator=True)
    input_sha, call_sha = view["input_sha256"], view["call_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", input_sha) and re.fullmatch(r"[0-9a-f]{64}", call_sha)
    (mail,) = await mails(smtp, 1)
    text = mail.part("plain").splitlines()
    assert f"input_sha256 {input_sha}" in text and f"call_sha256 {call_sha}" in text
    html = mail.part("html")
    for name, value in (("input_sha256", input_sha), ("call_sha256", call_sha)):
        assert re.search(rf"{name} <code[^>]*>{value}</code>", html), name
    status, shown = await page(aye, links(mail)[0])
    assert status == 200
    assert f"input_sha256 <code>{input_sha}</code>" in shown
    assert f"call_sha256 <code>{call_sha}</code>" in shown


async def test_the_text_part_keeps_each_of_its_sentences_on_one_line(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=email_env(smtp))
    await aye.ask(question="Ship v2?", options=["Ship it", "Hold"], context="The tests pass.")
    lines = (await mails(smtp, 1))[0].part("plain").splitlines()
    assert FOOTER in lines
    # A line that goes on in the next one, mid-sentence, would start it in lower case.
    broken = [(a, b) for a, b in pairwise(lines) if a and b[:1].islower()]
    assert broken == []


SIZING = {"type": "object", "required": ["count"], "properties": {
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Nodes"},
    "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["fast", "cheap"]},
             "minItems": 1, "title": "Tags"},
    "urgent": {"type": "boolean", "title": "Urgent"},
    "label": {"type": "string", "title": "Label"},
}}
TYPED = '"><b>bold</b> & <script>x()</script>'
ESCAPED = "&#34;&gt;&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;x()&lt;/script&gt;"


def value_of(html: str, name: str) -> str | None:
    """The value an <input name=…> carries as shown (its raw attribute text), None without one."""
    found = re.search(rf'<input [^>]*name="{re.escape(name)}"[^>]*>', html)
    assert found, name
    value = re.search(r' value="([^"]*)"', found.group(0))
    return value.group(1) if value else None


async def test_a_refused_form_is_shown_again_as_typed_with_the_reason_and_its_link_still_answers(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=email_env(smtp))
    ask = await aye.ask(question="Size the cluster", format="form", schema=SIZING)
    (answer,) = links((await mails(smtp, 1))[0])
    _, html = await page(aye, answer)
    # Nodes out of bounds; the rest as a person typed it.
    status, shown = await confirm(aye, answer, html, **{
        "f.0": "12", "f.1": "us", "f.2": "cheap", "f.3": "true", "f.4": TYPED, "note": TYPED})
    assert status == 422 and "Nodes must be at most 10" in shown
    assert (value_of(shown, "f.0"), value_of(shown, "f.4"), value_of(shown, "note")) == (
        "12", ESCAPED, ESCAPED)
    assert '<option value="us" selected>' in shown and '<option value="eu">' in shown
    assert re.search(r'name="f.2" value="cheap" checked>', shown)
    assert re.search(r'name="f.2" value="fast">', shown)
    assert re.search(r'name="f.3" value="true" checked', shown)
    assert "<b>bold</b>" not in shown and "<script>x()" not in shown
    # No tag picked: refused again, each value still as typed.
    status, shown = await confirm(aye, answer, shown, **{
        "f.0": "3", "f.1": "us", "f.4": TYPED, "note": TYPED})
    assert status == 422 and "Tags must pick at least 1" in shown
    assert (value_of(shown, "f.0"), value_of(shown, "f.4")) == ("3", ESCAPED)
    assert not re.search(r'name="f.2" value="cheap" checked', shown)
    status, said = await confirm(aye, answer, shown, **{
        "f.0": "3", "f.1": "us", "f.2": "cheap", "f.4": "edge"})
    assert status == 200 and "Answered" in said
    assert (await aye.get(ask["id"]))["status"] == "answered"


async def test_a_refused_pick_and_a_long_note_keep_what_was_chosen_and_typed(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=email_env(smtp))
    await aye.ask(question="Which regions?", format="multi", options=["eu", "us", "ap"], max=2)
    (answer,) = links((await mails(smtp, 1))[0])
    _, html = await page(aye, answer)
    resp = await aye.client.post(answer.removeprefix("https://aye.example.test"), data=[
        ("csrf", re.findall(r'name="csrf" value="([^"]*)"', html)[0]),
        ("pick", "1"), ("pick", "3"), ("pick", "2"), ("note", "all three")])
    shown = await resp.text()
    assert resp.status == 422 and "at most 2" in shown
    assert [re.search(rf'name="pick" value="{n}"( checked)?>', shown).group(1) for n in "123"] == [
        " checked", " checked", " checked"]
    assert value_of(shown, "note") == "all three"
    # A note too long on a chosen answer's confirm page: the note is kept with the reason.
    await aye.ask(question="Ship?", format="confirm")
    yes = links((await mails(smtp, 2))[1])[0]
    _, html = await page(aye, yes)
    status, shown = await confirm(aye, yes, html, note="n" * 3001)
    assert status == 422 and "at most 3000 characters" in shown
    assert value_of(shown, "note") == "n" * 3001 and "Confirm: Yes" in shown


async def test_a_refused_sensitive_answer_is_never_written_back_into_the_page(
    start_aye: StartAye, database_url: str, smtp: SmtpServer
) -> None:
    aye = await start_aye(database_url, config=CONFIG, env=email_env(smtp))
    await aye.ask(question="The deploy key?", format="text", sensitive=True)
    (answer,) = links((await mails(smtp, 1))[0])
    _, html = await page(aye, answer)
    status, shown = await confirm(aye, answer, html, answer="hunter2-value", note="x" * 3001)
    assert status == 422 and "at most 3000 characters" in shown
    assert "hunter2" not in shown and value_of(shown, "answer") is None
    assert value_of(shown, "note") == "x" * 3001
