"""What `aye … --help` says beyond a command's arguments: the environment `aye serve` reads, and
what each command without arguments of its own does."""

from __future__ import annotations

import argparse

SERVE_ENV = """environment (a .env file in the working folder is read too; the real environment wins):
  AYE_CONFIG            the TOML config file (default ./aye.toml; a named file must exist)
  AYE_DATABASE_URL      sqlite+aiosqlite:///./aye.db (default, or sqlite:///…) or
                        postgresql+asyncpg://… (or postgresql://…, postgres://…)
  AYE_LISTEN_URL        a direct PostgreSQL URL (same forms) used only for LISTEN: required
                        when AYE_DATABASE_URL is a transaction pooler such as PgBouncer
                        (default: AYE_DATABASE_URL)
  AYE_HOST, AYE_PORT    where to listen (default 127.0.0.1, 8080); the CLI finds aye there
                        too, unless AYE_URL says where
  AYE_URL               where the CLI, aye tui and aye mcp find aye
                        (default http://{AYE_HOST}:{AYE_PORT})
  AYE_OPERATOR_TOKEN    the operator's token (generated into aye-tokens.json when unset)
  AYE_AGENT_TOKEN       the default agent's token, with no [[agents]] (generated when unset)
  AYE_PUBLIC_URL        the https:// origin people and outside systems reach aye at
                        (external answers, sign-in redirects, links to the inbox)
  AYE_SIGNING_KEY_PATH  an Ed25519 private key (PEM) to sign receipts with
                        (default: one generated and kept in the store)
  AYE_AUDIT_HEAD_EVERY  how often a signed head of the audit chain goes to the log (default 1h)
  AYE_LOG_FORMAT        text (default) or json: one JSON object per line
  AYE_LOG_LEVEL         debug, info (default), warning or error
  AYE_SMTP_URL          turns on email: smtp://[user:pass@]host:port (STARTTLS when offered),
                        smtp+starttls://… (STARTTLS required) or smtps://… (implicit TLS)
  AYE_MAIL_FROM         the From address of aye's mail (required with AYE_SMTP_URL)
  SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_API_URL        the Slack surface (both tokens turn it on)
  GITHUB_WEBHOOK_SECRET, GITHUB_APP_ID, GITHUB_PRIVATE_KEY, GITHUB_PRIVATE_KEY_PATH,
  GITHUB_TOKEN, GITHUB_API_URL
                        the GitHub surface (the secret, and App or token auth, turn it on)
  SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_OIDC_ISSUER
                        "Sign in with Slack" in the inbox (both client values turn it on)
  GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET, GITHUB_WEB_URL
                        "Sign in with GitHub" in the inbox (both client values turn it on)"""

# The commands with no arguments of their own: (the line in `aye --help`, what `--help` says).
PLAIN = {
    "migrate": (
        "bring the store's schema up to date (serve does it at start)",
        "Bring the schema of the store at AYE_DATABASE_URL up to the newest revision and stop "
        "(aye serve does it at start; run it alone to upgrade before the processes). Exit 2 "
        "with one line when the store cannot be opened or is newer than this aye."),
    "watch": (
        "print every change to an ask as it happens (Ctrl-C stops)",
        "Print one line per event of the stream (GET /v1/events) as it happens, from the aye at "
        "AYE_URL with the operator token (AYE_OPERATOR_TOKEN, else aye-tokens.json); after a "
        "restart of aye it goes on where it stopped. Ctrl-C stops."),
    "tui": (
        "the operator's inbox in the terminal, live (q quits)",
        "The operator's inbox in the terminal, kept live: the open asks, one in full, answered "
        "from the keyboard. Talks to the aye at AYE_URL with the operator token "
        "(AYE_OPERATOR_TOKEN, else aye-tokens.json). q quits; NO_COLOR is honoured."),
    "mcp": (
        "aye's MCP server over stdio, for an MCP client to start (as the agent of "
        "AYE_AGENT_TOKEN, talking to AYE_URL)",
        "aye's MCP server over stdio, for an MCP client to start: its tools ask, gate a call and "
        "wait as the agent whose token is AYE_AGENT_TOKEN (else the agent token of the "
        "aye-tokens.json beside the store of AYE_DATABASE_URL), talking to the aye at AYE_URL. "
        "It exits when its input closes."),
}


def plain_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    said, described = PLAIN[name]
    sub.add_parser(name, help=said, description=described)
