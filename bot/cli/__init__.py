"""`aye`: serve, and the operator's commands over the HTTP API."""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import logging
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dotenv import load_dotenv

from bot import logs
from bot.cli import audit as cli_audit
from bot.cli import formats as cli_formats
from bot.cli import show as cli_show
from bot.cli import watch as cli_watch
from bot.cli.help import SERVE_ENV, plain_command
from bot.cli.text import line, one_line, relative, when
from bot.settings import Settings, SettingsError, server_url, store_url
from bot.token_file import read_token_file, token_file_path
from core.domain.visible import HIDDEN_WARNING, approval_hides

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
WHOAMI = "/v1/whoami"  # whose token this is (ask_api/whoami.py)
QUESTION_WIDTH = 60


class Unreachable(Exception):
    pass


class BadSetup(Exception):
    """The CLI cannot talk to the server as configured (URL, token): exit 2."""


class Client:
    def __init__(self, url: str, token: str) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise BadSetup(f"AYE_URL is not an http(s) URL: {url!r}")
        self.url = url.rstrip("/")
        self.token = token

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.url + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                     "X-Aye-Client": "cli"},  # an answer is recorded as the CLI's, not curl's
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            try:
                return err.code, json.loads(err.read() or b"null")
            except ValueError:
                return err.code, {"error": "http", "message": f"HTTP {err.code}"}
        except urllib.error.URLError as err:
            raise Unreachable(self._unreachable(err.reason)) from None
        except OSError as err:
            raise Unreachable(self._unreachable(err)) from None

    def _unreachable(self, err: object) -> str:
        return (f"cannot reach aye at {self.url} (set AYE_URL to where `aye serve` listens): "
                f"{_reason(err)}")

    def expect_operator(self, from_file: Path | None) -> None:
        """Whether the token is the operator's, asked before anything is read: a read with an
        agent's token would be that agent's read, and erase its sensitive answers. BadSetup
        (exit 2) when it is not; `from_file`: the token file the token was read from."""
        status, body = self.request("GET", WHOAMI)
        said = body.get("as") if isinstance(body, dict) else None
        if status == 200 and said == "operator":
            return
        held = f"the token in {from_file}" if from_file else "it"
        if status == 200 and said == "agent":
            who = line(str(body.get("agent", "?")))
            raise BadSetup(f"AYE_OPERATOR_TOKEN is not the operator token: {held} is agent "
                           f"{who}'s token, and these commands act as the operator")
        if status == 401:
            raise BadSetup(f"AYE_OPERATOR_TOKEN is not the operator token: {held} is not a "
                           f"token the aye at {self.url} knows")
        raise BadSetup(f"AYE_OPERATOR_TOKEN could not be checked: {self.url} answered HTTP "
                       f"{status} to GET {WHOAMI} (is AYE_URL an aye as new as this CLI?)")


def _version() -> str:
    try:
        return importlib.metadata.version("aye")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _reason(err: object) -> str:
    text = getattr(err, "strerror", None) or str(err)
    return str(text).lower()


def _client() -> Client:
    """A client of the aye at AYE_URL holding the operator token, checked with the server:
    BadSetup when it is not the operator's, Unreachable when the server cannot be reached."""
    try:
        url = server_url(os.environ)
        token, from_file = os.environ.get("AYE_OPERATOR_TOKEN", "").strip(), None
        if not token:
            from_file = token_file_path(store_url(os.environ))
            token = read_token_file(from_file).get("operator", "")
    except SettingsError as exc:
        raise BadSetup(str(exc)) from None
    if not token:
        raise BadSetup(f"no operator token: set AYE_OPERATOR_TOKEN, or run where `aye serve` "
                       f"keeps {from_file}")
    client = Client(url, token)
    client.expect_operator(from_file)
    return client


def _failed(status: int, body: Any, ref: str | None = None) -> int:
    """The server's refusal in one line (naming `ref`, the ask the command was given, when
    there is none such); exit 1 for a refused answer, 2 otherwise."""
    message = body.get("message", f"HTTP {status}") if isinstance(body, dict) else f"HTTP {status}"
    if status == 404 and ref is not None:
        message = f"no ask {ref} at this aye (aye asks --all lists them)"
    field = body.get("field") if isinstance(body, dict) else None
    print(f"aye: {line(message)}" + (f" (field {line(field)})" if field else ""), file=sys.stderr)
    if status == 401:
        print("aye: the operator token was refused: AYE_OPERATOR_TOKEN (or the token file's) "
              "is not this aye's (is AYE_URL the aye it belongs to?)", file=sys.stderr)
    # 503 author_unknown: the approval is refused for now (who opened the work cannot be read).
    code = body.get("error") if isinstance(body, dict) else None
    refused = status in (403, 409, 422) or (status == 503 and code == "author_unknown")
    return EXIT_REFUSED if refused else EXIT_USAGE


