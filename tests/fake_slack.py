"""A fake Slack on 127.0.0.1 that speaks the Web API over HTTP and Socket Mode over a websocket.

The real slack-sdk `AsyncWebClient(base_url=fake.api_url)` and slack-bolt's aiohttp
`AsyncSocketModeHandler` talk to it unmodified: nothing in the libraries is patched. Every Web API
call is recorded once in `FakeSlack.calls`; tests wait on recorded calls, never sleep.

It refuses what Slack refuses: every `blocks` (chat.postMessage, chat.update, chat.postEphemeral)
and every `view` (views.open/push/update) is checked with slack-sdk's Block Kit models, which
know Slack's limits (a section's text 3,000 characters, a button's 75, a modal title's 24…), and
refused with `invalid_blocks` / `invalid_arguments` as Slack does, never stored (a top-level
`text` over 40,000 characters: `msg_too_long`). What those
models let through but Slack refuses is checked too: an attribute or element type Slack does
not know (the models drop it silently), more than 10 checkboxes, a text input's length over
3,000, a number input's bounds the wrong way round, a block_id used twice, a modal with inputs
and no submit button. An image Slack cannot download (a URL in `broken_images`) refuses the
whole message, as Slack does ("downloading image failed"). A modal submission's ack naming an
error under a block that is not one of the view's inputs fails `submit_view` (Slack shows the
person a generic error instead).

Slack's per-channel posting limit (about one chat.postMessage a second in one channel, short
bursts allowed) is enforced once a test turns it on with `pace_posts(interval, burst=...)`: a post
to a channel that comes sooner is answered 429 `ratelimited` with `Retry-After`, as Slack does.
Off by default, so tests that do not look at pacing are not slowed by it.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiohttp import WSCloseCode, WSMsgType, web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from tests.local_server import LocalServer

BOT_TOKEN = "xoxb-test-bot"
APP_TOKEN = "xapp-test-app"
TEAM_ID = "T111"
APP_ID = "A111"
BOT_ID = "B111"
BOT_USER_ID = "U0BOT111"
OTHER_BOT_ID = "B0OTHER1"  # another app's posts
DEFAULT_CHANNEL = "C111"
DEFAULT_TIMEOUT = 5.0

FIXTURES_DIR = Path(__file__).parent / "fixtures" / "slack"
PROXY_ENV_VARS = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)
# Fields that slack-sdk sends JSON-encoded inside form bodies but as objects inside JSON bodies.
JSON_FIELDS = ("blocks", "attachments", "metadata", "view")
APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
# Slack's own page-size ceiling for conversations.history / conversations.replies.
MAX_PAGE_SIZE = 1000
# ts values look like Slack's ("1700000000.000100"): they start at the fake's creation time,
# as Slack's are near the wall clock (callers scan history with `oldest`), and grow by 100 µs
# per message.
TS_STEP_MICROS = 100
# How long the fake waits for a client's close frame before dropping the TCP connection.
WS_CLOSE_TIMEOUT = 2.0
# Interactive payloads whose Socket Mode ack may carry a response (response_action, options).
RESPONSE_PAYLOAD_TYPES = frozenset({"view_submission", "block_suggestion"})
# Slack's ceiling on the blocks of one message, and of a view.
MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
# Slack's limits that slack-sdk's models do not check.
MAX_CHECKBOXES = 10
MAX_TEXT_INPUT = 3000
MAX_ELEMENT_TEXT = 3000  # a context block's text element
# A message's top-level text: longer is refused `msg_too_long` (Slack's chat.postMessage docs).
MAX_MESSAGE_TEXT = 40_000

T = TypeVar("T")


@dataclass(frozen=True)
class SlackCall:
    """One Web API call as the fake received it and answered it.

    `args` merges query and body parameters; JSON-encoded `blocks`, `attachments`, `metadata` and
    `view` are parsed into objects whichever body format was used. The token is not in `args`.
    """

    method: str
    args: dict[str, Any]
    token: str | None
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)
    # time.monotonic() when the fake answered: to check that a client waited (Retry-After).
    at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.response.get("ok") is True


@dataclass
class _Fault:
    status: int
    error: str
    retry_after: int
    times: int


@dataclass
class _PostPace:
    """Slack's per-channel limit on chat.postMessage, as a generic cell rate (GCRA): a post
    may come `interval` after the previous one, or sooner while `burst` allows."""

    interval: float
    burst: int
    retry_after: int
    # channel -> when the next post is due (the theoretical arrival time)
    due: dict[str, float] = field(default_factory=dict)

    def refuses(self, channel: str, now: float) -> bool:
        tolerance = (self.burst - 1) * self.interval
        # A millisecond of float slack: a client that waited exactly `interval` is on time.
        return now < self.due.get(channel, now) - tolerance - 0.001

    def posted(self, channel: str, now: float) -> None:
        self.due[channel] = max(self.due.get(channel, now), now) + self.interval


@dataclass(eq=False)
class _Connection:
    ws: web.WebSocketResponse
    request: web.Request
    number: int


class _SlackError(Exception):
    """An `ok: false` answer; `messages` go in `response_metadata`, as Slack explains a
    refused block ("[ERROR] … [json-pointer:/blocks/0/text]")."""

    def __init__(self, error: str, messages: list[str] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.messages = messages or []


# ---------------------------------------------------------------------------------------------
# Payload builders, based on real payloads captured in tests/fixtures/slack/.
# ---------------------------------------------------------------------------------------------


@cache
def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES_DIR / name).read_text())
    return loaded


def new_trigger_id() -> str:
    return f"{int(time.time())}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}"


def _user(user_id: str, team_id: str) -> dict[str, str]:
    return {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": team_id}


def _find_element(message: Mapping[str, Any] | None, action_id: str) -> tuple[str, dict[str, Any]]:
    """The (block_id, element) of the interactive element `action_id` in a message, if any."""
    for block in (message or {}).get("blocks") or []:
        elements = block.get("elements") or []
        if block.get("accessory"):
            elements = [*elements, block["accessory"]]
        for element in elements:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return str(block.get("block_id", "")), element
    return "", {}


def block_actions_payload(
    user_id: str,
    action_id: str,
    value: str,
    *,
    block_id: str | None = None,
    channel: str = DEFAULT_CHANNEL,
    message_ts: str = "111.222",
    message: Mapping[str, Any] | None = None,
    trigger_id: str | None = None,
    response_url: str | None = None,
    team_id: str = TEAM_ID,
    is_ephemeral: bool = False,
) -> dict[str, Any]:
    """A `block_actions` payload for a button press on a message.

    With `message`, the button's text, style and block_id are taken from the matching element of
    its blocks (as Slack does) and the message is included in the payload.
    """
    payload = copy.deepcopy(_fixture("block_actions.json"))
    found_block_id, element = _find_element(message, action_id)
    payload["user"] = _user(user_id, team_id)
    payload["team"]["id"] = team_id
    payload["container"] = {
        "type": "message",
        "message_ts": message_ts,
        "channel_id": channel,
        "is_ephemeral": is_ephemeral,
    }
    payload["channel"] = {"id": channel, "name": channel.lower()}
    payload["trigger_id"] = trigger_id or new_trigger_id()
    payload["response_url"] = response_url or payload["response_url"]
    payload["state"] = {"values": {}}
    if message is not None:
        payload["message"] = copy.deepcopy(dict(message))
    action = payload["actions"][0]
    action.update(
        action_id=action_id,
        block_id=block_id or found_block_id or "b",
        value=value,
        action_ts=f"{time.time():.6f}",
    )
    for key in ("type", "text", "style"):
        if key in element:
            action[key] = copy.deepcopy(element[key])
    return payload


def _state_entry(value: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return copy.deepcopy(dict(value))
    return {"type": "plain_text_input", "value": value}


def view_submission_payload(
    user_id: str,
    callback_id: str,
    private_metadata: str,
    values: Mapping[str, Mapping[str, str | Mapping[str, Any] | None]],
    *,
    view_id: str = "V111",
    blocks: list[dict[str, Any]] | None = None,
    trigger_id: str | None = None,
    team_id: str = TEAM_ID,
) -> dict[str, Any]:
    """A `view_submission` payload.

    `values[block_id][action_id]` is either a plain string (a plain_text_input's value) or a full
    state entry such as `{"type": "static_select", "selected_option": {...}}`. Without `blocks`,
    one input block per value is generated.
    """
    payload = copy.deepcopy(_fixture("view_submission.json"))
    state = {
        block: {action: _state_entry(value) for action, value in actions.items()}
        for block, actions in values.items()
    }
    if blocks is None:
        blocks = [
            {
                "type": "input",
                "block_id": block,
                "label": {"type": "plain_text", "text": block},
                "optional": False,
                "element": {"type": entry["type"], "action_id": action},
            }
            for block, actions in state.items()
            for action, entry in actions.items()
        ]
    payload["user"] = _user(user_id, team_id)
    payload["team"]["id"] = team_id
    payload["trigger_id"] = trigger_id or new_trigger_id()
    view = payload["view"]
    view.update(
        id=view_id,
        team_id=team_id,
        root_view_id=view_id,
        callback_id=callback_id,
        private_metadata=private_metadata,
        blocks=copy.deepcopy(blocks),
        state={"values": state},
        app_installed_team_id=team_id,
    )
    return payload


# ---------------------------------------------------------------------------------------------
# Request parsing helpers.
# ---------------------------------------------------------------------------------------------


async def _read_args(request: web.Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    if request.body_exists:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except json.JSONDecodeError:
                raise _SlackError("invalid_json") from None
            if not isinstance(body, dict):
                raise _SlackError("invalid_json")
            args.update(body)
        else:
            form = await request.post()
            args.update({key: value for key, value in form.items() if isinstance(value, str)})
    for name in JSON_FIELDS:
        if isinstance(args.get(name), str):
            try:
                args[name] = json.loads(args[name])
            except json.JSONDecodeError:
                raise _SlackError(f"invalid_{name}") from None
    return args


def _bearer(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _flag(args: Mapping[str, Any], name: str) -> bool:
    return args.get(name) in (True, 1, "1", "true", "True")


def _required(args: Mapping[str, Any], name: str, error: str) -> Any:
    value = args.get(name)
    if value in (None, ""):
        raise _SlackError(error)
    return value


def _page(items: list[dict[str, Any]], args: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """Minimal cursor pagination: the cursor is an opaque encoding of the next offset."""
    try:
        limit = int(args.get("limit") or 100)
        cursor = str(args.get("cursor") or "")
        start = int(base64.urlsafe_b64decode(cursor).decode().removeprefix("next:")) if cursor else 0
    except ValueError:
        raise _SlackError("invalid_cursor") from None
    limit = max(1, min(limit, MAX_PAGE_SIZE))
    end = start + limit
    next_cursor = base64.urlsafe_b64encode(f"next:{end}".encode()).decode() if end < len(items) else ""
    return items[start:end], next_cursor


# ---------------------------------------------------------------------------------------------
# Block Kit checks: what Slack refuses, as slack-sdk's models know it.
# ---------------------------------------------------------------------------------------------


def _model_problem(build: Callable[[], Any], sent: Any = None) -> str | None:
    """Why slack-sdk's model refuses what `build` makes (its `to_dict()` validates the whole
    tree), or None when it is valid. With `sent`, what the model dropped of it (an attribute or
    an element type it does not know, which Slack refuses) is a problem too."""
    try:
        built = build()
        if built is None:
            return "unknown block type"
        kept = built.to_dict()
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as exc:
        return str(exc) or exc.__class__.__name__
    dropped = _dropped(sent, kept, "") if sent is not None else []
    return f"unknown attribute or element type at {dropped[0]}" if dropped else None


def _dropped(sent: Any, kept: Any, pointer: str) -> list[str]:
    """Where the model's `to_dict()` lost something that `sent` had."""
    if isinstance(sent, dict):
        if not isinstance(kept, dict):
            return [pointer or "/"]
        found: list[str] = []
        for key, value in sent.items():
            where = f"{pointer}/{key}"
            found += [where] if key not in kept else _dropped(value, kept[key], where)
        return found
    if isinstance(sent, list):
        if not isinstance(kept, list) or len(kept) != len(sent):
            return [pointer or "/"]
        pairs = enumerate(zip(sent, kept, strict=True))
        return [p for n, pair in pairs for p in _dropped(*pair, f"{pointer}/{n}")]
    return []


