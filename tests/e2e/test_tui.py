"""`aye tui` through Textual's pilot at 80×24, keys only, against a real `aye serve` (one for
the module): the list and the panel, live updates, every answer format's keys, refusals and
their reasons, a destructive ask's confirmation, filtering and Tab, and the exit codes."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from bot.tui.api import Api
from bot.tui.app import Tui
from bot.tui.inbox import Inbox
from bot.tui.screens import Confirm, FormAnswer, LineAnswer, Note
from tests.e2e.test_process import (
    AGENT,
    OP,
    Server,
    base_env,
    nothing_listening,
    start_server,
    stop,
)
from tests.stores import sqlite_at_head

CONFIG = """
[[gates]]
operations = ["deploy."]

[[gates]]
operations = ["quorum."]
responders = ["operator:local", "github"]
approvals = 2
"""
SIZE = (80, 24)


# One server for the module, started once: its tests on one xdist worker.
pytestmark = pytest.mark.xdist_group("tui")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tui")
    (tmp / "aye.toml").write_text(CONFIG)
    server = asyncio.run(start_server(tmp, sqlite_at_head(sqlite_template, tmp)))
    yield server
    stop(server, signal.SIGKILL)


async def call(server: Server, method: str, path: str, token: str = AGENT, **kw: Any) -> Any:
    async with aiohttp.ClientSession() as session, session.request(
        method, server.url + path, headers={"Authorization": f"Bearer {token}"}, **kw
    ) as resp:
        assert resp.status < 300, await resp.text()
        return await resp.json()


async def ask(server: Server, **body: Any) -> dict[str, Any]:
    return await call(server, "POST", "/v1/asks", json=body)  # type: ignore[no-any-return]


async def approval(server: Server, operation: str, given: Any) -> dict[str, Any]:
    decision = await call(server, "POST", "/v1/calls", json={"operation": operation, "input": given})
    assert decision["decision"] == "pending", decision
    return decision["ask"]  # type: ignore[no-any-return]


def token() -> str:
    return "t" + uuid.uuid4().hex[:10]


def inbox(app: Tui) -> Inbox:
    return next(s for s in app.screen_stack if isinstance(s, Inbox))


def panel(app: Tui) -> str:
    return str(inbox(app).query_one("#detail", Static).content)


def rows(app: Tui) -> list[str]:
    table = inbox(app).query_one("#list", DataTable)
    return [" ".join(str(c) for c in table.get_row(r.key)) for r in table.ordered_rows]


async def until(pilot: Pilot[int], check: Callable[[], bool], what: str, timeout: float = 10) -> None:
    """Wait for what the screen should come to show (bounded; no fixed sleep)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        if loop.time() > end:
            raise AssertionError(f"the TUI never showed {what}; it shows:\n{screen_text(pilot)}")
        await pilot.pause(0.02)


def screen_text(pilot: Pilot[int]) -> str:
    app = pilot.app
    if not isinstance(app, Tui) or not any(isinstance(s, Inbox) for s in app.screen_stack):
        return "(no inbox)"
    return "\n".join([*rows(app), "--", panel(app), "--",
                      str(inbox(app).query_one("#status", Static).content)])


@asynccontextmanager
async def tui(server: Server) -> AsyncIterator[tuple[Tui, Pilot[int]]]:
    app = Tui(Api(server.url, OP))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: any(isinstance(s, Inbox) for s in app.screen_stack)
                    and inbox(app).live, "the live list")
        yield app, pilot


async def pick(pilot: Pilot[int], app: Tui, mark: str) -> None:
    """`/`, the mark, Enter: the list narrowed to the ask holding it, which is selected."""
    await pilot.press("slash", *mark, "enter")
    await until(pilot, lambda: mark in panel(app) and len(rows(app)) == 1, f"the ask {mark}")


async def test_the_list_and_the_panel_fit_80x24_and_show_the_ask_in_full(served: Server) -> None:
    mark = token()
    asked = await ask(served, question=f"Ship {mark} tonight?", options=["yes", "no", "later"],
                      context="CI is green")
    async with tui(served) as (app, pilot):
        await until(pilot, lambda: any(asked["ref"] in r for r in rows(app)), "the new ask")
        await pick(pilot, app, mark)
        row = rows(app)[0]
        assert row.startswith(asked["ref"]) and "24h" in row and "Ship" in row
        shown = panel(app)
        for part in (f"question: Ship {mark} tonight?", "context: CI is green", "1. yes",
                     "2. no", "3. later", "for: operator:local", "deadline:", "history:",
                     "created"):
            assert part in shown, part
        screen = inbox(app)
        for name in ("#left", "#right", "#keys", "#status"):
            region = screen.query_one(name).region
            assert region.right <= SIZE[0] and region.bottom <= SIZE[1], name
        keys = str(screen.query_one("#keys", Static).content)
        assert "1-3 picks an option" in keys and "q quit" in keys


