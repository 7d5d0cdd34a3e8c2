"""`aye watch`: the operator's event stream, one line per event, as it comes; it reconnects
with the last event's id when the connection drops, so nothing is missed or shown twice."""

from __future__ import annotations

import json
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Protocol

from bot.cli.text import line, one_line

QUESTION_WIDTH = 60
READ_TIMEOUT_S = 45.0  # the server sends a comment at least every 15 s
RETRY_S = (1.0, 2.0, 5.0)


class HasServer(Protocol):
    url: str
    token: str


class Refused(Exception):
    """The server refused the stream (a wrong token): the status and the message."""


def cmd_watch(client: HasServer, first_failure: type[Exception]) -> int:
    """Print each event until interrupted (SIGINT: exit 0). `first_failure` is raised when the
    server cannot be reached at all at the start (the CLI's exit 3); later drops are retried."""
    # A shell starts a background job (a script's `aye watch &`, a test runner's child) with
    # SIGINT ignored, and Python then installs no KeyboardInterrupt of its own: the watch would
    # run on through every SIGINT. And an interrupt stops it wherever it is: reading, printing,
    # between a drop and the wait before reconnecting.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _follow(client, first_failure)
    except KeyboardInterrupt:
        return 0


def _follow(client: HasServer, first_failure: type[Exception]) -> int:
    last: str | None = None
    failures = 0
    while True:
        try:
            for event_id, text in _events(client, last):
                last = event_id
                failures = 0
                print(text, flush=True)
        except Refused as exc:
            print(f"aye: {exc}", file=sys.stderr)
            return 2
        except (urllib.error.URLError, OSError) as exc:
            if last is None and failures == 0:
                raise first_failure(f"cannot reach aye at {client.url}: {exc}") from None
        failures += 1
        time.sleep(RETRY_S[min(failures, len(RETRY_S)) - 1])


def _events(client: HasServer, last: str | None) -> Iterator[tuple[str, str]]:
    headers = {"Authorization": f"Bearer {client.token}", "Accept": "text/event-stream"}
    if last is not None:
        headers["Last-Event-ID"] = last
    req = urllib.request.Request(client.url + "/v1/events", headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=READ_TIMEOUT_S)
    except urllib.error.HTTPError as err:
        body = _json(err.read())
        raise Refused(body.get("message") or f"HTTP {err.code}") from None
    with resp:
        fields: dict[str, str] = {}
        for raw in resp:
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if text and not text.startswith(":"):
                name, _, value = text.partition(":")
                fields[name] = value.removeprefix(" ")
            elif not text and "data" in fields:
                yield fields.get("id", ""), shown(fields.get("event", ""), _json(fields["data"]))
                fields = {}


def _json(raw: bytes | str) -> dict[str, Any]:
    try:
        found = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def shown(event: str, ask: dict[str, Any]) -> str:
    """`19:05:02  answered   q7  by slack:U1  Ship the release?`"""
    stamp = time.strftime("%H:%M:%S")
    what = event.removeprefix("ask.")
    question = ask.get("question") or ""
    if ask.get("kind") == "approval" and ask.get("operation"):
        question = f"approve {ask['operation']}"
    by = ask.get("answered_by")
    extra = f"by {line(by)}  " if what == "answered" and by else ""
    if what == "outcome" and ask.get("run"):  # what ran after the approval was used
        extra = f"{line(ask['run'].get('outcome') or '?')}  "
    return (f"{stamp}  {what:<9}  {line(ask.get('ref') or '?'):<6}  {extra}"
            f"{one_line(line(question), QUESTION_WIDTH)}")
