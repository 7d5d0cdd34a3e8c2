"""`aye tui`'s dialogs, each over the inbox until answered or dismissed with Esc: the
confirmation of a destructive answer, a refusal's optional note, one line of answer (text,
multi, a choice by number or text), and a form with one input per field. The line and the form
send through the inbox and stay open on a misfit, with the server's reason under the input
(under the field the server names), so nothing typed is lost."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from bot.cli.text import line
from bot.tui import forms
from bot.tui.api import ApiDown, Reply

Sender = Callable[[Any], Awaitable[Reply]]
ARM = "destructive: press Enter again to send it, Esc to cancel"


def plain(text: str, style: str = "") -> Text:
    """Our own words, or agent text already cleaned: a Text, never markup."""
    return Text(text, style=style)


class Confirm(ModalScreen[bool]):
    """A destructive answer, confirmed with Enter (any other way out cancels it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "answer(True)", "confirm"), Binding("escape", "answer(False)"),
        Binding("n", "answer(False)"),
    ]

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(plain("destructive", "bold red reverse"))
            yield Static(plain(self.what))
            yield Static(plain("Enter confirms · Esc cancels", "italic"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Note(ModalScreen[str | None]):
    """A refusal's note (optional): Enter refuses, Esc cancels (None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel")]
    AUTO_FOCUS = "Input"

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(plain(self.what, "bold"))
            yield Input(placeholder="why (optional)", id="note")
            yield Static(plain("Enter refuses · Esc cancels", "italic"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class Sending(ModalScreen[Reply | None]):
    """What the line and the form share: sending, arming a destructive answer, a misfit."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel")]
    AUTO_FOCUS = "Input"

    def __init__(self, what: str, send: Sender, danger: bool) -> None:
        super().__init__()
        self.what, self.send, self.danger = what, send, danger
        self.armed = False

    async def deliver(self, answer: Any) -> None:
        if self.danger and not self.armed:
            self.armed = True
            self.misfit("", ARM)
            return
        try:
            reply = await self.send(answer)
        except ApiDown as exc:
            self.misfit("", f"{exc}: not sent")
            return
        where = reply.misfit()
        if where is None:
            self.dismiss(reply)
        else:
            self.misfit(where, line(reply.message))

    def misfit(self, where: str, why: str) -> None:
        raise NotImplementedError

    def action_cancel(self) -> None:
        self.dismiss(None)


class LineAnswer(Sending):
    """One line: text, a multi's `1, 3`, a choice's number or text."""

    def __init__(self, what: str, hint: str, send: Sender, danger: bool) -> None:
        super().__init__(what, send, danger)
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(plain(self.what, "bold"))
            yield Static(plain(self.hint))
            yield Input(id="answer")
            yield Static(id="misfit", classes="misfit")
            yield Static(plain("Enter sends · Esc cancels", "italic"))

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        await self.deliver(event.value)

    def on_input_changed(self) -> None:
        self.armed = False

    def misfit(self, where: str, why: str) -> None:
        self.query_one("#misfit", Static).update(plain(why, "bold red"))


class FormAnswer(Sending):
    """One input per field; Enter in any of them sends the form, Tab moves between them."""

    def __init__(self, what: str, fields: list[forms.Field], send: Sender, danger: bool) -> None:
        super().__init__(what, send, danger)
        self.fields = fields

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog form"):
            yield Static(plain(self.what, "bold"))
            for index, field in enumerate(self.fields):
                label = Text(field.label, style="bold")
                label.append(f"  {field.takes}", style="")
                yield Static(label)
                if field.about:
                    yield Static(plain(field.about, "italic"))
                yield Input(id=f"field-{index}")
                yield Static(id=f"misfit-{index}", classes="misfit")
            yield Static(id="misfit", classes="misfit")
            yield Static(plain("* required · Tab next field · Enter sends · Esc cancels", "italic"))

    def typed(self) -> dict[str, str]:
        return {f.name: self.query_one(f"#field-{i}", Input).value
                for i, f in enumerate(self.fields)}

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        await self.deliver(forms.answer(self.fields, self.typed()))

    def on_input_changed(self) -> None:
        self.armed = False

    def misfit(self, where: str, why: str) -> None:
        for index in range(len(self.fields)):
            self.query_one(f"#misfit-{index}", Static).update("")
        self.query_one("#misfit", Static).update("")
        names = [f.name for f in self.fields]
        # `answer.count`, or deeper (`answer.tags.0`): the field is the first part.
        name = where.split(".", 1)[0]
        if name in names:
            index = names.index(name)
            self.query_one(f"#misfit-{index}", Static).update(plain(why, "bold red"))
            self.query_one(f"#field-{index}", Input).focus()
        else:
            self.query_one("#misfit", Static).update(plain(why, "bold red"))