def _elements(block: Any) -> list[tuple[str, dict[str, Any]]]:
    """(pointer, element) of every element in a block: its element, accessory, elements."""
    found = []
    for key in ("element", "accessory"):
        if isinstance(block.get(key), dict):
            found.append((f"/{key}", block[key]))
    for n, element in enumerate(block.get("elements") or []):
        if isinstance(element, dict):
            found.append((f"/elements/{n}", element))
    return found


def _number(text: Any) -> Decimal | None:
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _element_problem(element: dict[str, Any]) -> str | None:
    """Slack's limits that slack-sdk's models do not check."""
    kind = element.get("type")
    if kind in ("mrkdwn", "plain_text") and len(str(element.get("text", ""))) > MAX_ELEMENT_TEXT:
        return f"text must be no more than {MAX_ELEMENT_TEXT} characters"
    if kind in ("checkboxes", "radio_buttons") and len(element.get("options") or []) > MAX_CHECKBOXES:
        return f"options must have no more than {MAX_CHECKBOXES} items"
    if kind == "plain_text_input":
        low, high = element.get("min_length", 0), element.get("max_length", MAX_TEXT_INPUT)
        if not 0 <= low <= MAX_TEXT_INPUT or not 1 <= high <= MAX_TEXT_INPUT or low > high:
            return f"min_length and max_length must be within 0..{MAX_TEXT_INPUT}, min <= max"
    if kind == "number_input":
        bounds = [_number(element[k]) for k in ("min_value", "max_value") if k in element]
        if any(b is None for b in bounds):
            return "min_value and max_value must be numbers"
        whole = not element.get("is_decimal_allowed")
        if whole and any(b is not None and b != b.to_integral_value() for b in bounds):
            return "min_value and max_value must be integers when is_decimal_allowed is false"
        if len(bounds) == 2 and bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
            return "min_value must not be greater than max_value"
    if kind == "multi_static_select" and element.get("max_selected_items", 1) < 1:
        return "max_selected_items must be at least 1"
    return None


