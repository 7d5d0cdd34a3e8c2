"""What the Python client (aye_client) raises and returns: its exceptions, the typed value of
an answer, and how a gate's 403 decision reads as an exception. Import them from `aye_client`,
which re-exports every name here."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any, cast

# What `ask` returns: the answer's value, typed by the ask's format (core.domain.formats): text
# and a choice's option as a string, a multi's options as a list, confirm and ack as a bool,
# a form as a dict.
Answer = str | bool | list[str] | dict[str, Any]


class AyeError(Exception):
    """The server refused a request; `code` is the API's error code, `field` the part of the
    request it names (when it names one)."""

    # A gated call's refusal or time-out: the approval's signed receipt (verify_receipt).
    receipt: str | None = None

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message, self.field = status, code, message, field


class AskClosed(AyeError):
    """The question expired or was withdrawn before anyone answered."""


# A remembered refusal's 403 says until when in its message (the server's ask_api/views.py,
# decision_body: this client is a distribution of its own, so it reads the text, not the code).
REMEMBERED_UNTIL = re.compile(r"not asked again until (\d{4}-\d\d-\d\dT[\d:.]+Z)")


class ApprovalRefused(AyeError):
    """A person refused the call; `note` is the reason they gave, if any. `repeat` is True
    when aye refused it at once, remembering an earlier refusal of this exact call (nobody
    was asked again: asking again soon would only be refused the same way); `until` is then
    when that refusal is forgotten (an ISO 8601 UTC time, as the server said it), if known."""

    def __init__(
        self, operation: str, by: str | None, note: str | None = None, repeat: bool = False,
        until: str | None = None,
    ) -> None:
        again = ""
        if repeat:
            again = f" (remembered: not asked again until {until})" if until else (
                " (remembered: not asked again)")
        super().__init__(403, "approval_refused", f"{operation} was refused by {by}{again}")
        self.operation, self.by, self.note, self.repeat = operation, by, note, repeat
        self.until = until


class ApprovalTimedOut(AyeError):
    def __init__(self, operation: str) -> None:
        super().__init__(403, "approval_timed_out", f"nobody approved {operation} in time")
        self.operation = operation


class ApprovalUnavailable(AyeError):
    def __init__(self, operation: str) -> None:
        super().__init__(403, "approval_unavailable", f"nobody can approve {operation} here")
        self.operation = operation


START_SAID = {
    "start_refused": "was refused",
    "approval_timed_out": "was not approved in time",
    "approval_unavailable": "cannot be approved: nobody who could approve it can be reached",
    "approval_withdrawn": "was not decided: its approval was withdrawn",
}


class StartRefused(AyeError):
    """`start()` may not go on. `error` (also `code`) says why: `start_refused` (a person
    refused; `by` and `note` say who and why), `approval_timed_out` (nobody approved in time),
    both for good: the work is cancelled for this agent; `approval_unavailable` (nobody who
    could approve it can be reached for this work); `approval_withdrawn` (the operator
    withdrew the approval: starting again asks anew). `approval` is the approval ask's id."""

    def __init__(
        self, work: Any, error: str, by: str | None = None, note: str | None = None,
        approval: str | None = None,
    ) -> None:
        said = START_SAID.get(error, f"was refused ({error})")
        who = f" by {by}" if by and error == "start_refused" else ""
        super().__init__(403, error, f"the start on {work_name(work)} {said}{who}")
        self.work, self.error, self.by, self.note, self.approval = work, error, by, note, approval


class _Unavailable(Exception):
    """A proxy's 502/503/504 while aye restarts: tried again like a refused connection."""


def work_name(work: Any) -> str:
    """`github:octo/app#7`, `slack:C0123/1.2`, or the work as given."""
    if isinstance(work, dict) and isinstance(work.get("github"), dict):
        where = work["github"]
        return f"github:{where.get('repo')}#{where.get('number')}"
    if isinstance(work, dict) and isinstance(work.get("slack"), dict):
        where = work["slack"]
        return f"slack:{where.get('channel')}/{where.get('thread_ts')}"
    return str(work)


def refusal(operation: str, reply: dict[str, Any]) -> AyeError:
    """A gated call's 403 decision: refused by a person (now, or remembered from before),
    timed out, or nobody who could approve it can be reached."""
    error = reply.get("error")
    if error == "approval_refused":
        said = REMEMBERED_UNTIL.search(str(reply.get("message") or ""))
        return ApprovalRefused(operation, reply.get("by"), reply.get("note"),
                               reply.get("repeat") is True, said.group(1) if said else None)
    if error == "approval_timed_out":
        return ApprovalTimedOut(operation)
    if error == "approval_unavailable" or not error:
        return ApprovalUnavailable(operation)
    return AyeError(403, str(error), str(reply.get("message") or error))


def start_refusal(work: Any, reply: dict[str, Any]) -> StartRefused:
    """A start's 403 decision, as a StartRefused."""
    error = str(reply.get("error") or "approval_unavailable")
    return StartRefused(work, error, reply.get("by"), reply.get("note"), reply.get("approval"))


def answer_value(ask: dict[str, Any]) -> Answer:
    """An answered ask's value, typed by its format as `ask()` returns it (a string, a list,
    a bool, a dict). AskClosed when it expired or was withdrawn; ValueError while it is open."""
    status = ask.get("status")
    if status == "answered":
        value = (ask.get("answer") or {}).get("value")
        if ask.get("format") == "external":  # the payload, whatever JSON the system sent
            return cast(Answer, value)
        if isinstance(value, bool | list | dict):
            return value
        return str(value)
    if status == "open":
        raise ValueError(f"ask {ask.get('ref') or ask.get('id')} is still open")
    raise AskClosed(409, str(status), f"the question was {status}")


def loop_time_of(deadline: str | None, now_loop: float) -> float | None:
    """An ask's ISO deadline as event-loop time, to bound retries by it."""
    if not deadline:
        return None
    moment = datetime.fromisoformat(deadline.replace("Z", "+00:00")).timestamp()
    return now_loop + (moment - time.time())
