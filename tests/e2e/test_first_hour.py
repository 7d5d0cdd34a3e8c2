"""The first hour, without a browser: destructive asks over the API and the inbox's plain-HTML
confirm step, the inbox's title count, search (`?q=`), closed approvals labelled by outcome and
by what ran, and `aye mcp` answering "no token" before it loads the MCP SDK."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import update

from bot.config import Config
from store.models import AskRow
from tests.conftest import AGENT_HEADERS
from tests.e2e.test_web_pages import call
from tests.unit.test_web_harness import Forms, Operator, StartInbox, alert, inboxes

DANGER_GATES = Config.model_validate({"gates": [
    {"operations": ["db.drop"], "danger": True},
    {"operations": ["deploy."]},
]})


@pytest.fixture
async def start_inbox() -> AsyncIterator[StartInbox]:
    async with inboxes() as start:
        yield start


# -- destructive asks over the API ------------------------------------------------------------


async def test_danger_is_taken_shown_and_checked(start_inbox: StartInbox, database_url: str) -> None:
    aye = await start_inbox(database_url, DANGER_GATES)
    marked = await aye.ask(question="Wipe the staging database?", format="confirm", danger=True)
    assert marked["danger"] is True and (await aye.get(marked["ref"]))["danger"] is True
    plain = await aye.ask(question="Lunch?", format="confirm")
    assert "danger" not in plain
    bad = await aye.ask(expect=422, question="Wipe?", danger="yes")
    assert (bad["error"], bad["field"]) == ("invalid_field", "danger")
    pinned = {"type": "object", "properties": {"ref": {"const": "inv-42"}}, "required": ["ref"]}
    external = await aye.ask(expect=422, question="Signed?", format="external", verifier="docsign",
                             schema=pinned, danger=True)
    assert external["field"] == "danger"  # an outside system answers: no control to mark
    resp = await aye.client.post("/v1/calls", json={"operation": "db.drop", "input": {"db": "x"}},
                                 headers=AGENT_HEADERS)
    assert resp.status == 202 and (await resp.json())["ask"]["danger"] is True
    resp = await aye.client.post("/v1/calls", json={"operation": "deploy.prod", "input": {}},
                                 headers=AGENT_HEADERS)
    assert "danger" not in (await resp.json())["ask"]


async def test_without_script_a_destructive_answer_goes_only_once_confirmed(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, DANGER_GATES)
    ref = await call(aye, "db.drop", {"db": "staging"})
    operator = Operator(aye)
    await operator.sign_in()
    html = await operator.page()
    assert '<button type="submit" name="answer" value="approve" class="danger" data-confirm=' in html
    assert '<button type="submit" name="answer" value="refuse">Refuse</button>' in html
    form = operator.form(html, ref)
    resp = await aye.client.post(form.action, data=form.data("Approve", {"Note": "backed up"}, set()),
                                 allow_redirects=False)
    page = await resp.text()
    assert resp.status == 200 and "Are you sure?" in page and "Approve db.drop?" in page
    assert (await aye.get(ref, operator=True))["status"] == "open"  # nothing answered yet
    confirm = next(f for f in Forms(page).forms if f.action == f"/inbox/{ref}/answer")
    resp = await aye.client.post(confirm.action, data=confirm.data("Yes, go ahead", {}, set()),
                                 allow_redirects=False)
    assert resp.status == 303
    assert alert(await operator.page(resp.headers["Location"])) == f"{ref} Answered: approved"
    view = await aye.get(ref, operator=True)
    assert (view["outcome"], view["answer"]["note"]) == ("approved", "backed up")
    # Refusing a destructive ask needs no confirmation.
    other = await call(aye, "db.drop", {"db": "prod"})
    assert await operator.answer(other, "Refuse") == f"{other} Answered: refused"


# -- the inbox: count, search, outcomes ---------------------------------------------------------


async def test_the_title_counts_open_asks_and_search_finds_words_refs_and_agents(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, DANGER_GATES)
    gpu = (await aye.ask(question="Spend $40 on a GPU tonight?", options=["yes", "no"]))["ref"]
    csv = (await aye.ask(question="Close #412?", context="CSV export 100% broken"))["ref"]
    deploy = await call(aye, "deploy.prod", {"version": "1.4.2"})
    operator = Operator(aye)
    await operator.sign_in()
    assert "<title>(3) aye inbox</title>" in await operator.page()
    assert (await aye.answer(gpu, "yes"))[0] == 200
    assert "<title>(2) aye inbox</title>" in await operator.page()

    async def found(query: str, status: str = "") -> list[str]:
        html = await operator.page(f"/inbox?q={query}{status}")
        return [f.action.split("/")[2] for f in Forms(html).forms if f.action.endswith("/answer")]

    assert await found("csv") == [csv]  # the context, case folded
    assert await found("100%25") == [csv]  # a % is a character, not a wildcard
    assert await found("DEPLOY.PROD") == [deploy]
    assert await found(deploy) == [deploy]
    assert await found("default") == [deploy, csv]  # the agent's name
    assert await found("GPU") == []  # answered: not open
    html = await operator.page("/inbox?q=GPU&status=all")
    assert gpu in html and "Answered by the operator: yes" in html
    assert 'No ask matches “nothing-like-this”' in await operator.page("/inbox?q=nothing-like-this")
    assert '<input id="q" name="q" type="search" value="csv"' in await operator.page("/inbox?q=csv")


async def test_a_closed_approval_is_labelled_by_its_outcome_and_what_ran(
    start_inbox: StartInbox, database_url: str
) -> None:
    aye = await start_inbox(database_url, DANGER_GATES)
    approved, refused = (await call(aye, "deploy.prod", {"n": 1}), await call(aye, "deploy.prod", {"n": 2}))
    assert (await aye.answer(approved, "approve"))[0] == 200
    assert (await aye.answer(refused, "refuse"))[0] == 200
    operator = Operator(aye)
    await operator.sign_in()
    html = await operator.page("/inbox?status=all")
    assert '<span class="badge is-approved">Approved</span>' in html
    assert '<span class="badge is-refused">Refused</span>' in html
    assert "Approval needed" not in html
    # What ran, as the agent reported it (POST /v1/calls/outcome writes these columns).
    async with aye.asks.parts.store.write() as conn:
        await conn.execute(update(AskRow.__table__).where(  # type: ignore[attr-defined]
            AskRow.__table__.c.seq == int(approved[1:])).values(  # type: ignore[attr-defined]
            run_outcome="failed", run_detail="<b>disk full</b>", run_at=aye.clock.now()))
    html = await operator.page(f"/inbox/{approved}")
    assert "Approved by the operator · failed: &lt;b&gt;disk full&lt;/b&gt;" in html


# -- aye mcp -------------------------------------------------------------------------------------


def test_aye_mcp_without_a_token_says_so_before_loading_the_mcp_sdk(tmp_path: Path) -> None:
    probe = ("import sys\nfrom bot.cli.mcp import run\ncode = run()\n"
             "print(code, 'mcp' in sys.modules, 'aiohttp' in sys.modules)")
    env = {"PATH": "/usr/bin:/bin", "AYE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/aye.db",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    assert done.stderr.startswith("aye: no agent token: set AYE_AGENT_TOKEN, or AYE_DATABASE_URL")
    assert str(tmp_path / "aye-tokens.json") in done.stderr

