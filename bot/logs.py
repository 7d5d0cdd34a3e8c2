"""The process's log format: `time level logger event key=value …` (see core.domain.logline.emit), or
one JSON object a line (`AYE_LOG_FORMAT=json`): the log, the lines aye prints at start
(`say`), libraries' warnings and uncaught exceptions alike.

What libraries say is held to what cannot leak: below warning nothing of theirs is written
(slack-bolt copies the root level onto its own loggers, slack-sdk logs request and response
bodies at debug, Socket Mode logs every envelope), and of what they say at warning or above
only the first line (what follows is often a payload, a repr or a traceback).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TextIO

from core.domain.logline import FIELDS

# aye's own loggers: `aye`, `aye.slack`, `aye.access`…; every other logger is a library's.
OWN = "aye"
NOISY = ("aiohttp.access", "aiosqlite", "asyncpg", "sqlalchemy", "slack_bolt", "slack_sdk",
         "gidgethub", "asyncio", "mcp", "sse_starlette")
# Where aiohttp reports a request it could not parse ("Error handling request", at error).
PROTOCOL_LOGGERS = ("aiohttp.server", "aiohttp.web_protocol")
# Control characters (C0, DEL, C1), format characters (bidi overrides and isolates, marks),
# line and paragraph separators, lone surrogates: what a terminal or a log reader acts on.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Zero-width (non-)joiners are Cf but only join: emoji sequences and scripts need them.
JOINERS = frozenset({"\u200c", "\u200d"})
SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def unsafe(char: str) -> bool:
    return char not in JOINERS and unicodedata.category(char) in UNSAFE_CATEGORIES


def escape_controls(text: str) -> str:
    """`text` with every control, format and line-separator character as its escape (`\\n`,
    `\\x1b`, `\\u2028`): printable, on one line, and showing what was there."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) if unsafe(c) else c for c in text)


def _escaped(char: str) -> str:
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))
        message = escape_controls(said(record))
        line = f"{stamp} {record.levelname.lower()} {record.name} {message}"
        fields: dict[str, Any] = getattr(record, FIELDS, {})
        for key, value in fields.items():
            if value is None:
                continue
            line += f" {escape_controls(str(key))}={_value(str(value))}"
        if record.exc_info and record.exc_info[0] is not None:
            # The exception's class only: its text may carry a value or a token.
            line += f" error={record.exc_info[0].__name__}"
        return line


# The JSON format's names for the fields aye's events carry (emit(…, id=ask.id) is `ask`).
JSON_NAMES = {"id": "ask"}
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}
FORMATS = ("text", "json")


def _json_head(created: float, level: str, logger: str, msg: str) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    millis = int((created - int(created)) * 1000)
    return {"ts": f"{stamp}.{millis:03d}Z", "level": level, "logger": logger, "msg": msg}


class JsonFormatter(logging.Formatter):
    """`AYE_LOG_FORMAT=json`: one object a line, `ts`, `level`, `logger`, `msg`, and the event's
    fields (`ask`, `ref`, `surface`, `delivery`… where they apply). json.dumps escapes every
    control character, so no value can end the line or forge a field."""

    def format(self, record: logging.LogRecord) -> str:
        line = _json_head(record.created, record.levelname.lower(), record.name, said(record))
        fields: dict[str, Any] = getattr(record, FIELDS, {})
        for key, value in fields.items():
            if value is not None and key not in line:
                name = JSON_NAMES.get(key, key)
                line[name] = value if isinstance(value, int | float | bool) else str(value)
        if record.exc_info and record.exc_info[0] is not None:
            line["error"] = record.exc_info[0].__name__  # its class only: its text may hold secrets
        return json.dumps(line, ensure_ascii=False)