async def test_a_digit_answers_a_choice_and_the_panel_says_it_was_taken(served: Server) -> None:
    mark = token()
    asked = await ask(served, question=f"Colour {mark}?", options=["red", "green"])
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        await pilot.press("2")
        await until(pilot, lambda: "taken: answered green" in panel(app), "the outcome")
        assert "answer: green  by operator:local" in panel(app)
        await pilot.press("1")  # closed now: nothing is sent, and the panel says why
        await until(pilot, lambda: "is answered: there is nothing to answer" in panel(app),
                    "why nothing was sent")
    seen = await call(served, "GET", f"/v1/asks/{asked['id']}", token=OP)
    assert seen["answer"]["value"] == "green"
    assert seen["surface"] == "tui"  # recorded as the TUI's answer, not the API's


async def test_asks_created_and_answered_elsewhere_show_live(served: Server) -> None:
    mark = token()
    async with tui(served) as (app, pilot):
        await pilot.press("slash", *mark, "enter")  # only this test's asks, as they come
        first = await ask(served, question=f"First {mark}?")
        await until(pilot, lambda: listed(app, first["ref"]), "a new ask")
        second = await ask(served, question=f"Second {mark}?", format="confirm")
        await until(pilot, lambda: listed(app, second["ref"]), "a second ask")
        assert [r.split()[0] for r in rows(app)] == [second["ref"], first["ref"]]  # newest first
        assert inbox(app).selected == first["id"]  # a new row above moves no selection
        await call(served, "POST", f"/v1/asks/{second['ref']}/answer", token=OP,
                   json={"answer": "yes"})
        await until(pilot, lambda: not listed(app, second["ref"]), "the answered ask leaving")
        assert inbox(app).selected == first["id"] and f"First {mark}?" in panel(app)
        await call(served, "POST", f"/v1/asks/{first['ref']}/answer", token=OP,
                   json={"answer": "done"})
        # The selected ask stays in view while selected, saying what became of it.
        await until(pilot, lambda: "answered elsewhere by operator:local" in panel(app),
                    "the selected ask answered elsewhere")
        assert rows(app) == [r for r in rows(app) if "(answered) First" in r]
        third = await ask(served, question=f"Third {mark}?")
        await until(pilot, lambda: listed(app, third["ref"]), "a third ask")
        assert inbox(app).selected == first["id"]
        await pilot.press("k")  # moved away: the closed one leaves the list
        await until(pilot, lambda: not listed(app, first["ref"]), "the closed ask leaving")
        assert f"Third {mark}?" in panel(app)


def listed(app: Tui, ref: str) -> bool:
    return any(r.split()[0] == ref for r in rows(app))


async def test_an_approval_shows_its_whole_input_and_a_refusal_takes_a_note(served: Server) -> None:
    mark = token()
    given = {"version": mark, "hosts": [f"web-{n}" for n in range(12)], "note": "[bold]x[/]"}
    pending = await approval(served, "deploy.prod", given)
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        shown = panel(app)
        assert "operation: deploy.prod" in shown and "input_sha256: " in shown
        assert all(f'"web-{n}"' in shown for n in range(12)) and '"[bold]x[/]"' in shown
        assert "Approval needed" in rows(app)[0]
        right = inbox(app).query_one("#right")
        await pilot.press("shift+down")  # the panel scrolls, keys only
        await until(pilot, lambda: right.scroll_y > 0, "the panel scrolled")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, Note), "the note dialog")
        await pilot.press(*"not today", "enter")
        # Words, not the code: `refused`, and the panel's outcome line says Refused.
        await until(pilot, lambda: "taken: refused" in panel(app), "the refusal taken")
        await until(pilot, lambda: "outcome: Refused" in panel(app), "the outcome in words")
        assert "outcome: approval_refused" not in panel(app)
    seen = await call(served, "GET", f"/v1/asks/{pending['id']}", token=OP)
    assert seen["outcome"] == "approval_refused" and seen["answer"]["note"] == "not today"
    assert seen["surface"] == "tui"


