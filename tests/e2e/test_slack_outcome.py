"""What ran, on Slack: once the agent that used an approval reports it, the approval's message
says so beside who approved ("Approved by … · failed: <detail>", the agent's words escaped),
through the outbox and the real slack-sdk against the fake Slack on 127.0.0.1."""

from __future__ import annotations

from tests.conftest import AGENT_HEADERS, StartAye
from tests.e2e.test_slack_policy import all_accepted, call_and_post, gated, thread
from tests.e2e.test_slack_surface import RESPONDER, labels, poke_outbox, press, shown, start
from tests.fake_slack import FakeSlack


async def test_the_approval_message_shows_what_ran_after_it_was_used(
    fake_slack: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, fake_slack, config=gated())
    ask, call = await call_and_post(aye, fake_slack, thread(fake_slack))
    await press(fake_slack, RESPONDER, call, "Approve")
    closed = await fake_slack.wait_for_call("chat.update", lambda c: c.ok and labels(c.args) == [])
    assert f"Approved by <@{RESPONDER}>." in shown(closed.args)

    body = {"operation": "deploy.prod", "input": {"v": 2}, "work": ask["work"]}
    resp = await aye.client.post("/v1/calls", json=body, headers=AGENT_HEADERS)
    assert (await resp.json())["decision"] == "allow"
    after = len(fake_slack.calls)
    resp = await aye.client.post("/v1/calls/outcome", headers=AGENT_HEADERS, json={
        "approval": ask["id"], "outcome": "failed", "detail": "exit 3 <!channel> & co"})
    assert resp.status == 200, await resp.text()
    poke_outbox(aye)
    updated = await fake_slack.wait_for_call("chat.update", lambda c: c.ok, after=after)
    text = shown(updated.args)
    assert f"Approved by <@{RESPONDER}> · failed: exit 3 &lt;!channel&gt; &amp; co." in text
    assert updated.args["ts"] == call.response["ts"] and labels(updated.args) == []
    all_accepted(fake_slack)
