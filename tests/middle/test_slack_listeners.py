"""Slack's listeners called directly, as bolt calls them: a recording `ack`, a recording Web API
client, the real interaction payloads (tests/fixtures/slack, through tests/fake_slack.py's
builders) and bolt's context holding the core, over a real store (SQLite and PostgreSQL).

What is asserted is what a person sees: the ack, the answer taken or not, and the one line
told to them alone. The socket path (Socket Mode, the Web API over HTTP) is
tests/e2e/test_slack_surface.py's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web.async_client import AsyncWebClient

from core.app.parts import Parts
from core.app.service import Service
from core.domain import rules
from core.domain.answering import Attempt
from core.domain.policy import Defaults, Gate
from core.domain.responders import OPERATOR
from core.domain.types import AgentInfo, NewAsk
from handlers.slack import actions, blocks, buttons, modals, replies, views
from handlers.slack.answer_taking import ASKS, TEAMS
from handlers.slack.settings import SURFACE, SlackSection, SlackSettings
from handlers.slack.surface import SlackSurface
from store.db import Store
from store.models import AskRow
from tests import builders
from tests.fake_slack import TEAM_ID, block_actions_payload, view_submission_payload

RESPONDER = "U0123ABCD"
STRANGER = "U0NOTYOU1"
CHANNEL = "C1"
THREAD_TS = "1.2"  # the agent's thread
POST_TS = "1.3"  # aye's post of the ask in it
TRIGGER_ID = "111.222.valid"
WORK = {"slack": {"channel": CHANNEL, "thread_ts": THREAD_TS}}
UNKNOWN_ID = "f" * 32
NOT_ASKED = "you are not one of the people this is for"


# -- what bolt hands a listener -----------------------------------------------------------------


@dataclass
class Seen:
    """Everything the listener did that Slack would see, in order: acks and Web API calls."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [kw for called, kw in self.calls if called == name]


class RecordingAck:
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def __call__(self, **kw: Any) -> None:
        self.seen.calls.append(("ack", kw))


class RecordingClient:
    """The two Web API methods the listeners call."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def chat_postEphemeral(self, **kw: Any) -> dict[str, Any]:
        self.seen.calls.append(("chat_postEphemeral", kw))
        return {"ok": True, "message_ts": "1.4"}

    async def views_open(self, **kw: Any) -> dict[str, Any]:
        self.seen.calls.append(("views_open", kw))
        return {"ok": True, "view": {"id": "V1"}}


@dataclass
class Bolt:
    """One listener call's arguments, and the core they reach."""

    asks: Service
    seen: Seen = field(default_factory=Seen)

    @property
    def ack(self) -> Any:
        return RecordingAck(self.seen)

    @property
    def client(self) -> Any:
        return RecordingClient(self.seen)

    # The teams whose members may answer: aye's own (the payloads' default team) unless a
    # test says otherwise.
    teams: frozenset[str] = frozenset({TEAM_ID})

    @property
    def context(self) -> AsyncBoltContext:
        # What the middleware of handlers.slack.surface puts in every request's context.
        return AsyncBoltContext({ASKS: self.asks, TEAMS: self.teams})

    def told(self) -> list[dict[str, Any]]:
        return self.seen.of("chat_postEphemeral")

    async def press(self, ask_or_value: AskRow | str, label: str | None = None,
                    user: str = RESPONDER) -> None:
        body, action = pressed(ask_or_value, label, user)
        listener = {
            buttons.ANSWER_ACTION: actions.open_answer_form,
            buttons.REFUSE_ACTION: actions.open_refusal,
        }.get(action["action_id"], actions.press_option)
        if action["action_id"].startswith(buttons.WORD_ACTION):
            listener = actions.press_word
        await listener(
            ack=self.ack, body=body, action=action, client=self.client, context=self.context
        )

    async def submit(self, ask_id: str, text: str | None, user: str = RESPONDER) -> None:
        body = submitted(ask_id, text, user)
        await views.submit_answer(
            ack=self.ack, body=body, view=body["view"], client=self.client, context=self.context
        )

    async def submit_view(self, view: dict[str, Any], values: dict[str, Any],
                          user: str = RESPONDER) -> None:
        """Submit a modal aye built (`view`) with `values[block_id][action_id]` filled in."""
        body = view_submission_payload(
            user, view["callback_id"], view["private_metadata"], values, blocks=view["blocks"],
            trigger_id=TRIGGER_ID,
        )
        listener = {
            modals.ANSWER_CALLBACK: views.submit_answer, modals.REFUSE_CALLBACK: views.submit_refusal,
        }[view["callback_id"]]
        await listener(
            ack=self.ack, body=body, view=body["view"], client=self.client, context=self.context
        )

    def opened(self) -> dict[str, Any]:
        """The view of the last views.open."""
        view: dict[str, Any] = self.seen.of("views_open")[-1]["view"]
        return view


