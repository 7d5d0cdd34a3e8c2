"""The fake Slack speaks the wire protocols of the real slack-sdk and slack-bolt."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from tests.fake_slack import (
    APP_TOKEN,
    BOT_TOKEN,
    BOT_USER_ID,
    FakeSlack,
    block_actions_payload,
    view_submission_payload,
)

CHANNEL = "C111"
ASK_METADATA = {"event_type": "aye_ask", "event_payload": {"ask_id": "ask-1"}}
BUTTONS = [
    {
        "type": "actions",
        "block_id": "ask-1-choices",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "text": {"type": "plain_text", "text": "Approve"},
                "value": "yes",
                "style": "primary",
            },
            {
                "type": "button",
                "action_id": "open_modal",
                "text": {"type": "plain_text", "text": "Answer…"},
                "value": "ask-1",
            },
        ],
    }
]
ANSWER_MODAL = {
    "type": "modal",
    "callback_id": "answer_modal",
    "private_metadata": "ask-1",
    "title": {"type": "plain_text", "text": "Answer"},
    "submit": {"type": "plain_text", "text": "Send"},
    "blocks": [
        {
            "type": "input",
            "block_id": "answer",
            "label": {"type": "plain_text", "text": "Your answer"},
            "element": {"type": "plain_text_input", "action_id": "text"},
        }
    ],
}
CONNECT_TIMEOUT = 5.0


@pytest.fixture
async def http_session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def client(fake_slack: FakeSlack, http_session: aiohttp.ClientSession) -> AsyncWebClient:
    return AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.api_url, session=http_session)


def build_app(client: AsyncWebClient, submitted: asyncio.Queue[str]) -> AsyncApp:
    """A bolt app like aye's: ack first, then the work."""
    app = AsyncApp(client=client)

    @app.action("approve")
    async def approve(
        ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, respond: AsyncRespond
    ) -> None:
        await ack()
        await client.chat_postEphemeral(
            channel=body["channel"]["id"],
            user=body["user"]["id"],
            text=f"{body['actions'][0]['value']} on {body['message']['ts']}",
        )
        await respond(text="recorded")

    @app.action("open_modal")
    async def open_modal(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=ANSWER_MODAL)

    @app.view("answer_modal")
    async def answer(ack: AsyncAck, view: dict[str, Any]) -> None:
        text = view["state"]["values"]["answer"]["text"]["value"]
        if len(text) < 3:
            await ack(response_action="errors", errors={"answer": "Too short"})
            return
        await ack()
        await submitted.put(f"{view['private_metadata']}:{text}")

    return app


@asynccontextmanager
async def socket_mode(app: AsyncApp, ping_interval: float = 10) -> AsyncIterator[None]:
    # Built here, inside the running loop: the handler starts a task in __init__.
    handler = AsyncSocketModeHandler(app, APP_TOKEN, ping_interval=ping_interval)
    # bolt leaves connect_async()/close_async() unannotated, hence the type: ignores.
    try:
        # With a bad xapp- token connect_async() retries forever: bound it.
        await asyncio.wait_for(handler.connect_async(), CONNECT_TIMEOUT)  # type: ignore[no-untyped-call]
        yield
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]


async def post_ask(client: AsyncWebClient) -> str:
    posted = await client.chat_postMessage(
        channel=CHANNEL, text="Deploy?", blocks=BUTTONS, metadata=ASK_METADATA
    )
    return str(posted["ts"])


# -- Web API ------------------------------------------------------------------------------------


