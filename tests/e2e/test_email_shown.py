"""What a mail and its page show, on both stores: an approval's `input_sha256` and
`call_sha256` (each named, in the text part, the HTML part and on the page, as the inbox and
Slack show them), whether its input is whole or cut; and a text part that reads as paragraphs,
no sentence of aye's broken across lines."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import pytest

from bot.config import Config
from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_email import ADA, links, mails, page
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
