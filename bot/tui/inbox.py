"""The inbox screen of `aye tui`: the asks on the left (a table, newest first, live from the
event stream), the selected ask in full on the right, the keys that answer it below, and one
line saying whether the server is there. Answering is bot.tui.answer_dialogs's."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static
from textual.widgets.data_table import ColumnKey
from textual.worker import Worker

from bot.cli.text import line
from bot.tui import bindings, listing, panel
from bot.tui.answer_dialogs import Answering, Work, later
from bot.tui.api import Api, ApiDown
from bot.tui.events import Frame, follow
from bot.tui.panel import NOTICE, TAKEN, Outcome

AGES_EVERY_S = 1.0  # ages and deadlines in the list are in seconds at their finest
COLUMNS = (("Ref", "ref"), ("Age", "age"), ("Due", "due"), ("Question", "what"))
KEYS = "↑↓ jk · / filter · Tab all · q quit"
ELSEWHERE = {"answered": "answered elsewhere", "expired": "expired", "withdrawn": "withdrawn"}


def _digit_bindings() -> list[Binding]:
    return [Binding(str(d), f"press('{d}')", show=False) for d in range(1, 10)]


class Inbox(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "quit"),
        Binding("ctrl+c", "app.quit", show=False),
        Binding("j", "move(1)", show=False),
        Binding("k", "move(-1)", show=False),
        Binding("tab", "switch", "open/all", priority=True),
        Binding("slash", "filter", "filter"),
        Binding("escape", "unfilter", show=False),
        Binding("shift+down", "scroll_detail(3)", show=False),
        Binding("shift+up", "scroll_detail(-3)", show=False),
        *_digit_bindings(),
        *[Binding(key, f"press('{key}')", show=False) for key in "arync"],
    ]

    def __init__(self, api: Api) -> None:
        super().__init__()
        self.api = api
        self.listing = listing.Listing()
        self.selected: str | None = None
        self.details: dict[str, dict[str, Any]] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.sending: set[str] = set()
        self.live = False
        self.question_width = listing.MIN_QUESTION
        self.answering = Answering(self)

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield DataTable(id="list", cursor_type="row", zebra_stripes=False)
                yield Input(placeholder="filter by text, ref or agent", id="filter")
            with VerticalScroll(id="right"):
                yield Static(id="detail")
        yield Static(Text(KEYS), id="keys")
        yield Static(Text("connecting to " + self.api.url), id="status")

    def on_mount(self) -> None:
        table = self.query_one("#list", DataTable)
        for name, key in COLUMNS:
            table.add_column(name, key=key, width=len(name))
        self.query_one("#filter", Input).display = False
        table.focus()
        self.show_detail()
        self.start(later(follow, self.api, self), "stream")
        self.set_interval(AGES_EVERY_S, self.refresh_ages)

    def start(self, work: Work, group: str) -> Worker[None]:
        """A worker of its own group: a newer one of the group cancels the older."""
        return self.run_worker(work, group=group, exclusive=True)

    # -- the event stream (bot.tui.events calls these) -------------------------------------

    async def connected(self, resumed: bool) -> None:
        self.live = True
        if not resumed:  # a first stream (or one that never saw an event): read the list
            try:
                self.listing.replace(await self.api.asks(self.listing.everything))
            except ApiDown as exc:
                self.say(str(exc))
                return
        self.say_live()
        self.rebuild()
        if self.selected:
            self.fetch(self.selected)

    def event(self, frame: Frame) -> None:
        ask = frame.ask
        ident = ask.get("id")
        self.listing.apply(ask)
        if ident == self.selected and isinstance(ident, str):
            if ask.get("status") != "open":
                self.listing.kept = ident  # what closed under the cursor stays until it moves
            self.closed_elsewhere(ident, ask)
            self.fetch(ident)
        if isinstance(ident, str):
            self.refresh_row(ident)
        self.say_live()

    def lost(self, why: str, retry_in: float, attempt: int) -> None:
        self.live = False
        self.say(f"aye at {self.api.url} cannot be reached ({why}): reconnecting in "
                 f"{retry_in:g}s (attempt {attempt})")

    def closed_elsewhere(self, ident: str, ask: dict[str, Any]) -> None:
        """The selected ask closed, not by this TUI: its panel says so."""
        status = str(ask.get("status"))
        if status == "open" or ident in self.sending or ident in self.outcomes:
            return
        words = ELSEWHERE.get(status, status)
        by = ask.get("answered_by")
        self.outcomes[ident] = Outcome(NOTICE, words + (f" by {line(by)}" if by else ""))

    # -- the list ------------------------------------------------------------------------

    def rebuild(self) -> None:
        """The table from the listing, the selected ask kept under the cursor."""
        table = self.query_one("#list", DataTable)
        rows = self.listing.shown()
        now = time.time()
        sizes = listing.widths(rows, table.size.width or 40, now)
        # Widths of our own, not measured by the table: it measures its cells when idle, and a
        # paint before then (a loaded machine, the first one) is kept in its cache, cut to
        # each column's label ("Approval", "Promote") until something else changes.
        for key, width in sizes.items():
            column = table.columns[ColumnKey(key)]
            column.width, column.auto_width = width, False
        self.question_width = width = sizes["what"]
        table.clear()
        for ask in rows:
            table.add_row(*listing.cells(ask, now, width), key=ask["id"])
        ids = [a["id"] for a in rows]
        if self.selected in ids:
            table.move_cursor(row=ids.index(self.selected), animate=False, scroll=True)
        else:
            self.select(ids[0] if ids else None)
        self.query_one("#left").border_title = self.list_title(len(rows))

    def refresh_row(self, ident: str) -> None:
        """One ask changed: its row alone, where it has one (a whole rebuild of hundreds of
        rows is what an event would otherwise cost); a new row goes in its place in order."""
        table = self.query_one("#list", DataTable)
        ask = self.listing.asks[ident]
        if ident not in table.rows:
            if self.listing.wanted(ask):
                self.rebuild()
            return
        if not self.listing.wanted(ask):
            table.remove_row(ident)
            selected = self.selected
            if selected is not None and selected in table.rows:  # the cursor stays on it
                table.move_cursor(row=table.get_row_index(selected), animate=False)
        else:
            cells = listing.cells(ask, time.time(), self.question_width)
            for column, cell in zip(("ref", "age", "due", "what"), cells, strict=True):
                table.update_cell(ident, column, cell)
        self.query_one("#left").border_title = self.list_title(table.row_count)

    def refresh_ages(self) -> None:
        """Ages and deadlines as time passes: the cells whose words changed, alone."""
        table = self.query_one("#list", DataTable)
        now = time.time()
        for row in table.ordered_rows:
            ident = row.key.value
            ask = self.listing.asks.get(ident) if ident is not None else None
            if ask is None:
                continue
            for key, cell in zip(("age", "due"), listing.timing(ask, now), strict=True):
                if len(cell) > table.columns[ColumnKey(key)].width:  # `late`, `100d`: wider
                    self.rebuild()
                    return
                if str(table.get_cell(row.key, key)) != str(cell):
                    table.update_cell(row.key, key, cell)

    def list_title(self, count: int) -> str:
        words = f"{'All' if self.listing.everything else 'Open'} asks ({count})"
        return words + (" matching /" if self.listing.text else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return  # a highlight from before the list was rebuilt
        ident = event.row_key.value
        if ident != self.selected:
            self.select(ident)

    def select(self, ident: str | None) -> None:
        kept = self.listing.kept
        self.selected = ident
        if kept is not None and kept != ident:
            self.listing.kept = None  # a closed ask stays only while it is selected
            self.outcomes.pop(kept, None)
            self.call_later(self.rebuild)
        self.show_detail()
        if ident is not None:
            self.fetch(ident)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_press(bindings.ENTER)

    def on_resize(self) -> None:
        self.call_later(self.rebuild)

    # -- the panel -----------------------------------------------------------------------

    def current(self) -> dict[str, Any] | None:
        if self.selected is None:
            return None
        return self.details.get(self.selected) or self.listing.asks.get(self.selected)

    def show_detail(self) -> None:
        ask = self.current()
        detail = self.query_one("#detail", Static)
        right = self.query_one("#right")
        if ask is None:
            none = "No open asks." if not self.listing.everything else "No asks."
            detail.update(Text(f"{none} New ones show here as they are asked."))
            right.border_title = ""
            self.query_one("#keys", Static).update(Text(KEYS))
            return
        detail.update(panel.detail(ask, self.outcomes.get(str(ask.get("id")))))
        right.border_title = line(ask.get("ref", "?"))
        self.query_one("#keys", Static).update(Text(f"{bindings.hint(ask)} · {KEYS}"))

    def fetch(self, ident: str) -> None:
        self.start(later(self._fetch, ident), f"detail-{ident}")

    async def _fetch(self, ident: str) -> None:
        try:
            reply = await self.api.ask(ident)
        except ApiDown:
            return  # the status line says so; the list's copy stays shown
        if reply.ok and isinstance(reply.body, dict):
            self.details[ident] = reply.body
            self.listing.apply({k: v for k, v in reply.body.items() if k != "history"})
            if ident == self.selected:
                self.show_detail()

    # -- the status line -----------------------------------------------------------------

    def say(self, words: str) -> None:
        self.query_one("#status", Static).update(Text(words))

    def say_live(self) -> None:
        if self.live:
            self.say(f"live · {self.listing.open_count()} open · {self.api.url}")

    # -- keys ----------------------------------------------------------------------------

    def action_press(self, key: str) -> None:
        self.answering.press(key)

    def action_move(self, by: int) -> None:
        table = self.query_one("#list", DataTable)
        table.action_cursor_down() if by > 0 else table.action_cursor_up()

    def action_scroll_detail(self, by: int) -> None:
        self.query_one("#right", VerticalScroll).scroll_relative(y=by, animate=False)

    def action_switch(self) -> None:
        self.listing.everything = not self.listing.everything
        self.rebuild()
        if self.listing.everything:
            self.start(later(self._load_all), "list")

    async def _load_all(self) -> None:
        try:
            fresh = await self.api.asks(True)
            self.listing.replace(list(self.listing.asks.values()) + fresh)  # the fresh ones win
        except ApiDown as exc:
            self.say(str(exc))
            return
        self.rebuild()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_unfilter(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display:
            box.value, box.display = "", False
            self.listing.text = ""
            self.rebuild()
            self.query_one("#list", DataTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.listing.text = event.value.strip()
            self.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.query_one("#list", DataTable).focus()

    def remember(self, ident: str, outcome: Outcome) -> None:
        """What an answer came to, shown on top of the ask's panel."""
        self.outcomes[ident] = outcome
        if outcome.kind == TAKEN:
            self.listing.kept = ident
        if ident == self.selected:
            self.show_detail()