async def test_thread_replies_return_parent_metadata_and_replies(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    parent_ts = await post_ask(client)
    reply = await client.chat_postMessage(channel=CHANNEL, thread_ts=parent_ts, text="approved")

    thread = await client.conversations_replies(channel=CHANNEL, ts=parent_ts, include_all_metadata=True)

    parent, answer = thread["messages"]
    assert parent["ts"] == parent_ts
    assert parent["metadata"] == ASK_METADATA
    assert parent["blocks"] == BUTTONS
    assert parent["reply_count"] == 1
    assert answer["ts"] == reply["ts"] > parent_ts
    assert answer["thread_ts"] == parent_ts
    assert answer["text"] == "approved"
    assert answer["user"] == BOT_USER_ID
    plain = await client.conversations_replies(channel=CHANNEL, ts=reply["ts"])
    assert [m["ts"] for m in plain["messages"]] == [parent_ts, reply["ts"]]
    assert "metadata" not in plain["messages"][0]


async def test_history_is_newest_first_without_replies_and_pages(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    first = await post_ask(client)
    await client.chat_postMessage(channel=CHANNEL, thread_ts=first, text="in thread")
    second = (await client.chat_postMessage(channel=CHANNEL, text="second"))["ts"]
    third = (await client.chat_postMessage(channel=CHANNEL, text="third"))["ts"]

    page1 = await client.conversations_history(channel=CHANNEL, limit=2, include_all_metadata=True)
    cursor = page1["response_metadata"]["next_cursor"]
    page2 = await client.conversations_history(
        channel=CHANNEL, limit=2, cursor=cursor, include_all_metadata=True
    )

    assert [m["ts"] for m in page1["messages"]] == [third, second]
    assert page1["has_more"] is True
    assert [m["ts"] for m in page2["messages"]] == [first]
    assert page2["messages"][0]["metadata"] == ASK_METADATA
    assert page2["has_more"] is False
    assert page2["response_metadata"]["next_cursor"] == ""
    empty = await client.conversations_history(channel="C999")
    assert empty["messages"] == []


async def test_form_encoded_metadata_is_stored_parsed(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    await client.api_call(
        "chat.postMessage",
        data={"channel": CHANNEL, "text": "form", "metadata": json.dumps(ASK_METADATA)},
    )

    (stored,) = fake_slack.messages(CHANNEL)
    assert stored["metadata"] == ASK_METADATA
    (call,) = fake_slack.calls_to("chat.postMessage")
    assert call.args["metadata"] == ASK_METADATA
    assert call.token == BOT_TOKEN
    assert call.ok


async def test_update_changes_the_stored_message_and_refuses_unknown_ones(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    ts = await post_ask(client)

    await client.chat_update(channel=CHANNEL, ts=ts, text="Deploy? Approved", blocks=[])

    updated = fake_slack.message(CHANNEL, ts)
    assert updated is not None
    assert (updated["text"], updated["blocks"]) == ("Deploy? Approved", [])
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel=CHANNEL, ts="1.000001", text="x")
    assert raised.value.response["error"] == "message_not_found"


async def test_unknown_method_is_refused_and_recorded(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.api_call("reactions.nope", json={"name": "eyes"})

    assert raised.value.response["error"] == "unknown_method"
    assert fake_slack.calls_to("reactions.nope")[0].args == {"name": "eyes"}


async def test_tokens_are_checked(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    assert (await client.auth_test())["user_id"] == BOT_USER_ID

    with pytest.raises(SlackApiError) as wrong_kind:
        await client.chat_postMessage(channel=CHANNEL, text="x", token=APP_TOKEN)
    with pytest.raises(SlackApiError) as bot_token_for_socket:
        await client.apps_connections_open(app_token=BOT_TOKEN)
    fake_slack.bot_token = "xoxb-rotated"
    with pytest.raises(SlackApiError) as revoked:
        await client.auth_test()

    assert wrong_kind.value.response["error"] == "not_allowed_token_type"
    assert bot_token_for_socket.value.response["error"] == "not_allowed_token_type"
    assert revoked.value.response["error"] == "invalid_auth"
    opened = await client.apps_connections_open(app_token=APP_TOKEN)
    assert opened["url"].startswith(fake_slack.ws_url)


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


async def test_an_over_long_section_is_refused_as_slack_refuses_it(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    ts = await post_ask(client)

    with pytest.raises(SlackApiError) as posted:
        await client.chat_postMessage(channel=CHANNEL, text="x", blocks=[section("x" * 3001)])
    with pytest.raises(SlackApiError) as updated:
        await client.chat_update(channel=CHANNEL, ts=ts, text="x", blocks=[section("x" * 3001)])
    with pytest.raises(SlackApiError) as told:
        await client.chat_postEphemeral(
            channel=CHANNEL, user="U123", text="x", blocks=[section("x"), section("x" * 3001)]
        )

    for refused in (posted, updated, told):
        assert refused.value.response.status_code == 200
        assert refused.value.response["error"] == "invalid_blocks"
    assert posted.value.response["response_metadata"]["messages"] == [
        "[ERROR] text attribute cannot exceed 3000 characters [json-pointer:/blocks/0]"
    ]
    assert told.value.response["response_metadata"]["messages"][0].endswith("/blocks/1]")
    # Nothing refused is stored; the message keeps its blocks.
    assert [m["ts"] for m in fake_slack.messages(CHANNEL)] == [ts]
    assert fake_slack.message(CHANNEL, ts)["blocks"] == BUTTONS  # type: ignore[index]
    assert fake_slack.ephemerals == []
    # 3,000 is Slack's limit, not beyond it.
    assert (await client.chat_postMessage(channel=CHANNEL, text="x", blocks=[section("x" * 3000)]))["ok"]


@pytest.mark.parametrize(
    "blocks",
    [
        [{"type": "actions", "elements": [{"type": "button", "action_id": "a", "value": "v",
                                           "text": {"type": "plain_text", "text": "x" * 76}}]}],
        [{"type": "context", "elements": [{"type": "mrkdwn", "text": "x"}] * 11}],
        [section("x")] * 51,
        [{"type": "no_such_block"}],
        [{"type": "section"}],
        ["not a block"],
    ],
    ids=["button-text", "context-elements", "too-many-blocks", "unknown-type", "no-text", "not-object"],
)
async def test_blocks_slack_refuses_are_refused(
    fake_slack: FakeSlack, client: AsyncWebClient, blocks: list[Any]
) -> None:
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=CHANNEL, text="x", blocks=blocks)

    assert refused.value.response["error"] == "invalid_blocks"
    assert fake_slack.messages(CHANNEL) == []


async def test_a_view_slack_refuses_is_not_opened(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    long_title = {**ANSWER_MODAL, "title": {"type": "plain_text", "text": "x" * 25}}
    long_section = {**ANSWER_MODAL, "blocks": [section("x" * 3001)]}

    for view in (long_title, long_section):
        with pytest.raises(SlackApiError) as refused:
            await client.views_open(trigger_id="1.2.3", view=view)
        assert refused.value.response["error"] == "invalid_arguments"
        assert refused.value.response["response_metadata"]["messages"][0].startswith("[ERROR] ")

    assert fake_slack.views == {}
    opened = await client.views_open(trigger_id="1.2.3", view=ANSWER_MODAL)
    with pytest.raises(SlackApiError):
        await client.views_update(view_id=opened["view"]["id"], view=long_title)
    assert fake_slack.views[opened["view"]["id"]]["title"]["text"] == "Answer"


# -- fault injection ----------------------------------------------------------------------------


async def test_rate_limit_is_retried_after_retry_after(
    fake_slack: FakeSlack,
    http_session: aiohttp.ClientSession,
) -> None:
    client = AsyncWebClient(
        token=BOT_TOKEN,
        base_url=fake_slack.api_url,
        session=http_session,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    fake_slack.fail_next("chat.postMessage", status=429, retry_after=1)
    loop = asyncio.get_running_loop()

    started = loop.time()
    posted = await client.chat_postMessage(channel=CHANNEL, text="hello")

    assert loop.time() - started >= 1
    assert posted["ok"]
    assert [c.status for c in fake_slack.calls_to("chat.postMessage")] == [429, 200]
    assert [m["text"] for m in fake_slack.messages(CHANNEL)] == ["hello"]


async def test_rate_limit_without_retry_handler_reports_retry_after(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    fake_slack.fail_next("chat.postMessage", retry_after=7)

    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel=CHANNEL, text="hello")

    assert raised.value.response.status_code == 429
    assert raised.value.response.headers["Retry-After"] == "7"
    assert raised.value.response["error"] == "ratelimited"
    assert fake_slack.messages(CHANNEL) == []


async def test_server_error_is_retried(
    fake_slack: FakeSlack,
    http_session: aiohttp.ClientSession,
) -> None:
    client = AsyncWebClient(
        token=BOT_TOKEN,
        base_url=fake_slack.api_url,
        session=http_session,
        retry_handlers=[AsyncServerErrorRetryHandler(max_retry_count=1)],
    )
    fake_slack.fail_next("chat.postMessage", status=503)

    await client.chat_postMessage(channel=CHANNEL, text="hello")

    assert [c.status for c in fake_slack.calls_to("chat.postMessage")] == [503, 200]


async def test_injected_error_applies_once(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    fake_slack.fail_next("auth.test", error="invalid_auth")

    with pytest.raises(SlackApiError) as raised:
        await client.auth_test()

    assert raised.value.response.status_code == 200
    assert raised.value.response["error"] == "invalid_auth"
    assert (await client.auth_test())["ok"]


async def test_wait_for_call_sees_past_calls_and_times_out(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    await client.auth_test()

    first = await fake_slack.wait_for_call("auth.test")
    waiting = asyncio.ensure_future(fake_slack.wait_for_calls("auth.test", 2))
    await client.auth_test()
    both = await waiting

    assert both[0] is first
    with pytest.raises(TimeoutError, match=r"chat\.postMessage"):
        await fake_slack.wait_for_call("chat.postMessage", timeout=0.05)
    with pytest.raises(TimeoutError):
        await fake_slack.wait_for_call("auth.test", after=len(fake_slack.calls), timeout=0.05)


# -- Socket Mode --------------------------------------------------------------------------------


async def test_button_press_reaches_the_bolt_listener(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    app = build_app(client, asyncio.Queue())
    ts = await post_ask(client)

    async with socket_mode(app):
        await fake_slack.wait_connected()
        ack = await fake_slack.press_button("U123", "approve", "yes", CHANNEL, ts)
        ephemeral = await fake_slack.wait_for_call("chat.postEphemeral")
        response = await fake_slack.wait_for_call("response_url")

    envelope = fake_slack.envelopes[-1]
    assert ack == {"envelope_id": envelope["envelope_id"]}
    assert envelope["accepts_response_payload"] is False
    assert envelope["payload"]["actions"][0]["block_id"] == "ask-1-choices"
    assert envelope["payload"]["response_url"].startswith(fake_slack.base_url)
    assert ephemeral.args["user"] == "U123"
    assert ephemeral.args["channel"] == CHANNEL
    assert ephemeral.args["text"] == f"yes on {ts}"
    assert response.args["text"] == "recorded"
    # bolt checks its token with auth.test before the first listener runs.
    assert fake_slack.calls_to("auth.test")[0].ok


async def test_view_submission_ack_carries_the_response_action(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    submitted: asyncio.Queue[str] = asyncio.Queue()
    app = build_app(client, submitted)
    ts = await post_ask(client)

    async with socket_mode(app):
        await fake_slack.press_button("U123", "open_modal", "ask-1", CHANNEL, ts)
        opened = await fake_slack.wait_for_call("views.open")
        rejected = await fake_slack.submit_view("U123", {"answer": {"text": "no"}})
        accepted = await fake_slack.submit_view("U123", {"answer": {"text": "ship it"}})
        answer = await asyncio.wait_for(submitted.get(), 5)

    assert opened.args["view"]["callback_id"] == "answer_modal"
    assert fake_slack.envelopes[-1]["accepts_response_payload"] is True
    assert rejected["payload"] == {"response_action": "errors", "errors": {"answer": "Too short"}}
    assert "payload" not in accepted
    assert answer == "ask-1:ship it"


@pytest.mark.parametrize("abrupt", [False, True], ids=["close-frame", "tcp-cut"])
async def test_client_reconnects_after_connections_drop(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
    abrupt: bool,
) -> None:
    app = build_app(client, asyncio.Queue())
    ts = await post_ask(client)

    # A short ping interval lets the client notice a cut TCP connection quickly.
    async with socket_mode(app, ping_interval=0.5):
        await fake_slack.press_button("U123", "approve", "yes", CHANNEL, ts)
        await fake_slack.drop_connections(abrupt=abrupt)
        await fake_slack.wait_connected(timeout=10, opened=2)
        await fake_slack.press_button("U456", "approve", "yes", CHANNEL, ts)
        ephemerals = await fake_slack.wait_for_calls("chat.postEphemeral", 2)

    assert [c.args["user"] for c in ephemerals] == ["U123", "U456"]
    assert len(fake_slack.calls_to("apps.connections.open")) == 2


async def test_disconnect_message_makes_the_client_rotate(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    app = build_app(client, asyncio.Queue())
    ts = await post_ask(client)

    async with socket_mode(app):
        await fake_slack.wait_connected()
        await fake_slack.send_disconnect()
        await fake_slack.wait_connected(opened=2)
        await fake_slack.press_button("U123", "approve", "yes", CHANNEL, ts)
        await fake_slack.wait_for_call("chat.postEphemeral")

    assert fake_slack.connections_opened == 2


async def test_press_without_a_listener_gets_no_ack(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    app = build_app(client, asyncio.Queue())
    ts = await post_ask(client)

    async with socket_mode(app):
        with pytest.raises(TimeoutError, match="no ack"):
            await fake_slack.press_button("U123", "unknown", "x", CHANNEL, ts, timeout=0.5)


# -- payload builders ---------------------------------------------------------------------------


def test_block_actions_payload_takes_the_button_from_the_message() -> None:
    message = {"ts": "5.000100", "text": "Deploy?", "blocks": BUTTONS}

    payload = block_actions_payload(
        "U9", "approve", "yes", channel="C9", message_ts="5.000100", message=message
    )

    action = payload["actions"][0]
    assert payload["type"] == "block_actions"
    assert payload["user"]["id"] == "U9"
    assert payload["container"]["channel_id"] == payload["channel"]["id"] == "C9"
    assert payload["container"]["message_ts"] == "5.000100"
    assert payload["message"] == message
    assert (action["block_id"], action["value"], action["style"]) == (
        "ask-1-choices",
        "yes",
        "primary",
    )
    assert action["text"]["text"] == "Approve"


async def test_a_press_and_a_submission_can_come_from_another_team(
    fake_slack: FakeSlack,
    client: AsyncWebClient,
) -> None:
    app = build_app(client, asyncio.Queue())
    ts = await post_ask(client)

    async with socket_mode(app):
        await fake_slack.press_button("U123", "approve", "yes", CHANNEL, ts, team_id="T0OTHER")
        await fake_slack.press_button("U123", "open_modal", "ask-1", CHANNEL, ts)
        await fake_slack.wait_for_call("views.open")
        await fake_slack.submit_view("U123", {"answer": {"text": "hello"}}, team_id="T0OTHER")

    pressed, own, submitted = (e["payload"] for e in fake_slack.envelopes)
    assert (pressed["user"]["team_id"], pressed["team"]["id"]) == ("T0OTHER", "T0OTHER")
    assert (own["user"]["team_id"], own["team"]["id"]) == (fake_slack.team_id,) * 2
    assert (submitted["user"]["team_id"], submitted["team"]["id"]) == ("T0OTHER", "T0OTHER")


def test_view_submission_payload_builds_state_and_blocks() -> None:
    choice = {"type": "static_select", "selected_option": {"value": "b"}}

    payload = view_submission_payload(
        "U9", "cb", "ask-9", {"answer": {"text": "hi"}, "pick": {"menu": choice}}
    )

    view = payload["view"]
    assert (view["callback_id"], view["private_metadata"]) == ("cb", "ask-9")
    assert view["state"]["values"]["answer"]["text"] == {"type": "plain_text_input", "value": "hi"}
    assert view["state"]["values"]["pick"]["menu"] == choice
    assert [b["block_id"] for b in view["blocks"]] == ["answer", "pick"]
