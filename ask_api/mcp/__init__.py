"""aye as an MCP server: the tools `ask`, `wait` and `request_approval` (tools.py, with the
words a model reads in guide.py), reached in-process on `/mcp` (http.py, local.py) or over the
HTTP API by `aye mcp` on stdio (remote.py, bot/cli/mcp.py)."""