def painted(app: Tui) -> list[str]:
    """The list's lines as the terminal gets them (the table's rendering, not its cells)."""
    table = inbox(app).query_one("#list", DataTable)
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_ages_move_on_as_time_passes(served: Server) -> None:
    mark = token()
    asked = await ask(served, question=f"Tick {mark}?")
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        table = inbox(app).query_one("#list", DataTable)
        first = str(table.get_cell(asked["id"], "age"))
        assert first.endswith("s"), first  # seconds: it moves every second
        await until(pilot, lambda: str(table.get_cell(asked["id"], "age")) != first,
                    f"the age move on from {first}", timeout=5)
        await until(pilot, lambda: any(f" {asked['ref']} " in line
                                       and str(table.get_cell(asked["id"], "age")) in line
                                       for line in painted(app)), "the new age painted")


async def test_the_first_paint_keeps_approval_needed_and_the_question_in_view(
    tmp_path: Path, sqlite_template: Path,
) -> None:
    """At 80×24 the question column is as wide as what the other columns leave, from the first
    paint on. A paint can come before the table has measured new rows (on a loaded machine it
    did, on the first one): the test paints right after the rows go in, as the compositor
    then did, and looks at what the terminal shows once the table has settled."""
    (tmp_path / "aye.toml").write_text(CONFIG)
    server = await start_server(tmp_path, sqlite_at_head(sqlite_template, tmp_path))
    try:
        gone = await ask(server, question="Roll back release 41 everywhere?")
        await call(server, "DELETE", f"/v1/asks/{gone['id']}")
        short = await ask(server, question="Go?")  # the only open ask: a narrow list
        async with tui(server) as (app, pilot):
            await until(pilot, lambda: len(rows(app)) == 1, "the open ask")
            screen = inbox(app)
            closed = await call(server, "GET", f"/v1/asks/{gone['id']}", token=OP)
            screen.listing.everything = True  # as Tab does, with the withdrawn ask known
            screen.listing.apply(closed)
            screen.rebuild()
            painted(app)  # a paint at once, before the table is idle
            await pilot.pause(0.2)
            lines = painted(app)
            row = next(text for text in lines if text.startswith(f" {gone['ref']} "))
            assert "(withdrawn) Roll b" in row, lines
            assert any(text.startswith(f" {short['ref']} ") for text in lines)
            # Asked while the TUI is open, as they come in.
            needed = await approval(server, "deploy.stage", {"v": 2})
            longer = await ask(server, question="Promote build 42 to production?")
            await until(pilot, lambda: listed(app, longer["ref"]) and listed(app, needed["ref"]),
                        "the new asks")
            await pilot.pause(0.2)
            lines = painted(app)
            row = next(text for text in lines if text.startswith(f" {needed['ref']} "))
            assert "Approval needed: " in row, lines
            row = next(text for text in lines if text.startswith(f" {longer['ref']} "))
            assert "Promote build 42" in row, lines
            assert all(len(text) <= 36 for text in lines)  # nothing past the list's border
    finally:
        stop(server, signal.SIGKILL)


async def test_a_approves_and_a_refusal_by_the_server_shows_why(served: Server) -> None:
    pending = await approval(served, "quorum.run", {"mark": (mark := token())})
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        await pilot.press("a")
        await until(pilot, lambda: "taken: counted: approval 1 of 2" in panel(app), "a count")
        await pilot.press("a")
        await until(pilot, lambda: "refused: " in panel(app), "the server's refusal")
        assert "(already_approved)" in panel(app)
    seen = await call(served, "GET", f"/v1/asks/{pending['id']}", token=OP)
    assert seen["status"] == "open"


async def test_confirm_and_ack_keys(served: Server) -> None:
    mark, other = token(), token()
    confirm = await ask(served, question=f"Proceed {mark}?", format="confirm")
    ack = await ask(served, question=f"Noted {other}?", format="ack")
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        await pilot.press("c")  # not the key of a confirm: said, nothing sent
        await until(pilot, lambda: "c does not answer" in panel(app), "the wrong key's reason")
        await pilot.press("n")
        await until(pilot, lambda: "taken: answered no" in panel(app), "the no")
        await pilot.press("escape")
        await pick(pilot, app, other)
        await pilot.press("c")
        await until(pilot, lambda: "taken: answered ok" in panel(app), "the ack taken")
    assert (await call(served, "GET", f"/v1/asks/{confirm['id']}"))["answer"]["value"] is False
    assert (await call(served, "GET", f"/v1/asks/{ack['id']}"))["answer"]["value"] is True