def cmd_asks(client: Client, args: argparse.Namespace) -> int:
    query = "" if args.all else "?status=open"
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        sep = "&" if query else "?"
        path = "/v1/asks" + query + (f"{sep}cursor={cursor}" if cursor else "")
        status, body = client.request("GET", path + ("&" if "?" in path else "?") + "limit=200")
        if status != 200:
            return _failed(status, body)
        rows.extend(body["asks"])
        cursor = body.get("next_cursor")
        if not cursor or len(rows) >= args.max:
            break
    if not rows:
        print("no open asks" if not args.all else "no asks")
        return EXIT_OK
    now = time.time()
    table = [("REF", "STATUS", "AGENT", "AGE", "DEADLINE", "QUESTION")]
    for ask in rows:
        table.append((
            line(ask["ref"]), line(ask["status"]), one_line(str(ask.get("agent", "?")), 20),
            relative(when(ask["created_at"]), now),
            relative(when(ask["deadline"]), now) if ask["status"] == "open" else "-",
            one_line(cli_formats.marker(ask) + _what(ask), QUESTION_WIDTH),
        ))
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5])
    for ask in rows:  # below the table: a column has no room for the whole sentence
        if ask.get("kind") == "approval" and approval_hides(ask.get("operation"), ask.get("input")):
            print(f"{line(ask['ref'])}: careful, {HIDDEN_WARNING} (shown as codes such as [U+202E])")
    return EXIT_OK


def _what(ask: dict[str, Any]) -> str:
    """The question; for an approval its operation and input, so that two approvals of one
    operation can be told apart."""
    if ask.get("operation") == "human.start":
        return str(ask["question"])  # "May triage start on github:o/r#7? (title)"
    if ask.get("operation"):
        shown = json.dumps(ask.get("input"), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)  # one_line shows hidden characters as codes
        return f"approve {ask['operation']} {shown}"
    return str(ask["question"])


def cmd_show(client: Client, args: argparse.Namespace) -> int:
    status, ask = client.request("GET", f"/v1/asks/{urllib.parse.quote(args.ref)}")
    if status != 200:
        return _failed(status, ask, args.ref)
    cli_show.show(ask)
    return EXIT_OK


def cmd_answer(client: Client, args: argparse.Namespace) -> int:
    """The answer goes as the text typed: the server reads it per the ask's format (`1, 3`,
    `yes`, `ok`, a form's one line of JSON) and says what does not fit."""
    body: dict[str, Any] = {"answer": args.answer}
    if args.note:
        body["note"] = args.note
    path = f"/v1/asks/{urllib.parse.quote(args.ref)}"
    status, reply = client.request("POST", path + "/answer", body)
    if status == 200 and isinstance(reply, dict) and "needed" in reply:
        # An approval counted towards its quorum, still open: nothing taken yet to show.
        ref = line(str(reply.get("ref") or args.ref))
        print(f"counted: {ref} approval {reply.get('approvals')} of {reply['needed']}")
        return EXIT_OK
    if status == 200:
        _, ask = client.request("GET", path)
        answer = (ask.get("answer") or {}) if isinstance(ask, dict) else {}
        value = answer.get("value")
        shown = "(sensitive, hidden)" if value is None else cli_formats.shown(ask, value)
        print(f"taken: {line(args.ref)} answered {shown}")
        return EXIT_OK
    code = _failed(status, reply, args.ref)
    if status == 422 and isinstance(reply, dict) and reply.get("error") == "invalid_answer":
        _, ask = client.request("GET", path)
        valid = cli_formats.valid_answers(ask) if isinstance(ask, dict) else None
        if valid:
            print(f"aye: valid answers: {valid}", file=sys.stderr)
    return code


def cmd_withdraw(client: Client, args: argparse.Namespace) -> int:
    status, reply = client.request("DELETE", f"/v1/asks/{urllib.parse.quote(args.ref)}")
    if status == 200:
        print(f"withdrawn: {args.ref}")
        return EXIT_OK
    return _failed(status, reply, args.ref)


MIGRATE_WAIT_S = 60.0


def cmd_migrate() -> int:
    """`aye migrate`: bring the store's schema up to date, as `aye serve` does at start, and
    stop. Reads AYE_DATABASE_URL alone: no config file, no tokens."""
    from store.db import Store, StoreError  # SQLAlchemy: only for this command and serve

    # Under AYE_LOG_FORMAT=json its lines are JSON objects too, like serve's; its one line
    # says what it did, so the store's own info lines stay quiet.
    logs.setup(level=logging.WARNING, fmt=logs.requested_format(os.environ))
    try:
        settings = Settings.from_env()
        store = Store(settings.database_url, settings.listen_url)
        revision = asyncio.run(_migrate(store))
    except (SettingsError, StoreError) as exc:
        logs.say(str(exc), level=logging.ERROR, stream=sys.stderr)
        return EXIT_USAGE
    logs.say(f"store {store.describe()} is at revision {revision} (head)")
    return EXIT_OK


