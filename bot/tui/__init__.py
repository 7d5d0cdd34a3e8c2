"""`aye tui`: the operator's full-screen inbox in a terminal (Textual), live from the event
stream, answering over the same HTTP API and with the same operator token as the CLI."""

from __future__ import annotations

from bot.tui.api import Api


def run(url: str, token: str) -> int:
    """Until `q`: the exit code is 0 (the CLI has already refused a server it cannot reach,
    exit 3, or a token that is not the operator's, exit 2)."""
    from bot.tui.app import Tui  # Textual, loaded for this command only

    app = Tui(Api(url, token))
    app.run()
    return app.return_code or 0
