"""End-to-end tests: real sockets and processes (aiohttp test servers and clients, the fake Slack
and GitHub, `aye serve` subprocesses, Chromium, MCP over stdio and HTTP, the README's examples)."""