def _limit_problems(block: dict[str, Any], pointer: str) -> list[str]:
    return [
        f"[ERROR] {why} [json-pointer:{pointer}{where}]"
        for where, element in _elements(block)
        if (why := _element_problem(element)) is not None
    ]


def block_problems(blocks: Any, pointer: str = "/blocks", limit: int = MAX_MESSAGE_BLOCKS) -> list[str]:
    """Slack's words for each thing wrong with a message's `blocks` (none: Slack takes them)."""
    if not isinstance(blocks, list):
        return [f"[ERROR] must be an array [json-pointer:{pointer}]"]
    problems = []
    if len(blocks) > limit:
        problems.append(f"[ERROR] no more than {limit} items allowed [json-pointer:{pointer}]")
    seen: set[str] = set()
    for n, block in enumerate(blocks):
        why = "must be an object" if not isinstance(block, dict) else _model_problem(
            partial(Block.parse, block), block
        )
        if why is not None:
            problems.append(f"[ERROR] {why} [json-pointer:{pointer}/{n}]")
            continue
        problems += _limit_problems(block, f"{pointer}/{n}")
        block_id = block.get("block_id")
        if block_id in seen:
            problems.append(f"[ERROR] duplicate block_id {block_id!r} [json-pointer:{pointer}/{n}]")
        if block_id is not None:
            seen.add(block_id)
    return problems


def input_block_ids(view: Mapping[str, Any]) -> list[str]:
    return [
        str(b.get("block_id")) for b in view.get("blocks") or []
        if isinstance(b, dict) and b.get("type") == "input"
    ]


