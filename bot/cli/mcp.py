"""`aye mcp`: aye's MCP server over stdio, for an MCP client to start (Claude Code, Cursor,
Codex…). It acts as the agent whose token is in AYE_AGENT_TOKEN (or, on the machine where
`aye serve` keeps its token file, the generated agent token), and only as an agent; talks to
the aye at AYE_URL (default: http://{AYE_HOST}:{AYE_PORT}, as `aye serve` listens) over the
HTTP API, and ends when the client closes its stdin. stdout is the protocol's: everything
else goes to stderr."""

from __future__ import annotations

import asyncio
import os
import sys

from dotenv import load_dotenv

from bot import logs
from bot.settings import SettingsError, server_url, store_url
from bot.token_file import read_token_file, token_file_path
from core.domain.kinds import Kinds

# The MCP SDK, aiohttp and the surfaces load only once there is a token to act with: a client
# started with none hears so at once (in well under a second), not after seconds of imports.

EXIT_OK, EXIT_USAGE = 0, 2


def run() -> int:
    """`aye mcp` (the environment already read, .env included): exit 2 with one line on
    stderr when there is no agent token or AYE_URL is not an http(s) URL. Whether the token
    is an agent's is the server's to say, asked before each tool acts until it has said so
    (ask_api/mcp/remote.py): every call is `unauthorized` with the operator's or an unknown
    one, even when aye could not be reached at start."""
    try:
        url = server_url(os.environ)
        token = os.environ.get("AYE_AGENT_TOKEN", "").strip()
        if not token:
            path = token_file_path(store_url(os.environ))
            token = read_token_file(path).get("agent", "")
            if not token:
                return _fail(f"no agent token: set AYE_AGENT_TOKEN, or AYE_DATABASE_URL to the "
                             f"store `aye serve` uses (its token file, {path.resolve()}, "
                             "is not there)")
    except SettingsError as exc:
        return _fail(str(exc))
    logs.setup()
    from bot.surfaces import PLUGINS, register

    # The work variants (`work: {"slack": …}`) the tools' schemas offer, as aye serve has them.
    known = register(PLUGINS)
    try:
        asyncio.run(serve(url, token, known))
    except KeyboardInterrupt:
        pass
    return EXIT_OK


async def serve(url: str, token: str, kinds: Kinds) -> None:
    """Serve MCP on stdin/stdout until stdin closes; a call in flight then is dropped (its ask
    stays open in aye, for `wait` to pick up later)."""
    import aiohttp
    from mcp.server.stdio import stdio_server

    from ask_api.mcp.remote import RemoteAgent
    from ask_api.mcp.tools import build_server

    async with aiohttp.ClientSession() as session:
        agent = RemoteAgent(url, token, session)
        server = build_server(lambda _ctx: agent, kinds)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def _fail(line: str) -> int:
    print(f"aye: {line}", file=sys.stderr)
    return EXIT_USAGE


def main() -> int:
    # A .env in the working folder (AYE_URL, AYE_AGENT_TOKEN…); the real environment wins.
    load_dotenv(".env", override=False)
    return run()


if __name__ == "__main__":
    sys.exit(main())