async def _migrate(store: Any) -> str:
    from store import migrate  # Alembic: only for this command and serve

    try:
        # A one-off: wait for another `aye migrate` on the same SQLite file to finish.
        await store.open(wait_s=MIGRATE_WAIT_S)
        return await migrate.revision(store) or "none"
    finally:
        await store.close()


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="aye", description="Ask people, from agents.")
    top.add_argument("--version", action="version", version=f"aye {_version()}")
    sub = top.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the whole service", epilog=SERVE_ENV,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the ask API, the surfaces that are configured and the clock, in one process.",
    )
    serve.add_argument("--host", help="where to listen (overrides AYE_HOST)")
    serve.add_argument("--port", help="the port to listen on (overrides AYE_PORT)")
    plain_command(sub, "migrate")
    asks = sub.add_parser("asks", help="list open asks (or all)")
    asks.add_argument("--all", action="store_true", help="every ask, not only open ones")
    asks.add_argument("--max", type=int, default=1000, help=argparse.SUPPRESS)
    show = sub.add_parser("show", help="one ask in full")
    show.add_argument("ref")
    answer = sub.add_parser("answer", help="answer as operator:local")
    answer.add_argument("ref")
    answer.add_argument(
        "answer", help="as the ask's format takes it: an option's number or text, free text, "
        "`1, 3` (multi), yes/no (confirm), ok (ack), or one line of JSON (form)")
    answer.add_argument("--note", help="a remark beside the answer")
    withdraw = sub.add_parser("withdraw", help="withdraw an open ask")
    withdraw.add_argument("ref")
    plain_command(sub, "watch")
    plain_command(sub, "tui")
    audit = sub.add_parser("audit", help="the audit chain: export it, or verify it")
    steps = audit.add_subparsers(dest="audit", required=True)
    export = steps.add_parser("export", help="every entry as a JSON line (from AYE_URL)")
    export.add_argument("--after", type=int, default=0, help="only entries after this seq")
    verify = steps.add_parser(
        "verify", help="recompute the chain from the store (AYE_DATABASE_URL) and hold every "
        "ask's row to its history")
    verify.add_argument("--head", metavar="FILE", help="a head saved earlier (GET "
                        "/v1/audit/head): exit 1 when the chain no longer holds it")
    keys = sub.add_parser("keys", help="the keys receipts are signed with")
    keys.add_subparsers(dest="keys", required=True).add_parser(
        "rotate", help="make a new current key in the store (AYE_DATABASE_URL); the earlier "
        "ones still verify")
    plain_command(sub, "mcp")
    return top


def cmd_audit(client: Client, args: argparse.Namespace) -> int:
    return cli_audit.cmd_export(client, max(0, args.after), _failed)


COMMANDS = {"asks": cmd_asks, "show": cmd_show, "answer": cmd_answer, "withdraw": cmd_withdraw,
            "audit": cmd_audit}


def main(argv: list[str] | None = None) -> int:
    # A .env in the working folder (AYE_URL, AYE_OPERATOR_TOKEN…); the real environment wins.
    load_dotenv(".env", override=False)
    try:
        return _dispatch(parser().parse_args(argv))
    except BrokenPipeError:
        # `aye asks | head`: the reader left; say nothing more, and no traceback at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "serve":
        from bot.app import serve

        for flag, name in (("host", "AYE_HOST"), ("port", "AYE_PORT")):
            if getattr(args, flag):
                os.environ[name] = getattr(args, flag)
        return serve()
    if args.command == "migrate":
        return cmd_migrate()
    if args.command == "mcp":
        from bot.cli.mcp import run as mcp  # the MCP SDK, loaded for this command only

        return mcp()
    if args.command == "watch":
        return _watch()
    if args.command == "tui":
        return _tui()
    if args.command == "audit" and args.audit == "verify":
        return cli_audit.cmd_verify(args.head)
    if args.command == "keys":
        from bot.cli.keys import cmd_rotate

        return cmd_rotate()
    return _on_server(lambda client: COMMANDS[args.command](client, args))


def _on_server(command: Callable[[Client], int]) -> int:
    """A command on the server at AYE_URL with the operator token: exit 3 when it cannot be
    reached, 2 when the URL or the token is wrong, with one line saying which."""
    try:
        return command(_client())
    except Unreachable as exc:
        print(f"aye: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except BadSetup as exc:
        print(f"aye: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _tui() -> int:
    """`aye tui`: the URL and the operator token checked as for every command (exit 3, 2),
    then the inbox until `q`."""

    def inbox(client: Client) -> int:
        from bot.tui import run  # Textual, loaded for this command only

        return run(client.url, client.token)

    return _on_server(inbox)


def _watch() -> int:
    return _on_server(lambda client: cli_watch.cmd_watch(client, Unreachable))