def view_problems(view: Any) -> list[str]:
    """Slack's words for each thing wrong with a modal or Home tab view (none: it is valid)."""
    if not isinstance(view, dict) or "type" not in view:
        return ["[ERROR] must be an object with a type [json-pointer:/view]"]
    why = _model_problem(lambda: View(**view), view)
    if why is not None:
        return [f"[ERROR] {why} [json-pointer:/view]"]
    problems = block_problems(view.get("blocks") or [], "/view/blocks", MAX_VIEW_BLOCKS)
    if view["type"] == "modal" and input_block_ids(view) and not view.get("submit"):
        problems.append("[ERROR] a modal with input blocks needs submit [json-pointer:/view/submit]")
    return problems


def image_problems(blocks: Any, broken: set[str]) -> list[str]:
    """What Slack says when it cannot download an image block's image_url."""
    return [
        f"[ERROR] downloading image failed [json-pointer:/blocks/{n}/image_url]"
        for n, block in enumerate(blocks if isinstance(blocks, list) else [])
        if isinstance(block, dict) and block.get("type") == "image" and block.get("image_url") in broken
    ]


def _check_blocks(args: Mapping[str, Any], broken_images: set[str] | None = None) -> None:
    if len(str(args.get("text") or "")) > MAX_MESSAGE_TEXT:
        raise _SlackError("msg_too_long")
    if args.get("blocks") is None:
        return
    problems = block_problems(args["blocks"]) or image_problems(args["blocks"], broken_images or set())
    if problems:
        raise _SlackError("invalid_blocks", problems)


def _check_view(view: Any) -> None:
    problems = view_problems(view)
    if problems:
        raise _SlackError("invalid_arguments", problems)


# ---------------------------------------------------------------------------------------------
# The fake.
# ---------------------------------------------------------------------------------------------


