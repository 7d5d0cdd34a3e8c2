"""Answering from `aye tui`: a key (bot.tui.bindings says what it does), a dialog where one is
needed (a destructive answer's confirmation, a refusal's note, a typed answer or a form), the
call to the server as the operator, and what came of it, shown on the ask's panel: taken (with
the value, or an approval counted towards its quorum) or refused and why."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any, Protocol, cast

from textual.app import App
from textual.worker import Worker

from bot.cli import formats as cli_formats
from bot.cli.text import line
from bot.tui import bindings, forms, listing
from bot.tui.api import Api, ApiDown, Reply
from bot.tui.panel import NOTICE, REFUSED, TAKEN, Outcome
from bot.tui.screens import Confirm, FormAnswer, LineAnswer, Note


class Host(Protocol):
    """The inbox, as answering needs it."""

    api: Api
    sending: set[str]

    @property
    def app(self) -> App[Any]: ...

    def current(self) -> dict[str, Any] | None: ...

    def remember(self, ident: str, outcome: Outcome) -> None: ...

    def fetch(self, ident: str) -> None: ...

    def run_worker(self, work: Callable[[], Coroutine[None, None, None]], *, group: str = ...,
                   exclusive: bool = ...) -> Worker[None]: ...


Work = Callable[[], Coroutine[None, None, None]]


def later(fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> Work:
    """A worker's work as a coroutine function (bound to its arguments), not a coroutine: one
    the closing app never starts leaves nothing unawaited behind."""
    return cast(Work, partial(fn, *args))


class Answering:
    def __init__(self, host: Host) -> None:
        self.host = host

    def press(self, key: str) -> None:
        ask = self.host.current()
        action = bindings.on_key(ask, key)
        if ask is None or isinstance(action, bindings.Nothing):
            if ask is not None and isinstance(action, bindings.Nothing):
                self.host.remember(ask["id"], Outcome(NOTICE, action.why))
            return
        danger = bool(ask.get("danger"))
        if isinstance(action, bindings.Send) and action.affirmative and danger:
            self.host.app.push_screen(Confirm(confirming(ask, action.answer)),
                                      lambda yes: self.send(ask, action.answer) if yes else None)
        elif isinstance(action, bindings.Send):
            self.send(ask, action.answer)
        elif isinstance(action, bindings.AskNote):
            self.host.app.push_screen(Note(f"Refuse {what(ask)}"), lambda note: self.refuse(ask, note))
        elif isinstance(action, bindings.OpenInput):
            self.open_input(ask, action.form, danger)

    def refuse(self, ask: dict[str, Any], note: str | None) -> None:
        if note is not None:  # None: the dialog was cancelled
            self.send(ask, bindings.REFUSE, note or None)

    def send(self, ask: dict[str, Any], answer: Any, note: str | None = None) -> None:
        self.host.run_worker(later(self._send, ask, answer, note), group="answer")

    async def _send(self, ask: dict[str, Any], answer: Any, note: str | None) -> None:
        ident = ask["id"]
        self.host.sending.add(ident)
        try:
            reply = await self.host.api.answer(ident, answer, note)
        except ApiDown as exc:
            self.host.sending.discard(ident)
            self.host.remember(ident, Outcome(REFUSED, f"{exc}: not answered"))
            return
        await self.done(ask, reply)

    def open_input(self, ask: dict[str, Any], form: bool, danger: bool) -> None:
        ident = ask["id"]

        async def sender(answer: Any) -> Reply:
            self.host.sending.add(ident)
            return await self.host.api.answer(ident, answer, None)

        def closed(reply: Reply | None) -> None:
            if reply is None:
                self.host.sending.discard(ident)  # cancelled: nothing of ours is on its way
            else:
                self.host.run_worker(later(self.done, ask, reply), group="answer")

        title = f"Answer {what(ask)}"
        if form:
            screen: FormAnswer | LineAnswer = FormAnswer(title, forms.fields(ask), sender, danger)
        else:
            screen = LineAnswer(title, typing_hint(ask), sender, danger)
        self.host.app.push_screen(screen, closed)

    async def done(self, ask: dict[str, Any], reply: Reply) -> None:
        ident = ask["id"]
        try:
            outcome = await self.outcome(ask, reply)
        finally:
            self.host.sending.discard(ident)
        self.host.remember(ident, outcome)
        self.host.fetch(ident)

    async def outcome(self, ask: dict[str, Any], reply: Reply) -> Outcome:
        body = reply.body if isinstance(reply.body, dict) else {}
        if reply.ok and "needed" in body:  # an approval counted, its quorum not yet reached
            return Outcome(TAKEN, f"counted: approval {line(body.get('approvals'))} of "
                                  f"{line(body['needed'])}")
        if reply.ok:
            return Outcome(TAKEN, await self.answered(ask))
        words = line(reply.message) + (f" ({line(reply.error)})" if reply.error else "")
        if reply.error == "invalid_answer":
            valid = cli_formats.valid_answers(ask)
            words += f"; valid answers: {valid}" if valid else ""
        return Outcome(REFUSED, words)

    async def answered(self, ask: dict[str, Any]) -> str:
        """`answered yes` (as `aye answer` says it), read back from the server."""
        try:
            reply = await self.host.api.ask(ask["id"])
        except ApiDown:
            return "answered"
        fresh = reply.body if reply.ok and isinstance(reply.body, dict) else {}
        value = (fresh.get("answer") or {}).get("value")
        if fresh.get("kind") == "approval":  # words, as the list says it: `refused`
            return listing.outcome_words(fresh.get("outcome")).lower() or "answered"
        shown = "(sensitive, hidden)" if value is None else cli_formats.shown(fresh, value)
        return f"answered {shown}"


def what(ask: dict[str, Any]) -> str:
    """`q7: Ship it?`, `a3: Approval needed: deploy.prod`: the ask, in a dialog's title."""
    return f"{line(ask.get('ref', '?'))}: {line(listing.title(ask))}"


def confirming(ask: dict[str, Any], answer: str) -> str:
    """What Enter would do to a destructive ask, in words."""
    options = ask.get("options") or []
    if ask.get("kind") == "approval":
        said = "approve"
    elif answer.isdigit() and 1 <= int(answer) <= len(options):
        said = f"answer {line(options[int(answer) - 1])}"
    else:
        said = f"answer {line(answer)}"
    return f"{what(ask)}\nThis ask is marked destructive. Really {said}?"


def typing_hint(ask: dict[str, Any]) -> str:
    return line(cli_formats.how(ask))
