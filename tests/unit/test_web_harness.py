"""The web inbox's test harness (the app with the inbox, a browserless operator that reads the
page's own forms and submits them as a browser would without JavaScript), and unit tests of
its pure parts: flash cookies, the sign-in limit, times, form fields."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from ask_api.tokens import TokenBook
from bot.app import create_app
from bot.config import Config
from core.app.timing import Clock
from handlers.kit import cards as views
from handlers.kit import fields
from handlers.web.failures import FAILURES_PER_MINUTE, SignInFailures, client_address
from handlers.web.flash import Flash, Flashes
from tests.builders import approval, question
from tests.conftest import AGENT_TOKEN, OPERATOR_TOKEN, Aye, settings_for

SESSION_KEY = b"web-inbox-test-session-key-32by"
ALERT = re.compile(r'role="alert"[^>]*>(.*?)</(?:div|p)>', re.S)


def operator_ok(book: TokenBook) -> Callable[[str], bool]:
    def check(token: str) -> bool:
        caller = book.caller(token)
        return caller is not None and caller.is_operator

    return check


StartInbox = Callable[..., Awaitable[Aye]]


@contextlib.asynccontextmanager
async def inboxes() -> AsyncIterator[StartInbox]:
    """Starts the whole aye app with the web inbox on it (set up here until the composition
    root does it; then the root's own); each test module's `start_inbox` fixture wraps it."""
    started: list[TestClient[Any, Any]] = []

    async def start(database_url: str, config: Config | None = None, clock: Clock | None = None,
                    ) -> Aye:
        config = config or Config()
        clock = clock or Clock()
        book = TokenBook.build(config, OPERATOR_TOKEN, AGENT_TOKEN)
        app = create_app(settings_for(database_url), config, book, clock)
        client: TestClient[Any, Any] = TestClient(TestServer(app))
        await client.start_server()
        started.append(client)
        return Aye(client, app, clock)

    try:
        yield start
    finally:
        for client in reversed(started):
            await client.close()


# -- a browser without JavaScript ---------------------------------------------------------


@dataclass
class Control:
    tag: str
    type: str
    name: str | None
    value: str
    id: str | None
    checked: bool = False
    text: str = ""
    label: str = ""
    disabled: bool = False


@dataclass
class Form:
    action: str
    controls: list[Control] = field(default_factory=list)

    def data(self, press: str | None, fill: dict[str, str], check: set[str]) -> list[tuple[str, str]]:
        """What a browser posts: the form's inputs (those labelled in `fill` set, those
        labelled in `check` ticked) and the pressed button's name and value."""
        out: list[tuple[str, str]] = []
        for c in self.controls:
            if c.name is None or c.tag == "button" or c.disabled:
                continue
            if c.type == "checkbox":
                if c.label in check:
                    out.append((c.name, c.value or "on"))
            else:
                out.append((c.name, fill.get(c.label, c.value)))
        if press is not None:
            buttons = [c for c in self.controls if c.tag == "button" and c.text == press]
            assert buttons, f"no button named {press!r} in {self.action}"
            if buttons[0].name:
                out.append((buttons[0].name, buttons[0].value))
        return out

    def labels(self) -> list[str]:
        return [c.label for c in self.controls if c.label]

    def buttons(self) -> list[str]:
        return [c.text for c in self.controls if c.tag == "button" and not c.disabled]