class FakeSlack(LocalServer):
    """Slack's Web API (`api_url`) and Socket Mode (`ws_url`) on a random port of 127.0.0.1."""

    def __init__(
        self,
        *,
        bot_token: str = BOT_TOKEN,
        app_token: str = APP_TOKEN,
        team_id: str = TEAM_ID,
        app_id: str = APP_ID,
        bot_id: str = BOT_ID,
        bot_user_id: str = BOT_USER_ID,
    ) -> None:
        # Tokens are plain attributes: set `bot_token` to another value to make the app's token
        # report invalid_auth.
        self.bot_token = bot_token
        self.app_token = app_token
        self.team_id = team_id
        self.app_id = app_id
        self.bot_id = bot_id
        self.bot_user_id = bot_user_id

        self.calls: list[SlackCall] = []
        self.views: dict[str, dict[str, Any]] = {}
        self.ephemerals: list[dict[str, Any]] = []
        self.envelopes: list[dict[str, Any]] = []
        self.acks: list[dict[str, Any]] = []
        self.connections_opened = 0
        # Image URLs Slack cannot download: a message with one of them is refused.
        self.broken_images: set[str] = set()

        self._channels: dict[str, list[dict[str, Any]]] = {}
        self._dm_channels: dict[str, str] = {}
        self._faults: dict[str, list[_Fault]] = {}
        self._post_pace: _PostPace | None = None
        self._tickets: set[str] = set()
        self._connections: list[_Connection] = []
        self._pending_acks: dict[str, tuple[_Connection, asyncio.Future[dict[str, Any]]]] = {}
        self._next_ts_micros = int(time.time()) * 1_000_000 + TS_STEP_MICROS
        self._next_view = 1
        self._changed = asyncio.Condition()
        super().__init__()
        self._methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self._auth_test,
            "apps.connections.open": self._apps_connections_open,
            "chat.postMessage": self._chat_post_message,
            "chat.update": self._chat_update,
            "chat.postEphemeral": self._chat_post_ephemeral,
            "views.open": self._views_open,
            "views.push": self._views_push,
            "views.update": self._views_update,
            "conversations.open": self._conversations_open,
            "conversations.replies": self._conversations_replies,
            "conversations.history": self._conversations_history,
        }

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle_api)
        app.router.add_get("/link", self._handle_link)
        app.router.add_get("/link/", self._handle_link)
        app.router.add_post("/response_url/{id}", self._handle_response_url)
        # Runs after the fake stopped listening, so clients cannot reconnect meanwhile.
        app.on_shutdown.append(self._close_all_connections)
        await self._serve(app, shutdown_timeout=WS_CLOSE_TIMEOUT)

    @property
    def api_url(self) -> str:
        # slack-sdk joins method names with urljoin: without the trailing slash they lose /api/.
        return f"{self.base_url}/api/"

    @property
    def ws_url(self) -> str:
        return f"{self.base_url.replace('http://', 'ws://', 1)}/link/"

    def new_response_url(self) -> str:
        return f"{self.base_url}/response_url/{uuid.uuid4().hex}"

    # -- recorded state ---------------------------------------------------------------------

    def calls_to(self, method: str) -> list[SlackCall]:
        return [call for call in self.calls if call.method == method]

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """Messages stored in `channel` (thread replies included), oldest first."""
        return copy.deepcopy(self._channels.get(channel, []))

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        found = self._find(channel, ts)
        return copy.deepcopy(found) if found is not None else None

    def add_message(
        self,
        channel: str,
        text: str,
        *,
        user: str = "U0PERSON1",
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocks: list[dict[str, Any]] | None = None,
    ) -> str:
        """Store a message as if someone (or, with `metadata`, an app) had posted it, without
        recording a Web API call; returns its ts. For thread parents and pre-seeded posts."""
        message: dict[str, Any] = {
            "type": "message",
            "user": user,
            "team": self.team_id,
            "text": text,
            "ts": self._new_ts(),
        }
        if user == self.bot_user_id:
            message.update(bot_id=self.bot_id, app_id=self.app_id)
        if blocks is not None:
            message["blocks"] = copy.deepcopy(blocks)
        if metadata is not None:
            message["metadata"] = copy.deepcopy(metadata)
        if thread_ts:
            self._add_reply(channel, thread_ts, message, broadcast=False)
        self._channels.setdefault(channel, []).append(message)
        return str(message["ts"])

    def set_author(self, channel: str, ts: str, user: str | None) -> None:
        """Make `user` the author of a stored message (a thread's first message: who opened
        it, as `conversations.replies` tells). None makes it an app's post of the kind Slack
        returns with `subtype: bot_message` and `bot_id` but no `user`.

        To make the lookup fail, `fail_next("conversations.replies", error=...)` (aye also
        reads the thread before posting in it, so queue that after the post)."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        if user is None:
            message.pop("user", None)
            message.update(subtype="bot_message", bot_id=OTHER_BOT_ID)
        else:
            message["user"] = user
            for key in ("subtype", "bot_id", "app_id"):
                message.pop(key, None)

    def responses(self) -> list[SlackCall]:
        """Posts to response URLs (`respond()` in bolt); `args` is the posted JSON body."""
        return self.calls_to("response_url")

    # -- waiting ----------------------------------------------------------------------------

    async def _wait_until(
        self,
        found: Callable[[], T | None],
        timeout: float,
        what: str,
    ) -> T:
        async with self._changed:
            try:
                result = await asyncio.wait_for(self._changed.wait_for(found), timeout)
            except TimeoutError:
                seen = [f"{c.method}({c.status})" for c in self.calls]
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}; calls: {seen}") from None
        assert result is not None
        return result

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for_call(
        self,
        method: str,
        predicate: Callable[[SlackCall], bool] | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        after: int = 0,
    ) -> SlackCall:
        """The first call to `method` at index >= `after` in `calls` that matches `predicate`,
        whether it already happened or not. Failed calls (429s, ok: false) count too: filter with
        `lambda c: c.ok` to wait for a successful one."""

        def found() -> SlackCall | None:
            return next(
                (c for c in self.calls[after:] if c.method == method and (predicate is None or predicate(c))),
                None,
            )

        return await self._wait_until(found, timeout, f"a call to {method}")

    async def wait_for_calls(
        self,
        method: str,
        n: int,
        predicate: Callable[[SlackCall], bool] | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> list[SlackCall]:
        """The first `n` calls to `method` (matching `predicate`), once there are at least `n`."""

        def found() -> list[SlackCall] | None:
            matching = [c for c in self.calls_to(method) if predicate is None or predicate(c)]
            return matching[:n] if len(matching) >= n else None

        if n <= 0:
            return []
        return await self._wait_until(found, timeout, f"{n} calls to {method}")

    # -- fault injection --------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int | None = None,
        error: str | None = None,
        retry_after: int = 1,
        times: int = 1,
    ) -> None:
        """Make the next `times` calls to `method` fail (faults queue up in order).

        Default: HTTP 429 with `Retry-After: retry_after` and `ratelimited`. `status=500`/`503`:
        a server error. `error="invalid_auth"` alone: HTTP 200 with `ok: false`.
        """
        if status is None:
            status = 200 if error is not None else 429
        if error is None:
            error = "ratelimited" if status == 429 else "internal_error"
        self._faults.setdefault(method, []).append(_Fault(status, error, retry_after, times))

    def pace_posts(self, interval: float = 1.0, *, burst: int = 1, retry_after: int = 1) -> None:
        """From now on, refuse chat.postMessage to a channel sooner than `interval` after the
        previous accepted one there (allowing `burst` back to back after a quiet spell): HTTP
        429 `ratelimited` with `Retry-After: retry_after`, recorded in `calls` like any call.
        Measured when the fake reads the request; refused posts do not count."""
        self._post_pace = _PostPace(interval, burst, retry_after)

    def rate_limited(self, method: str = "chat.postMessage") -> list[SlackCall]:
        """Calls to `method` answered 429 (by `pace_posts` or by `fail_next`)."""
        return [c for c in self.calls_to(method) if c.status == 429]

    def _post_channel(self, method: str, args: Mapping[str, Any]) -> str | None:
        """The channel a paced chat.postMessage goes to (a user's DM for a user id)."""
        if self._post_pace is None or method != "chat.postMessage" or not args.get("channel"):
            return None
        channel = str(args["channel"])
        return self._dm_channel(channel) if channel[0] in "UW" else channel

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.pop(0)
        return fault

    # -- Web API ----------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = {}
        headers: dict[str, str] = {}
        status = 200
        token = _bearer(request)
        try:
            args = await _read_args(request)
            form_token = args.pop("token", None)
            token = token or form_token
            fault = self._take_fault(method)
            if fault is not None:
                status = fault.status
                if status == 429:
                    headers["Retry-After"] = str(fault.retry_after)
                raise _SlackError(fault.error)
            paced, now = self._post_channel(method, args), time.monotonic()
            if paced is not None and self._post_pace is not None and self._post_pace.refuses(paced, now):
                status = 429
                headers["Retry-After"] = str(self._post_pace.retry_after)
                raise _SlackError("ratelimited")
            body = {"ok": True, **self._dispatch(method, args, token)}
            if paced is not None and self._post_pace is not None:
                self._post_pace.posted(paced, now)
        except _SlackError as e:
            body = {"ok": False, "error": e.error}
            if e.messages:
                body["response_metadata"] = {"messages": e.messages}
        call = SlackCall(method, args, token, status, copy.deepcopy(body))
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        return web.json_response(body, status=status, headers=headers)

    def _dispatch(self, method: str, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        handler = self._methods.get(method)
        if handler is None:
            raise _SlackError("unknown_method")
        if not token:
            raise _SlackError("not_authed")
        expected = self.app_token if method in APP_TOKEN_METHODS else self.bot_token
        if token != expected:
            app_level = token.startswith("xapp-")
            wrong_kind = app_level != (method in APP_TOKEN_METHODS)
            raise _SlackError("not_allowed_token_type" if wrong_kind else "invalid_auth")
        return handler(args)

    def _new_ts(self) -> str:
        micros = self._next_ts_micros
        self._next_ts_micros += TS_STEP_MICROS
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def _find(self, channel: str, ts: str) -> dict[str, Any] | None:
        return next((m for m in self._channels.get(channel, []) if m["ts"] == ts), None)

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://fake-workspace.slack.com/",
            "team": "Fake Workspace",
            "user": "aye",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _apps_connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return {"url": f"{self.ws_url}?ticket={ticket}&app_id={self.app_id}"}

    def _dm_channel(self, users: str) -> str:
        key = ",".join(sorted(users.split(",")))
        return self._dm_channels.setdefault(key, f"D{len(self._dm_channels) + 1:08d}")

    def _chat_post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(_required(args, "channel", "channel_not_found"))
        if channel[0] in "UW":
            # Posting to a user ID posts in the app's DM with that user, as Slack does.
            channel = self._dm_channel(channel)
        if not (args.get("text") or args.get("blocks") or args.get("attachments")):
            raise _SlackError("no_text")
        _check_blocks(args, self.broken_images)
        message: dict[str, Any] = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "team": self.team_id,
            "text": args.get("text") or "",
            "ts": self._new_ts(),
        }
        for key in ("blocks", "attachments", "metadata"):
            if args.get(key) is not None:
                message[key] = copy.deepcopy(args[key])
        thread_ts = args.get("thread_ts")
        if thread_ts:
            self._add_reply(channel, str(thread_ts), message, _flag(args, "reply_broadcast"))
        self._channels.setdefault(channel, []).append(message)
        return {"channel": channel, "ts": message["ts"], "message": copy.deepcopy(message)}

    def _add_reply(self, channel: str, thread_ts: str, reply: dict[str, Any], broadcast: bool) -> None:
        # Unlike Slack, which may post a reply to an unknown thread_ts at top level, the fake
        # refuses it: a reply to a message that does not exist is a bug in the caller.
        parent = self._find(channel, thread_ts)
        if parent is None:
            raise _SlackError("thread_not_found")
        root = self._find(channel, parent.get("thread_ts", parent["ts"])) or parent
        reply["thread_ts"] = root["ts"]
        if broadcast:
            reply["reply_broadcast"] = True
        root["thread_ts"] = root["ts"]
        root["reply_count"] = root.get("reply_count", 0) + 1
        root["reply_users"] = sorted({*root.get("reply_users", []), reply.get("user") or reply["bot_id"]})
        root["reply_users_count"] = len(root["reply_users"])
        root["latest_reply"] = reply["ts"]

    def _chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(_required(args, "channel", "channel_not_found"))
        ts = str(_required(args, "ts", "message_not_found"))
        message = self._find(channel, ts)
        if message is None:
            raise _SlackError("message_not_found")
        _check_blocks(args, self.broken_images)
        for key in ("text", "blocks", "attachments", "metadata"):
            if args.get(key) is not None:
                message[key] = copy.deepcopy(args[key])
        return {
            "channel": channel,
            "ts": ts,
            "text": message["text"],
            "message": copy.deepcopy(message),
        }

    def _chat_post_ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(_required(args, "channel", "channel_not_found"))
        user = str(_required(args, "user", "user_not_found"))
        if not (args.get("text") or args.get("blocks") or args.get("attachments")):
            raise _SlackError("no_text")
        _check_blocks(args)
        ts = self._new_ts()
        self.ephemerals.append(
            {
                "channel": channel,
                "user": user,
                "text": args.get("text") or "",
                "blocks": copy.deepcopy(args.get("blocks")),
                "thread_ts": args.get("thread_ts"),
                "message_ts": ts,
            }
        )
        return {"message_ts": ts}

    def _store_view(self, spec: Any, previous_view_id: str | None) -> dict[str, Any]:
        _check_view(spec)
        view_id = f"V{self._next_view:08d}"
        self._next_view += 1
        view: dict[str, Any] = {
            "id": view_id,
            "team_id": self.team_id,
            "type": spec["type"],
            "blocks": [],
            "private_metadata": "",
            "callback_id": "",
            "external_id": "",
            "clear_on_close": False,
            "notify_on_close": False,
            **copy.deepcopy(spec),
        }
        view.update(
            id=view_id,
            state={"values": {}},
            hash=f"{int(time.time())}.{uuid.uuid4().hex[:8]}",
            previous_view_id=previous_view_id,
            root_view_id=view_id,
            app_id=self.app_id,
            app_installed_team_id=self.team_id,
            bot_id=self.bot_id,
        )
        self.views[view_id] = view
        return {"view": copy.deepcopy(view)}

    def _views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        _required(args, "trigger_id", "invalid_trigger_id")
        return self._store_view(args.get("view"), previous_view_id=None)

    def _views_push(self, args: dict[str, Any]) -> dict[str, Any]:
        _required(args, "trigger_id", "invalid_trigger_id")
        return self._store_view(args.get("view"), previous_view_id=None)

    def _views_update(self, args: dict[str, Any]) -> dict[str, Any]:
        view_id = args.get("view_id") or next(
            (v["id"] for v in self.views.values() if args.get("external_id") == v["external_id"]),
            None,
        )
        if view_id not in self.views:
            raise _SlackError("not_found")
        spec = args.get("view")
        _check_view(spec)
        self.views[view_id].update(copy.deepcopy(spec) if isinstance(spec, dict) else {})
        return {"view": copy.deepcopy(self.views[view_id])}

    def _conversations_open(self, args: dict[str, Any]) -> dict[str, Any]:
        users = str(_required(args, "users", "users_list_not_supplied"))
        return {"channel": {"id": self._dm_channel(users)}}

    def _render(self, message: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
        shown = copy.deepcopy(message)
        if not _flag(args, "include_all_metadata"):
            shown.pop("metadata", None)
        return shown

    def _paged(self, messages: list[dict[str, Any]], args: Mapping[str, Any]) -> dict[str, Any]:
        page, next_cursor = _page(messages, args)
        return {
            "messages": [self._render(m, args) for m in page],
            "has_more": bool(next_cursor),
            "response_metadata": {"next_cursor": next_cursor},
        }

    def _conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(_required(args, "channel", "channel_not_found"))
        ts = str(_required(args, "ts", "thread_not_found"))
        message = self._find(channel, ts)
        if message is None:
            raise _SlackError("thread_not_found")
        root_ts = message.get("thread_ts", message["ts"])
        thread = [m for m in self._channels[channel] if m["ts"] == root_ts or m.get("thread_ts") == root_ts]
        return self._paged(thread, args)

    def _conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(_required(args, "channel", "channel_not_found"))
        try:
            oldest = float(args.get("oldest") or 0)
            latest = float(args.get("latest") or "inf")
        except ValueError:
            raise _SlackError("invalid_ts_oldest_or_latest") from None
        inclusive = _flag(args, "inclusive")

        def in_range(ts: float) -> bool:
            if inclusive:
                return oldest <= ts <= latest
            return oldest < ts < latest

        top_level = [
            m
            for m in reversed(self._channels.get(channel, []))
            if (m.get("thread_ts", m["ts"]) == m["ts"] or m.get("reply_broadcast"))
            and in_range(float(m["ts"]))
        ]
        return self._paged(top_level, args)

    # -- response_url -----------------------------------------------------------------------

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        body = await request.json() if request.body_exists else {}
        args = body if isinstance(body, dict) else {"body": body}
        args["response_url_id"] = request.match_info["id"]
        response = {"ok": True}
        async with self._changed:
            self.calls.append(SlackCall("response_url", args, None, 200, response))
            self._changed.notify_all()
        return web.json_response(response)

    # -- Socket Mode ------------------------------------------------------------------------

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def wait_connected(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        count: int = 1,
        opened: int = 0,
    ) -> None:
        """Until at least `count` Socket Mode connections are open and at least `opened` were
        ever opened (`opened=fake.connections_opened + 1` waits for a new one)."""

        def enough() -> bool:
            return len(self._connections) >= count and self.connections_opened >= opened

        what = f"{count} open Socket Mode connection(s), {opened} opened in all"
        await self._wait_until(enough, timeout, what)

    async def _handle_link(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("ticket") not in self._tickets:
            return web.json_response({"ok": False, "error": "invalid_ticket"}, status=401)
        ws = web.WebSocketResponse(autoping=True, timeout=WS_CLOSE_TIMEOUT)
        await ws.prepare(request)
        self.connections_opened += 1
        conn = _Connection(ws, request, self.connections_opened)
        # The same first frame Slack sends on every Socket Mode connection.
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self._connections) + 1,
                "debug_info": {
                    "host": f"applink-fake-{conn.number}",
                    "build_number": 1,
                    "approximate_connection_time": 18060,
                },
                "connection_info": {"app_id": self.app_id},
            }
        )
        self._connections.append(conn)
        await self._notify()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._on_client_text(msg.data)
        finally:
            if conn in self._connections:
                self._connections.remove(conn)
            self._fail_pending_acks(conn)
            await self._notify()
        return ws

    def _on_client_text(self, data: str) -> None:
        try:
            message = json.loads(data)
        except json.JSONDecodeError:
            return
        if not isinstance(message, dict) or "envelope_id" not in message:
            return
        self.acks.append(message)
        pending = self._pending_acks.get(message["envelope_id"])
        if pending is not None and not pending[1].done():
            pending[1].set_result(message)

    def _fail_pending_acks(self, conn: _Connection) -> None:
        for envelope_id, (owner, ack) in self._pending_acks.items():
            if owner is conn and not ack.done():
                ack.set_exception(
                    ConnectionResetError(f"connection closed before envelope {envelope_id} was acked")
                )

    async def send_envelope(
        self,
        envelope_type: str,
        payload: dict[str, Any],
        *,
        accepts_response_payload: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """Send `payload` in a Socket Mode envelope on the newest open connection (waiting up to
        `timeout` for one) and return the client's ack: `{"envelope_id", "payload"?}`."""

        def newest() -> _Connection | None:
            return self._connections[-1] if self._connections else None

        conn = await self._wait_until(newest, timeout, "an open Socket Mode connection")
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "type": envelope_type,
            "payload": payload,
            "accepts_response_payload": accepts_response_payload,
        }
        ack: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending_acks[envelope_id] = (conn, ack)
        try:
            self.envelopes.append(envelope)
            await conn.ws.send_json(envelope)
            try:
                return await asyncio.wait_for(ack, timeout)
            except TimeoutError:
                raise TimeoutError(
                    f"no ack within {timeout}s for {envelope_type} envelope "
                    f"{envelope_id} (is a listener registered?)"
                ) from None
        finally:
            del self._pending_acks[envelope_id]

    async def send_interactive(
        self,
        payload: dict[str, Any],
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        return await self.send_envelope(
            "interactive",
            payload,
            accepts_response_payload=payload.get("type") in RESPONSE_PAYLOAD_TYPES,
            timeout=timeout,
        )

    async def press_button(
        self,
        user_id: str,
        action_id: str,
        value: str,
        channel: str = DEFAULT_CHANNEL,
        message_ts: str | None = None,
        *,
        block_id: str | None = None,
        trigger_id: str | None = None,
        team_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """Press a button on a message: by default the newest message in `channel`. When the
        message is stored, the payload carries it and the button's block_id/text like Slack's.
        `team_id`: the presser's own team, another organisation's in a Slack Connect channel
        (default: the fake's workspace)."""
        if message_ts is None:
            stored = self._channels.get(channel, [])
            if not stored:
                raise ValueError(f"no message in {channel} to press {action_id} on")
            message_ts = str(stored[-1]["ts"])
        payload = block_actions_payload(
            user_id,
            action_id,
            value,
            block_id=block_id,
            channel=channel,
            message_ts=message_ts,
            message=self._find(channel, message_ts),
            trigger_id=trigger_id,
            response_url=self.new_response_url(),
            team_id=team_id or self.team_id,
        )
        return await self.send_interactive(payload, timeout=timeout)

    async def submit_view(
        self,
        user_id: str,
        values: Mapping[str, Mapping[str, str | Mapping[str, Any] | None]],
        *,
        view_id: str | None = None,
        callback_id: str | None = None,
        private_metadata: str | None = None,
        team_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """Submit a modal and return the ack (its `payload` holds any response_action).

        The view is `view_id` if given, else the last view opened through the fake unless a
        `callback_id` is given; its callback_id, private_metadata and blocks are the defaults.
        `team_id`: the submitter's own team (default: the fake's workspace)."""
        if view_id is None and callback_id is None and self.views:
            view_id = list(self.views)[-1]
        view = self.views.get(view_id) if view_id is not None else None
        if view_id is not None and view is None:
            raise ValueError(f"no view {view_id} was opened through the fake")
        view = view or {}
        callback = callback_id if callback_id is not None else view.get("callback_id")
        if callback is None:
            raise ValueError("submit_view needs a callback_id or an opened view")
        payload = view_submission_payload(
            user_id,
            callback,
            private_metadata if private_metadata is not None else view.get("private_metadata", ""),
            values,
            view_id=view_id or "V111",
            blocks=copy.deepcopy(view["blocks"]) if view.get("blocks") else None,
            team_id=team_id or self.team_id,
        )
        ack = await self.send_interactive(payload, timeout=timeout)
        errors = (ack.get("payload") or {}).get("errors")
        if isinstance(errors, dict):
            # Slack shows an error under an input block of the view; naming any other block
            # gets the person a generic error instead.
            unknown = set(errors) - set(input_block_ids(payload["view"]))
            if unknown:
                raise AssertionError(f"errors name no input block of the view: {sorted(unknown)}")
        return ack

    async def send_disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every client to reconnect, as Slack does before rotating its servers."""
        for conn in list(self._connections):
            await conn.ws.send_json(
                {"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}}
            )

    async def drop_connections(self, *, abrupt: bool = False) -> None:
        """Close every Socket Mode connection: with a close frame (code 1001, the client
        reconnects at once), or with `abrupt=True` by cutting TCP (the client notices on its
        next ping check, within its `ping_interval`)."""
        connections, self._connections = self._connections, []
        await self._notify()
        if abrupt:
            for conn in connections:
                if conn.request.transport is not None:
                    conn.request.transport.abort()
        else:
            await asyncio.gather(*(self._close_ws(c) for c in connections))

    async def _close_all_connections(self, app: web.Application) -> None:
        await self.drop_connections()

    async def _close_ws(self, conn: _Connection) -> None:
        await conn.ws.close(code=WSCloseCode.GOING_AWAY, message=b"fake slack: dropped")


# ---------------------------------------------------------------------------------------------
# pytest fixtures.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """slack-sdk copies HTTP(S)_PROXY into an explicit proxy and ignores NO_PROXY, which would
    send traffic meant for the fake on 127.0.0.1 to the proxy."""
    for name in PROXY_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake_slack(no_proxy_env: None) -> AsyncIterator[FakeSlack]:
    """A started FakeSlack accepting `xoxb-test-bot` and `xapp-test-app`."""
    async with FakeSlack(bot_token=BOT_TOKEN, app_token=APP_TOKEN) as fake:
        yield fake
