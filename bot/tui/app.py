"""`aye tui`: the operator's inbox in a terminal, as a Textual app over the HTTP API."""

from __future__ import annotations

import os

from textual.app import App

from bot.tui.api import Api
from bot.tui.inbox import Inbox

CSS = """
#main { height: 1fr; }
#left { width: 48%; min-width: 30; border: round $primary; }
#right { width: 1fr; border: round $primary; padding: 0 1; }
#list { height: 1fr; }
#filter { height: 3; }
#keys { height: 1; background: $panel; padding: 0 1; }
#status { height: 1; padding: 0 1; }
.dialog { width: 76; max-width: 100%; height: auto; max-height: 22; border: thick $warning;
          background: $surface; padding: 0 1; }
.dialog Input { border: none; height: 1; padding: 0 1; margin: 0 0 0 0; background: $boost; }
.dialog Input:focus { background: $primary 30%; }
App:nocolor .dialog Input:focus { text-style: reverse; }
.misfit { height: auto; }
Confirm, Note, LineAnswer, FormAnswer { align: center middle; }
App:nocolor DataTable > .datatable--cursor { text-style: reverse bold; }
App:nocolor #keys { text-style: reverse; }
"""


class Tui(App[int]):
    CSS = CSS
    TITLE = "aye"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, api: Api) -> None:
        # NO_COLOR: Textual's own filter then turns every color into the terminal's default
        # (rather than shades of grey); the cursor and labels keep reverse and bold.
        super().__init__(ansi_color=True if os.environ.get("NO_COLOR") is not None else None)
        self.api = api

    def on_mount(self) -> None:
        self.push_screen(Inbox(self.api))

    async def on_unmount(self) -> None:
        await self.api.close()