class Forms(HTMLParser):
    """Every form of a page, each control with its label (by `for` or by wrapping)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self._label: tuple[str | None, list[str], list[Control]] | None = None
        self._for: dict[str, str] = {}
        self._text: Control | None = None
        self._hidden = False
        self.feed(html)
        for form in self.forms:
            for c in form.controls:
                c.label = c.label or self._for.get(c.id or "", "")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if a.get("aria-hidden") == "true" and tag == "span":
            self._hidden = True  # not part of an accessible name (a required field's mark)
        if tag == "form":
            self.forms.append(Form(a.get("action", "")))
        elif tag == "label":
            self._label = (a.get("for"), [], [])
        elif tag in ("input", "textarea", "select", "button", "option") and self.forms:
            self._control(tag, a)

    def _control(self, tag: str, a: dict[str, str]) -> None:
        controls = self.forms[-1].controls
        if tag == "option":
            if controls and controls[-1].tag == "select" and "selected" in a:
                controls[-1].value = a.get("value", "")
            return
        kind = a.get("type", "submit" if tag == "button" else tag)
        c = Control(tag, kind, a.get("name"), a.get("value", ""), a.get("id"),
                    "checked" in a, disabled="disabled" in a)
        controls.append(c)
        if tag in ("textarea", "button"):
            self._text = c
        if self._label is not None:
            self._label[2].append(c)

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.text += data
            if self._text.tag == "textarea":
                self._text.value += data
        if self._label is not None and not self._hidden:
            self._label[1].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._hidden = False
        if tag in ("textarea", "button"):
            if self._text is not None:
                self._text.text = self._text.text.strip()
            self._text = None
        elif tag == "label" and self._label is not None:
            target, words, inside = self._label
            text = " ".join("".join(words).split())
            if target:
                self._for[target] = text
            for c in inside:
                c.label = text
            self._label = None


class Operator:
    """The operator in a browser with JavaScript off: signs in, reads pages, submits forms."""

    def __init__(self, aye: Aye) -> None:
        self.client = aye.client

    async def sign_in(self, token: str = OPERATOR_TOKEN) -> None:
        resp = await self.client.post("/login", data={"token": token}, allow_redirects=False)
        assert resp.status == 303, await resp.text()

    async def page(self, path: str = "/inbox", status: int = 200) -> str:
        resp = await self.client.get(path)
        html = await resp.text()
        assert resp.status == status, html
        return html

    def form(self, html: str, ref: str) -> Form:
        found = [f for f in Forms(html).forms if f.action == f"/inbox/{ref}/answer"]
        assert found, f"no form for {ref}"
        return found[0]

    async def answer(self, ref: str, press: str | None = None, fill: dict[str, str] | None = None,
                     check: set[str] | None = None, page: str = "/inbox") -> str:
        """Answer `ref` from `page` as a person would; the alert of the page it lands on."""
        form = self.form(await self.page(page), ref)
        resp = await self.client.post(form.action, data=form.data(press, fill or {}, check or set()),
                                      allow_redirects=False)
        if resp.status == 422:  # refused while it stays open: its page again, as typed
            return alert(await resp.text())
        assert resp.status == 303, await resp.text()
        html = await self.page(resp.headers["Location"])
        return alert(html)


def alert(html: str) -> str:
    found = ALERT.search(html)
    assert found, "no role=alert on the page"
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split()).replace("&#39;", "'")


# -- unit tests of the pure parts -----------------------------------------------------------


def test_a_flash_is_signed_and_short_lived() -> None:
    now = [1_000_000.0]
    flashes = Flashes(SESSION_KEY, now=lambda: now[0])
    value = flashes.sign(Flash(True, "Answered: yes", "q1"))
    assert flashes.read(value) == Flash(True, "Answered: yes", "q1")
    assert flashes.read(value[:-2] + "xx") is None
    assert Flashes(b"another-key-of-32-bytes-length!!", lambda: now[0]).read(value) is None
    now[0] += 61
    assert flashes.read(value) is None


def test_failed_sign_ins_are_limited_per_address_for_a_minute() -> None:
    now = [0.0]
    failures = SignInFailures(now=lambda: now[0])
    assert [failures.fail("10.0.0.1") for _ in range(FAILURES_PER_MINUTE)] == [None] * FAILURES_PER_MINUTE
    assert failures.fail("10.0.0.1") == 60
    assert failures.fail("10.0.0.2") is None
    now[0] += 30
    assert failures.fail("10.0.0.1") == 30  # still failing: still limited, the window slides
    now[0] += 31
    assert failures.fail("10.0.0.1") is None  # the first ten have left the window


def test_a_failure_counts_against_the_peer_an_ipv6_one_by_its_64() -> None:
    assert client_address("192.0.2.7") == "192.0.2.7"
    assert client_address("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_address("2001:db8:1:2:aaaa::1") == client_address("2001:db8:1:2:bbbb::9")
    assert client_address("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_address("2001:db8:1:3::1") != client_address("2001:db8:1:2::1")
    assert client_address(None) == "unknown"


def test_times_read_as_people_say_them() -> None:
    assert views.relative(7200, 0) == "in 2 h"
    assert views.relative(0, 300) == "5 min ago"
    assert views.relative(3 * 86400, 0) == "in 3 days"
    assert views.relative(10, 0) == "in under a minute"
    assert views.moment(1_893_456_000, 0).absolute == "2030-01-01 00:00 UTC"


def test_a_form_field_gets_the_input_of_its_kind() -> None:
    schema = {"type": "object", "required": ["n"], "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Nodes"},
        "x": {"type": "number"}, "r": {"type": "string", "enum": ["eu", "us"]},
        "t": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "b": {"type": "boolean"}, "d": {"type": "string", "format": "date"},
        "e": {"type": "string", "format": "email"}, "u": {"type": "string", "format": "uri"},
        "s": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^a"},
    }}
    shown = {f.name: f for f in fields.form_fields(schema, "q1")}
    assert (shown["n"].widget, shown["n"].attrs, shown["n"].required) == (
        "number", {"step": "1", "min": "1", "max": "10"}, True)
    assert shown["n"].title == "Nodes" and shown["x"].attrs == {"step": "any"}
    assert [shown[k].widget for k in "rtbdeu"] == ["select", "checks", "checkbox", "date", "email", "url"]
    assert shown["s"].attrs["minlength"] == "2" and shown["s"].attrs["maxlength"] == "5"
    pattern = shown["s"].attrs["pattern"]
    assert re.fullmatch(pattern, "abc") and not re.fullmatch(pattern, "b")


def test_an_ask_the_operator_may_not_answer_has_no_controls() -> None:
    theirs = views.card(question(responders=["github:octocat"]), 0)
    assert not theirs.answerable and theirs.responders == ["GitHub @octocat"]
    ours = views.card(approval(responders=["operator:local"], approvals_needed=2,
                               approvers=["operator:local"]), 0)
    assert ours.answerable and ours.quorum == "1 of 2 approvals: the operator"


def test_the_harness_reads_labels_and_buttons() -> None:
    html = ('<form action="/inbox/q1/answer"><input type="hidden" name="csrf" value="t">'
            '<label for="n">Note</label><input id="n" name="note">'
            '<label class="check"><input type="checkbox" name="pick" value="2"> <span>red</span></label>'
            '<button type="submit" disabled></button><button name="answer" value="1">yes</button></form>')
    form = Forms(html).forms[0]
    assert form.labels() == ["Note", "red"] and form.buttons() == ["yes"]
    assert form.data("yes", {"Note": "hi"}, {"red"}) == [
        ("csrf", "t"), ("note", "hi"), ("pick", "2"), ("answer", "1")]