async def test_enter_types_text_and_a_multi_misfit_shows_under_the_input(served: Server) -> None:
    mark = token()
    multi = await ask(served, question=f"Pick {mark}", options=["a", "b", "c"], format="multi",
                      min=1, max=2)
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, LineAnswer), "the answer input")
        await pilot.press(*"1, 2, 3", "enter")
        misfit = lambda: str(app.screen.query_one("#misfit", Static).content)  # noqa: E731
        await until(pilot, lambda: "refused" in misfit() or bool(misfit()), "the misfit")
        assert isinstance(app.screen, LineAnswer)  # still open, the text kept
        box = app.screen.query_one(Input)
        assert box.value == "1, 2, 3"
        box.value = ""
        await pilot.press(*"1, 3", "enter")
        await until(pilot, lambda: "taken: answered a, c" in panel(app), "the multi taken")
    seen = await call(served, "GET", f"/v1/asks/{multi['id']}")
    assert seen["answer"]["value"] == ["a", "c"]


async def test_a_form_has_one_input_per_field_and_a_misfit_shows_under_its_field(
    served: Server,
) -> None:
    mark = token()
    schema = {"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "dry": {"type": "boolean"}}}
    form = await ask(served, question=f"Release {mark}", format="form", schema=schema)
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FormAnswer), "the form")
        assert len(app.screen.query(Input)) == 3
        await pilot.press(*"eu", "tab", *"99", "tab", "y", "enter")
        under = lambda: str(app.screen.query_one("#misfit-1", Static).content)  # noqa: E731
        await until(pilot, lambda: bool(under()), "the count's misfit")
        assert "count" in under().lower() or "10" in under()
        assert not str(app.screen.query_one("#misfit-0", Static).content)
        app.screen.query_one("#field-1", Input).value = "3"
        await pilot.press("enter")
        await until(pilot, lambda: "taken: answered" in panel(app), "the form taken")
    seen = await call(served, "GET", f"/v1/asks/{form['id']}")
    assert seen["answer"]["value"] == {"region": "eu", "count": 3, "dry": True}


async def test_a_destructive_ask_asks_for_confirmation_first(served: Server) -> None:
    mark = token()
    danger = await ask(served, question=f"Drop {mark}?", format="confirm", danger=True)
    async with tui(served) as (app, pilot):
        await pick(pilot, app, mark)
        assert "destructive" in panel(app)
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
        await pilot.press("escape")  # cancelled: nothing sent
        await until(pilot, lambda: isinstance(app.screen, Inbox), "the inbox again")
        assert (await call(served, "GET", f"/v1/asks/{danger['id']}"))["status"] == "open"
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
        await pilot.press("enter")
        await until(pilot, lambda: "taken: answered yes" in panel(app), "the yes")
    assert (await call(served, "GET", f"/v1/asks/{danger['id']}"))["answer"]["value"] is True


async def test_tab_shows_every_ask_and_escape_clears_the_filter(served: Server) -> None:
    mark = token()
    gone = await ask(served, question=f"Gone {mark}?")
    await call(served, "DELETE", f"/v1/asks/{gone['id']}")
    async with tui(served) as (app, pilot):
        await pilot.press("slash", *mark, "enter")
        await until(pilot, lambda: not rows(app), "no open ask holding the mark")
        await pilot.press("tab")
        await until(pilot, lambda: len(rows(app)) == 1 and "(withdrawn)" in rows(app)[0],
                    "the withdrawn ask among all")
        assert "All asks (1) matching /" == inbox(app).query_one("#left").border_title
        await pilot.press("escape")
        await until(pilot, lambda: len(rows(app)) > 1, "the whole list again")


# -- exit codes, as the CLI's ----------------------------------------------------------------


def run_tui(tmp: Path, url: str, token_: str) -> subprocess.CompletedProcess[str]:
    env = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/unused.db", AYE_URL=url,
                   AYE_OPERATOR_TOKEN=token_)
    return subprocess.run([sys.executable, "-m", "bot", "tui"], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=30)


def test_with_nothing_listening_it_exits_3(tmp_path: Path) -> None:
    with nothing_listening() as refused:
        done = run_tui(tmp_path, refused, OP)
    assert done.returncode == 3 and "cannot reach aye" in done.stderr


def test_with_an_agents_token_it_exits_2(tmp_path: Path, served: Server) -> None:
    done = run_tui(tmp_path, served.url, AGENT)
    assert done.returncode == 2 and "not the operator token" in done.stderr
    assert AGENT not in done.stderr