def _value(text: str) -> str:
    """Bare when plain; otherwise quoted, with `\\` and `"` escaped and every control or
    line-separator character escaped, so that no value can end the line or forge a field."""
    escaped = escape_controls(text)
    if text and escaped == text and not any(c.isspace() or c in "\"=\\" for c in text):
        return text
    return '"' + escape_controls(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


class ProtocolNoise(logging.Filter):
    """Requests aiohttp cannot parse (scanners, TLS to a plain port, garbage) come from the
    network, not from a fault of aye: at debug each, plus one warning line at most every
    `every` seconds, `http.malformed_requests count=N` (how many since the last such line),
    instead of an error with a traceback for each."""

    def __init__(self, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every, self.clock = every, clock
        self.count = 0
        self.last: float | None = None
        self.lock = threading.Lock()
        # aiohttp's parse errors: imported here, not at the top, so that the CLI (which
        # shares escape_controls) does not load aiohttp.
        from aiohttp.http_exceptions import HttpProcessingError

        self.kind: type[Exception] = HttpProcessingError

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, self.kind):
            return True
        with self.lock:
            self.count += 1
            now = self.clock()
            due = self.last is None or now - self.last >= self.every
            if due:
                count, self.count, self.last = self.count, 0, now
        if due:
            _retell(record, logging.WARNING, "http.malformed_requests",
                    {"count": count, "error": type(exc).__name__, "per": f"{self.every:g}s"})
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        _retell(record, logging.DEBUG, "http.malformed_request", {"error": type(exc).__name__})
        return True


def _retell(record: logging.LogRecord, level: int, event: str, fields: dict[str, Any]) -> None:
    record.levelno, record.levelname = level, logging.getLevelName(level)
    record.msg, record.args = event, ()
    record.exc_info, record.exc_text, record.stack_info = None, None, None
    setattr(record, FIELDS, fields)


def is_own(record: logging.LogRecord) -> bool:
    """A line of aye's own: from its loggers, or told by aye (core.domain.logline.emit's fields, as
    ProtocolNoise retells aiohttp's lines)."""
    name = record.name
    return name == OWN or name.startswith(OWN + ".") or hasattr(record, FIELDS)


def said(record: logging.LogRecord) -> str:
    """The record's message as written: aye's whole; a library's first line only."""
    message = record.getMessage()
    if is_own(record):
        return message
    first, _, rest = message.partition("\n")
    return f"{first} …" if rest.strip() else first


class LibraryFloor(logging.Filter):
    """On the handler, whatever each library did to its own loggers' levels: a library's line
    below warning is never written (see the module's docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or is_own(record)


# The format of what `say` prints, set by `setup`.
_format = "text"


def requested_format(env: Mapping[str, str]) -> str:
    """AYE_LOG_FORMAT as bot.settings reads it, for the lines written before the settings are
    (a settings error among them); "text" for a value bot.settings will refuse."""
    value = env.get("AYE_LOG_FORMAT", "").strip().lower()
    return value if value in FORMATS else "text"


def say(line: str, *, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """A line aye prints for the operator (the start-up lines, the one line before exit 2):
    `aye: …`, or under `AYE_LOG_FORMAT=json` one JSON object like the log's."""
    out = stream if stream is not None else sys.stdout
    if _format == "json":
        head = _json_head(time.time(), logging.getLevelName(level).lower(), OWN, line)
        text = json.dumps(head, ensure_ascii=False)
    else:
        text = f"aye: {escape_controls(line)}"
    print(text, file=out, flush=True)


CRASH = logging.getLogger(OWN)


def _uncaught(kind: type[BaseException], exc: BaseException,
              trace: TracebackType | None) -> None:
    """What would end the process with a traceback on stderr is one log line instead (its
    class only: the text may hold a value), in the log's format."""
    CRASH.error("aye.uncaught", exc_info=(kind, exc, trace), extra={FIELDS: {"at": _at(trace)}})


def _at(trace: TracebackType | None) -> str | None:
    """Where it was raised (`file:line`): the innermost frame, no value of it."""
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return f"{trace.tb_frame.f_code.co_filename}:{trace.tb_lineno}" if trace else None


def _thread_uncaught(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        _uncaught(args.exc_type, args.exc_value, args.exc_traceback)


def _unraisable(unraisable: Any) -> None:
    """`Exception ignored in …`: Python's own stderr line, as a log line."""
    exc = unraisable.exc_value
    if exc is not None:
        CRASH.warning("aye.ignored_exception", exc_info=(type(exc), exc, None),
                      extra={FIELDS: {}})


def setup(level: int = logging.INFO, fmt: str = "text") -> None:
    global _format
    _format = fmt
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    handler.addFilter(LibraryFloor())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Python's warnings, uncaught exceptions (in any thread) and ignored ones go through the
    # log, so that each is one line in its format.
    logging.captureWarnings(True)
    sys.excepthook = _uncaught
    threading.excepthook = _thread_uncaught
    sys.unraisablehook = _unraisable
    quiet_libraries()


def quiet_libraries() -> None:
    """Libraries log SQL parameters and request bodies at debug (aiosqlite logs every
    statement with its values): keep them at warning whatever the root level, so no answer or
    token reaches a log through them. Requests aiohttp cannot parse: see ProtocolNoise."""
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    loggers = [logging.getLogger(name) for name in PROTOCOL_LOGGERS]
    if not any(isinstance(f, ProtocolNoise) for f in loggers[0].filters):
        noise = ProtocolNoise()  # one count and one clock for all of them
        for logger in loggers:
            logger.addFilter(noise)
