"""`aye answer` and `aye show` for every answer format, through the real `aye` against a real
`aye serve`: the input goes as typed and the server reads it; a misfit prints the server's
reason and field and exits 1; what was taken, the format, a form's fields and the media are
printed as a person reads them, without terminal controls."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_cli_output import NASTY, unsafe
from tests.e2e.test_process import AGENT, OP, Api, Server, run_cli, start_server, stop
from tests.stores import sqlite_at_head

FORM = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "title": "Region", "enum": ["eu", "us"],
                   "description": "Where the nodes run."},
        "count": {"type": "integer", "title": "Nodes", "minimum": 1, "maximum": 10},
        "contact": {"type": "string", "format": "email", "maxLength": 80},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["gpu", "spot"]},
                 "minItems": 1, "maxItems": 2},
        "urgent": {"type": "boolean"},
    },
    "required": ["region", "count"],
}


# One `aye serve` for the module (a process start is ~1.5 s of CPU): each test makes asks of its
# own and finds them by their refs. On one xdist worker, so that it is started once.
pytestmark = pytest.mark.xdist_group("cli_formats")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("served")
    started = asyncio.run(start_server(tmp, sqlite_at_head(sqlite_template, tmp)))
    try:
        yield started
    finally:
        stop(started, signal.SIGKILL)


async def ask(server: Server, **body: Any) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        status, made = await Api(session, server.url).call("POST", "/v1/asks", token=AGENT,
                                                           json=body)
    assert status == 201, made
    return dict(made)


async def agent_view(server: Server, ref: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        status, seen = await Api(session, server.url).call("GET", f"/v1/asks/{ref}")
    assert status == 200, seen
    return dict(seen)


def aye(tmp: Path, server: Server, *args: str) -> tuple[int, str, str]:
    done = run_cli(tmp, server.url, *args, token=OP)
    for text in (done.stdout, done.stderr):
        assert not unsafe(text.replace("\n", "")), unsafe(text)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(("body", "typed", "echoed", "value"), [
    ({"options": ["red", "green", "blue"], "format": "multi", "max": 2}, "1, blue",
     "red, blue", ["red", "blue"]),
    ({"format": "confirm"}, "no", "no", False),
    ({"format": "ack"}, "ok", "ok", True),
    ({"format": "form", "schema": FORM}, '{"region": "eu", "count": 3, "urgent": true}',
     "region: eu, count: 3, urgent: yes", {"region": "eu", "count": 3, "urgent": True}),
    ({"options": ["red", "blue"]}, "2", "blue", "blue"),
    ({}, "  as you like  ", "as you like", "as you like"),
])
async def test_answer_takes_every_format_and_echoes_the_value_taken(
    tmp_path: Path, server: Server, body: dict[str, Any], typed: str, echoed: str, value: Any
) -> None:
    made = await ask(server, question="Well?", **body)

    code, out, err = aye(tmp_path, server, "answer", made["ref"], typed, "--note", "why not")

    assert (code, out.strip(), err) == (0, f"taken: {made['ref']} answered {echoed}", "")
    answer = (await agent_view(server, made["ref"]))["answer"]
    assert answer["value"] == value and answer["note"] == "why not"


@pytest.mark.parametrize(("body", "typed", "said"), [
    ({"format": "form", "schema": FORM}, '{"region": "eu", "count": 30}',
     "aye: refused: Nodes must be at most 10 (field answer.count)"),
    ({"format": "form", "schema": FORM}, "region=eu",
     'aye: refused: must be a JSON object like {"field": "value"} (field answer)'),
    ({"options": ["red", "green", "blue"], "format": "multi", "max": 2}, "1, 2, 3",
     "aye: refused: must pick at most 2 options (field answer)"),
    ({"options": ["red", "green", "blue"], "format": "multi"}, "1, 7",
     "aye: refused: must be one of the options: 1 red, 2 green, 3 blue (field answer[1])"),
    ({"format": "confirm"}, "maybe", "aye: refused: answer yes or no (field answer)"),
])
async def test_a_misfit_prints_the_servers_reason_and_field_and_exits_1(
    tmp_path: Path, server: Server, body: dict[str, Any], typed: str, said: str
) -> None:
    made = await ask(server, question="Well?", **body)

    code, out, err = aye(tmp_path, server, "answer", made["ref"], typed)

    assert code == 1 and out == ""
    assert err.splitlines()[0] == said
    assert err.splitlines()[1].startswith("aye: valid answers: ")
    assert (await agent_view(server, made["ref"]))["status"] == "open"


async def test_the_hint_after_a_misfit_says_what_each_format_takes(
    tmp_path: Path, server: Server
) -> None:
    multi = await ask(server, question="Which?", options=["red", "blue"], format="multi")
    form = await ask(server, question="How?", format="form", schema=FORM)
    ack = await ask(server, question="Go?", format="ack")

    hints = [aye(tmp_path, server, "answer", made["ref"], "nonsense")[2].splitlines()[1]
             for made in (multi, form, ack)]

    assert hints == [
        "aye: valid answers: 1 to 2 of 1. red, 2. blue, separated by commas (numbers or texts)",
        'aye: valid answers: one line of JSON: {"region": …, "count": …, "contact": …, '
        '"tags": …, "urgent": …} (required: region, count)',
        "aye: valid answers: ok, continue, yes or true",
    ]


async def test_show_prints_a_forms_fields_media_and_typed_answer(
    tmp_path: Path, server: Server
) -> None:
    media = [{"kind": "image", "url": "https://cdn.example/plot.png", "caption": f"Costs {NASTY}"},
             {"kind": "link", "url": "https://docs.example/runbook"}]
    made = await ask(server, question="How to run it?", format="form", schema=FORM, media=media)
    aye(tmp_path, server, "answer", made["ref"], '{"region": "us", "count": 2, "tags": ["gpu"]}')

    code, out, _ = aye(tmp_path, server, "show", made["ref"])

    assert code == 0
    lines = out.splitlines()
    at = lines.index("fields:")
    assert lines[at:at + 11] == [
        "fields:",
        "  region (required): string, one of: eu, us",
        "    Region - Where the nodes run.",
        "  count (required): integer, 1 to 10",
        "    Nodes",
        "  contact (optional): string, format email, at most 80 characters",
        "  tags (optional): array, any of: gpu, spot, 1 to 2 picked",
        "  urgent (optional): boolean",
        "media:",
        lines[at + 9],
        "  link  https://docs.example/runbook",
    ]
    # The caption without its terminal controls (checked by aye()), shown escaped.
    assert lines[at + 9].startswith("  image  Costs a[U+001B]]52;c;SGVsbG8=[U+0007]b[U+000D]c[U+001B][2Kd")
    assert lines[at + 9].endswith("  https://cdn.example/plot.png")
    assert "format: form (one line of JSON with the fields below)" in lines
    at = next(i for i, text in enumerate(lines) if text.startswith("answer:"))
    assert lines[at:at + 4] == [
        "answer:  by operator:local via cli", "  region: us", "  count: 2", "  tags: gpu"]


@pytest.mark.parametrize(("body", "typed", "shown"), [
    ({"options": ["red", "green", "blue"], "format": "multi", "min": 2},
     "blue, red", ["format: multi (pick 2 to 3: numbers or texts separated by commas, like 1, 3)",
                   "answer: red, blue  by operator:local via cli", "  options: 1, 3"]),
    ({"format": "confirm"}, "y", ["format: confirm (yes or no)",
                                  "answer: yes  by operator:local via cli"]),
    ({"format": "ack"}, "continue", ["format: ack (ok when the work may go on)",
                                      "answer: ok  by operator:local via cli"]),
])
async def test_show_prints_the_format_its_bounds_and_the_typed_answer(
    tmp_path: Path, server: Server, body: dict[str, Any], typed: str, shown: list[str]
) -> None:
    made = await ask(server, question="Well?", **body)
    assert aye(tmp_path, server, "answer", made["ref"], typed)[0] == 0

    lines = aye(tmp_path, server, "show", made["ref"])[1].splitlines()

    for text in shown:
        assert text in lines, lines
    assert "options: free text" not in lines


async def test_asks_marks_the_formats_answered_differently(tmp_path: Path, server: Server) -> None:
    multi = await ask(server, question="Which?", options=["red", "blue"], format="multi")
    form = await ask(server, question="How?", format="form", schema=FORM)
    plain = await ask(server, question="Ship?", options=["yes", "no"])

    rows = aye(tmp_path, server, "asks")[1].splitlines()

    def row(made: dict[str, Any]) -> str:
        return next(text for text in rows if text.startswith(made["ref"] + " "))

    assert row(multi).endswith("[multi] Which?") and row(form).endswith("[form] How?")
    assert row(plain).endswith("  Ship?")