@pytest.fixture
async def asks(database_url: str) -> AsyncIterator[Service]:
    store = Store(database_url)
    await store.open()
    # The operator makes every ask reachable without a running Slack surface.
    defaults = Defaults.model_validate({"responders": [f"slack:{RESPONDER}", "operator:local"]})
    core = Service(Parts.build(store, defaults, [Gate.model_validate({"operations": ["deploy."]})]))
    try:
        yield core
    finally:
        await store.close()


@pytest.fixture
def bolt(asks: Service) -> Bolt:
    return Bolt(asks)


async def ask_question(asks: Service, options: list[str] | None = None, **more: Any) -> AskRow:
    new = NewAsk(question="Deploy now?", options=options, work=WORK, **more)
    ask, created = await asks.create_question(AgentInfo("a"), new)
    assert created
    return ask


async def ask_approval(asks: Service, call_input: Any = None) -> AskRow:
    """The approval of one call of `deploy.prod`, as the gate creates it."""
    decision = await asks.call(AgentInfo("a"), "deploy.prod", call_input or {"version": "1.4.2"}, WORK)
    assert decision.decision == "pending" and decision.ask is not None
    return decision.ask


async def now(asks: Service, ask: AskRow) -> AskRow:
    found = await asks.by_seq(ask.seq or 0)
    assert found is not None
    return found


def message_of(ask: AskRow) -> dict[str, Any]:
    """aye's post of the ask in the agent's thread, as Slack includes it in a press."""
    posted = blocks.question_message(ask, rules.ref(ask))
    return {
        "type": "message", "user": "U0AYEBOT", "ts": POST_TS, "thread_ts": THREAD_TS,
        "text": posted.text, "blocks": posted.blocks, "metadata": posted.metadata,
    }


def pressed(
    ask_or_value: AskRow | str, label: str | None, user: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(body, action) of a press on the button labelled `label` of the ask's post, or, given a
    button value instead of an ask, on an option button carrying that value."""
    if isinstance(ask_or_value, str):
        action_id, value, message = f"{buttons.OPTION_ACTION}1", ask_or_value, None
    else:
        message = message_of(ask_or_value)
        action_id, value = button(message, label or "")
    body = block_actions_payload(
        user, action_id, value, channel=CHANNEL, message_ts=POST_TS, message=message,
        trigger_id=TRIGGER_ID,
    )
    return body, body["actions"][0]


def button(message: dict[str, Any], label: str) -> tuple[str, str]:
    for block in message["blocks"]:
        for element in block.get("elements") or []:
            if element.get("type") == "button" and element["text"]["text"] == label:
                return element["action_id"], element["value"]
    raise AssertionError(f"no button {label!r}")


def submitted(ask_id: str, text: str | None, user: str) -> dict[str, Any]:
    """The answer form submitted with `text` typed in it (None: the field left untouched)."""
    modal = modals.answer_modal(builders.question(id=ask_id, options=None), "q1")
    assert modal is not None
    return view_submission_payload(
        user, modals.ANSWER_CALLBACK, ask_id, {modals.ANSWER_BLOCK: {modals.TEXT_INPUT: text}},
        blocks=modal["blocks"], trigger_id=TRIGGER_ID,
    )


def told(text: str, user: str = RESPONDER) -> dict[str, Any]:
    """The ephemeral line a person gets in the agent's thread."""
    return {"channel": CHANNEL, "user": user, "text": text, "thread_ts": THREAD_TS}


# -- option buttons -----------------------------------------------------------------------------


async def test_an_option_press_answers_and_tells_the_presser_in_the_thread(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    ref = rules.ref(ask)

    await bolt.press(ask, "no")

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert bolt.seen.of("ack") == [{}]
    answered = await now(asks, ask)
    assert (answered.status, answered.answer_value, answered.answer_option) == ("answered", "no", 2)
    assert (answered.answered_by, answered.answer_surface) == (f"slack:{RESPONDER}", SURFACE)
    assert bolt.told() == [told(f"Thanks: your answer to `{ref}` was taken: *no*")]


async def test_an_option_whose_text_is_a_number_means_that_option(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, ["1", "3", "5"])

    await bolt.press(ask, "3")

    answered = await now(asks, ask)
    assert (answered.answer_value, answered.answer_option) == ("3", 2)


async def test_approve_and_refuse_buttons_say_what_was_decided(asks: Service, bolt: Bolt) -> None:
    first = await ask_approval(asks)
    ref = rules.ref(first)

    await bolt.press(first, "Approve")

    approved = await now(asks, first)
    assert (approved.status, approved.outcome) == ("answered", rules.APPROVED)
    assert bolt.told() == [told(f"You approved `deploy.prod` (`{ref}`).")]

    second = await ask_approval(asks, {"version": "1.4.3"})
    location = {"channel": CHANNEL, "ts": POST_TS, "thread_ts": THREAD_TS}
    await asks.record_posted(second, SURFACE, location, where=f"{CHANNEL}/{THREAD_TS}")
    await bolt.press(second, "Refuse")

    assert (await now(asks, second)).status == rules.OPEN  # Refuse asks why first
    modal = bolt.opened()
    assert (modal["callback_id"], modal["private_metadata"]) == (modals.REFUSE_CALLBACK, second.id)
    await bolt.submit_view(modal, {modals.REASON_BLOCK: {modals.REASON_INPUT: "  not on a Friday \n"}})

    refused = await now(asks, second)
    assert (refused.status, refused.outcome) == ("answered", rules.APPROVAL_REFUSED)
    assert refused.answer_note == "not on a Friday"
    assert bolt.seen.of("ack")[-1] == {}
    assert bolt.told()[-1] == told(f"You refused `deploy.prod` (`{rules.ref(second)}`).")


async def test_a_press_by_someone_not_asked_is_refused_and_told_why(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    ref = rules.ref(ask)

    await bolt.press(ask, "yes", user=STRANGER)

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert (await now(asks, ask)).status == rules.OPEN
    assert bolt.told() == [told(f"Your answer to `{ref}` was not taken: {NOT_ASKED}.", STRANGER)]
    [*_, refused] = await asks.history(ask.seq or 0)
    assert {k: v for k, v in refused.items() if k != "at"} == {
        "event": "refused", "by": f"slack:{STRANGER}", "why": "not_a_responder", "surface": SURFACE,
        "answer": "yes",
    }


async def test_a_press_on_an_answered_ask_is_refused_and_told_why(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    assert (await asks.answer(ask, Attempt(OPERATOR), "yes")).taken

    await bolt.press(ask, "no")

    answered = await now(asks, ask)
    assert (answered.answer_value, answered.answered_by) == ("yes", "operator:local")
    assert bolt.told() == [told(f"Your answer to `{rules.ref(ask)}` was not taken: it was already answered."
    )]


@pytest.mark.parametrize(
    "value", [f"{UNKNOWN_ID}:1", "click_me_123", "", f"{UNKNOWN_ID.upper()}:1"],
    ids=["no-such-ask", "not-aye-s", "empty", "not-an-ask-id"],
)
async def test_a_press_naming_no_known_ask_records_nothing(
    asks: Service, bolt: Bolt, value: str
) -> None:
    ask = await ask_question(asks, ["yes", "no"])

    await bolt.press(value)

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert [kw["text"] for kw in bolt.told()] == [replies.UNKNOWN_ASK_REPLY]
    assert (await now(asks, ask)).status == rules.OPEN


async def test_a_press_on_an_option_the_ask_no_longer_has_records_nothing(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    free = await ask_question(asks, None)

    for stale in (f"{ask.id}:3", f"{ask.id}:0", f"{free.id}:1"):
        await bolt.press(stale)

    assert [kw["text"] for kw in bolt.told()] == [replies.STALE_BUTTON_REPLY] * 3
    assert [(await now(asks, a)).status for a in (ask, free)] == [rules.OPEN, rules.OPEN]
    assert [e["event"] for e in await asks.history(ask.seq or 0)] == ["created"]


async def test_a_press_on_a_top_level_post_is_told_in_the_channel(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    body, action = pressed(ask, "yes", RESPONDER)
    del body["message"]["thread_ts"]

    await actions.press_option(
        ack=bolt.ack, body=body, action=action, client=bolt.client, context=bolt.context
    )

    [line] = bolt.told()
    assert (line["channel"], line["thread_ts"]) == (CHANNEL, None)


# -- the free-text form -------------------------------------------------------------------------


async def test_answer_on_a_free_text_ask_opens_the_form(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, None, sensitive=True)

    await bolt.press(ask, "Answer")

    assert bolt.seen.names() == ["ack", "views_open"]
    assert bolt.seen.of("views_open") == [
        {"trigger_id": TRIGGER_ID, "view": modals.answer_modal(ask, rules.ref(ask))}
    ]
    assert (await now(asks, ask)).status == rules.OPEN


async def test_answer_on_a_closed_ask_says_so_instead_of_opening_the_form(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, None)
    assert await asks.withdraw(ask, "agent:a") is not None

    await bolt.press(ask, "Answer")

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert bolt.told() == [told(f"`{rules.ref(ask)}` cannot be answered any more: it was withdrawn."
    )]


async def test_answer_by_someone_not_asked_says_so_instead_of_opening_the_form(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, None)

    await bolt.press(ask, "Answer", user=STRANGER)

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert bolt.told() == [told(f"You cannot answer `{rules.ref(ask)}`: {NOT_ASKED}.", STRANGER)]


async def test_answer_naming_no_known_ask_says_so(bolt: Bolt) -> None:
    for value in (UNKNOWN_ID, "not-an-id"):
        body, action = pressed(value, None, RESPONDER)
        action.update(action_id=buttons.ANSWER_ACTION)
        await actions.open_answer_form(
            ack=bolt.ack, body=body, action=action, client=bolt.client, context=bolt.context
        )

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"] * 2
    assert [kw["text"] for kw in bolt.told()] == [replies.UNKNOWN_ASK_REPLY] * 2


@pytest.mark.parametrize("text", ["", "   \n ", None], ids=["empty", "blank", "untouched"])
async def test_a_blank_form_is_refused_in_the_form_itself(
    asks: Service, bolt: Bolt, text: str | None
) -> None:
    ask = await ask_question(asks, None)

    await bolt.submit(ask.id, text)

    assert bolt.seen.calls == [(
        "ack",
        {"response_action": "errors", "errors": {modals.ANSWER_BLOCK: replies.EMPTY_ANSWER_ERROR}},
    )]
    assert (await now(asks, ask)).status == rules.OPEN


async def test_a_submitted_answer_is_taken_and_told_in_the_posted_thread(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, None)
    location = {"channel": CHANNEL, "ts": POST_TS, "thread_ts": THREAD_TS}
    await asks.record_posted(ask, SURFACE, location, where=f"{CHANNEL}/{THREAD_TS}")

    await bolt.submit(ask.id, "  Friday, after the freeze  ")

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert bolt.seen.of("ack") == [{}]
    answered = await now(asks, ask)
    assert (answered.status, answered.answer_value) == ("answered", "Friday, after the freeze")
    assert (answered.answered_by, answered.answer_surface) == (f"slack:{RESPONDER}", SURFACE)
    ref = rules.ref(ask)
    assert bolt.told() == [told(f"Thanks: your answer to `{ref}` was taken: *Friday, after the freeze*")]


async def test_a_submitted_sensitive_answer_is_not_repeated_back(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, None, sensitive=True)
    location = {"channel": CHANNEL, "ts": POST_TS, "thread_ts": THREAD_TS}
    await asks.record_posted(ask, SURFACE, location, where=f"{CHANNEL}/{THREAD_TS}")

    await bolt.submit(ask.id, "hunter2")

    assert (await now(asks, ask)).answer_value == "hunter2"
    assert bolt.told() == [told(f"Thanks: your answer to `{rules.ref(ask)}` was taken.")]
    assert "hunter2" not in json.dumps(bolt.seen.calls)


async def test_a_submission_by_someone_not_asked_is_refused_and_told_why(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, None)
    location = {"channel": CHANNEL, "ts": POST_TS, "thread_ts": THREAD_TS}
    await asks.record_posted(ask, SURFACE, location, where=f"{CHANNEL}/{THREAD_TS}")

    await bolt.submit(ask.id, "ship it", user=STRANGER)

    assert (await now(asks, ask)).status == rules.OPEN
    # Said in the form itself, which stays open: no line in the thread after it closed.
    assert bolt.seen.calls == [(
        "ack", {"response_action": "errors", "errors": {modals.ANSWER_BLOCK: f"Not taken: {NOT_ASKED}."}}
    )]
    assert (await last_event(asks, ask))["why"] == "not_a_responder"


async def test_a_submission_with_no_post_to_reply_in_is_taken_untold(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, None)

    await bolt.submit(ask.id, "ship it")

    assert bolt.seen.names() == ["ack"]
    assert (await now(asks, ask)).answer_value == "ship it"


async def test_a_submission_for_an_unknown_ask_is_acked_and_dropped(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, None)

    await bolt.submit(UNKNOWN_ID, "ship it")

    assert bolt.seen.names() == ["ack"]
    assert (await now(asks, ask)).status == rules.OPEN


async def test_an_unknown_aye_button_is_only_acked(bolt: Bolt) -> None:
    await actions.ack_only(ack=bolt.ack)

    assert bolt.seen.calls == [("ack", {})]


# -- people of another organisation (Slack Connect) ------------------------------------------------


OTHER_TEAM = "T0456OTHER"


def refused_history(user: str = RESPONDER) -> dict[str, Any]:
    return {"event": "refused", "by": f"slack:{user}", "why": "not_a_responder", "surface": SURFACE}


async def last_event(asks: Service, ask: AskRow) -> dict[str, Any]:
    [*_, event] = await asks.history(ask.seq or 0)
    return {k: v for k, v in event.items() if k != "at"}


@pytest.mark.parametrize(
    ("user_team", "payload_team", "teams"),
    [
        (OTHER_TEAM, OTHER_TEAM, frozenset({TEAM_ID})),
        # The person's own team decides, not the workspace the channel is in.
        (OTHER_TEAM, TEAM_ID, frozenset({TEAM_ID})),
        # Fail closed: aye's own team not known yet (auth.test not answered), nobody answers.
        (TEAM_ID, TEAM_ID, frozenset()),
        # A payload that names no team at all.
        (None, None, frozenset({TEAM_ID})),
    ],
    ids=["other-team", "other-user-in-own-workspace", "own-team-unknown", "no-team"],
)
async def test_an_option_press_from_outside_aye_s_teams_is_refused_and_recorded(
    asks: Service, bolt: Bolt, user_team: str | None, payload_team: str | None, teams: frozenset[str]
) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    body, action = pressed(ask, "yes", RESPONDER)
    body["user"]["team_id"] = user_team
    body["team"]["id"] = payload_team
    bolt.teams = teams

    await actions.press_option(
        ack=bolt.ack, body=body, action=action, client=bolt.client, context=bolt.context
    )

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert bolt.told() == [told(replies.outsider_reply(rules.ref(ask)))]
    assert (await now(asks, ask)).status == rules.OPEN
    assert await last_event(asks, ask) == refused_history()


async def test_a_listed_team_s_press_is_taken(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, ["yes", "no"])
    body, action = pressed(ask, "no", RESPONDER)
    body["user"]["team_id"] = body["team"]["id"] = OTHER_TEAM
    bolt.teams = frozenset({TEAM_ID, OTHER_TEAM})

    await actions.press_option(
        ack=bolt.ack, body=body, action=action, client=bolt.client, context=bolt.context
    )

    assert (await now(asks, ask)).answer_value == "no"


async def test_answer_from_another_organisation_opens_no_form(asks: Service, bolt: Bolt) -> None:
    ask = await ask_question(asks, None)
    body, action = pressed(ask, "Answer", RESPONDER)
    body["user"]["team_id"] = OTHER_TEAM

    await actions.open_answer_form(
        ack=bolt.ack, body=body, action=action, client=bolt.client, context=bolt.context
    )

    assert bolt.seen.names() == ["ack", "chat_postEphemeral"]
    assert bolt.told() == [told(replies.outsider_reply(rules.ref(ask)))]
    assert await last_event(asks, ask) == refused_history()


async def test_a_submission_from_another_organisation_is_refused_in_the_form(
    asks: Service, bolt: Bolt
) -> None:
    ask = await ask_question(asks, None)
    body = submitted(ask.id, "ship it", RESPONDER)
    body["user"]["team_id"] = OTHER_TEAM

    await views.submit_answer(
        ack=bolt.ack, body=body, view=body["view"], client=bolt.client, context=bolt.context
    )

    assert bolt.seen.calls == [(
        "ack", {"response_action": "errors", "errors": {modals.ANSWER_BLOCK: replies.OUTSIDER_ERROR}}
    )]
    assert (await now(asks, ask)).status == rules.OPEN
    assert await last_event(asks, ask) == refused_history()


async def test_a_submission_from_another_organisation_for_no_known_ask_records_nothing(
    asks: Service, bolt: Bolt
) -> None:
    body = submitted(UNKNOWN_ID, "ship it", RESPONDER)
    body["user"]["team_id"] = OTHER_TEAM

    await views.submit_answer(
        ack=bolt.ack, body=body, view=body["view"], client=bolt.client, context=bolt.context
    )

    assert bolt.seen.names() == ["ack"]
    assert bolt.seen.of("ack")[0]["response_action"] == "errors"


# -- through bolt: the middleware and the registrations -----------------------------------------


class OfflineClient(AsyncWebClient):
    """A Web API client that records instead of calling Slack."""

    seen: Seen

    async def chat_postEphemeral(self, **kw: Any) -> Any:
        self.seen.calls.append(("chat_postEphemeral", kw))
        return {"ok": True}

    async def views_open(self, **kw: Any) -> Any:
        self.seen.calls.append(("views_open", kw))
        return {"ok": True}


def test_register_adds_the_listeners_to_a_bolt_app() -> None:
    # AsyncApp checks its token lazily (on the first request): building it calls nothing.
    app = AsyncApp(token="xoxb-x", signing_secret="s")

    actions.register(app)
    views.register(app)

    # In order: bolt runs the first listener that matches, so the catch-all comes after the rest.
    assert [listener.ack_function for listener in app._async_listeners] == [
        actions.press_option, actions.press_word, actions.open_answer_form, actions.open_refusal,
        actions.ack_only, views.submit_answer, views.submit_refusal,
    ]


async def test_a_press_dispatched_through_bolt_finds_the_core_by_the_middleware(
    asks: Service,
) -> None:
    seen = Seen()
    surface = SlackSurface(SlackSettings("xoxb-x", "xapp-x"), SlackSection(), asks)
    surface._own_team = TEAM_ID  # as auth.test tells it at start
    # authorize: no auth.test call; Socket Mode: no signature to check.
    app = AsyncApp(
        signing_secret="s", authorize=authorize, request_verification_enabled=False,
        process_before_response=True,  # the listener has run when dispatch returns
    )

    async def offline(context: AsyncBoltContext, next: Any) -> None:
        client = OfflineClient(token="xoxb-x")
        client.seen = seen
        context["client"] = client
        await next()

    app.use(offline)
    app.use(surface._with_asks)  # the one middleware SlackSurface.start installs
    actions.register(app)
    views.register(app)
    ask = await ask_question(asks, ["yes", "no"])
    body, _ = pressed(ask, "yes", RESPONDER)

    response = await app.async_dispatch(AsyncBoltRequest(body=body, mode="socket_mode"))

    assert response.status == 200
    assert (await now(asks, ask)).answered_by == f"slack:{RESPONDER}"
    assert [kw["text"] for kw in seen.of("chat_postEphemeral")] == [
        f"Thanks: your answer to `{rules.ref(ask)}` was taken: *yes*"
    ]

    blank = submitted(ask.id, " ", RESPONDER)
    response = await app.async_dispatch(AsyncBoltRequest(body=blank, mode="socket_mode"))

    assert json.loads(response.body) == {
        "response_action": "errors", "errors": {modals.ANSWER_BLOCK: replies.EMPTY_ANSWER_ERROR}
    }


async def test_before_auth_test_answers_the_middleware_lets_nobody_answer(asks: Service) -> None:
    surface = SlackSurface(
        SlackSettings("xoxb-x", "xapp-x"), SlackSection(teams=[TEAM_ID]), asks
    )
    context = AsyncBoltContext()

    async def next_() -> None:
        return None

    await surface._with_asks(context, next_)
    # Fail closed: not even a listed team while aye's own is unknown.
    assert context[TEAMS] == frozenset() == surface.answering_teams()
    surface._own_team = "T0OWN1"  # what auth.test tells at start
    await surface._with_asks(context, next_)
    assert context[TEAMS] == frozenset({"T0OWN1", TEAM_ID})


async def authorize(team_id: str | None, enterprise_id: str | None) -> AuthorizeResult:
    """bolt's authorization, without the auth.test call a token alone would make."""
    return AuthorizeResult(
        enterprise_id=enterprise_id, team_id=team_id, bot_token="xoxb-x", bot_user_id="U0AYEBOT"
    )
