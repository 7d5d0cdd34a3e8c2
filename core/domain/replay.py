"""An ask's history replayed from the audit chain, and compared with the ask's row: a row
edited outside aye (an `approval_refused` turned into `approved`, an answer or an approver
planted, a used grant given back) contradicts the history the chain holds, which cannot be
edited unseen (store/chain.py). `aye audit verify` names each such ask.

Tolerant of what an earlier aye did not record (a field absent from an entry, a column the
row does not have, is not compared); strict on what it did. What each entry holds: the
`created`, `answered` (`by`, `surface`, `outcome`, `approvers`, `receipt_sha256`),
`approved` (one of a quorum), `expired`, `withdrawn`, `used` (`use`), `outcome` (`outcome`,
`detail`, `usable_again`, `use`) and `read` (`erased`) entries of core/app."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.domain import vocabulary

CLOSES = {"answered": vocabulary.ANSWERED, "expired": vocabulary.EXPIRED, "withdrawn": vocabulary.WITHDRAWN}
# Two moments the same change wrote (a row's and its entry's) are equal; this is slack for a
# store that rounds a float.
SAME_MOMENT_S = 0.001
Entry = Mapping[str, Any]


@dataclass(slots=True)
class Replayed:
    """What an ask's history says of it."""

    closed: Entry | None = None
    approvers: list[str] = field(default_factory=list)  # a quorum's approvals before the close
    uses: list[Entry] = field(default_factory=list)
    outcomes: list[Entry] = field(default_factory=list)
    given_back: bool = False  # the latest use's outcome gave the grant back
    erased: bool = False

    @property
    def status(self) -> str:
        return vocabulary.OPEN if self.closed is None else CLOSES[str(self.closed["event"])]


def replay(entries: Sequence[Entry]) -> Replayed:
    """The ask as its entries (its own, in the chain's order) leave it."""
    found = Replayed()
    for entry in entries:
        event = entry.get("event")
        if event in CLOSES and found.closed is None:
            found.closed = entry
        elif event == "approved" and entry.get("by"):
            found.approvers.append(str(entry["by"]))
        elif event == "used":
            found.uses.append(entry)
            found.given_back = False
        elif event == "outcome":
            found.outcomes.append(entry)
            found.given_back = entry.get("usable_again") is True
        elif event == "read" and entry.get("erased") is True:
            found.erased = True
    return found


def contradictions(row: Mapping[str, Any], entries: Sequence[Entry]) -> list[str]:
    """How the row contradicts its replayed history: one phrase each, none when it holds."""
    if not entries:
        return ["it has no history in the chain"]
    found = replay(entries)
    said: list[str] = []
    if row.get("status") != found.status:
        said.append(_differ("status", row.get("status"), found.status))
    said += _decision(row, found)
    said += _uses(row, found)
    if found.erased and (not row.get("erased") or row.get("answer_value") is not None):
        said.append("its row holds an answer its history says was erased")
    return said


def _differ(what: str, row: Any, history: Any) -> str:
    return f"its row says {what} {_shown(row)}, its history {_shown(history)}"


def _shown(value: Any) -> str:
    if value is None or value == []:
        return "none"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _decision(row: Mapping[str, Any], found: Replayed) -> list[str]:
    """Who answered, how the ask ended, its approvers and its receipt, against its close."""
    closed = found.closed or {}
    answered = closed.get("event") == "answered"
    said = []
    for column, key in (("answered_by", "by"), ("answer_surface", "surface")):
        if answered and key in closed and row.get(column) != closed[key]:
            said.append(_differ(column.replace("_", " "), row.get(column), closed[key]))
        elif not answered and row.get(column) is not None:
            said.append(_differ(column.replace("_", " "), row.get(column), None))
    said += _outcome(row, found, closed)
    said += _approvers(row, found, closed)
    if not answered and row.get("answer_value") is not None and not found.erased:
        said.append("its row holds an answer its history never recorded")
    said += _receipt(row, closed)
    return said


def _approvers(row: Mapping[str, Any], found: Replayed, closed: Entry) -> list[str]:
    """An approval's approvers as its close names them; before a close (or at a refusal or a
    time-out), the quorum's approvals recorded so far."""
    if closed.get("event") == "answered" and "approvers" in closed:
        expected = list(closed["approvers"] or [])
    elif closed.get("event") == "answered" and closed.get("outcome") in (vocabulary.APPROVED, None):
        return []  # an approval recorded before its close named its approvers
    else:
        expected = found.approvers
    if list(row.get("approvers") or []) != expected:
        return [_differ("approvers", row.get("approvers"), expected)]
    return []


def _outcome(row: Mapping[str, Any], found: Replayed, closed: Entry) -> list[str]:
    """The row's outcome, and an approval's answer, as its close says."""
    event = closed.get("event")
    if event == "answered" and "outcome" in closed:
        expected = closed["outcome"]
    elif event == "expired":
        expected = vocabulary.APPROVAL_TIMED_OUT if row.get("kind") == vocabulary.APPROVAL else None
    elif event == "answered":
        return []  # recorded before outcomes were: nothing to hold the row to
    else:
        expected = None
    if row.get("outcome") != expected:
        return [_differ("outcome", row.get("outcome"), expected)]
    approve = row.get("answer_value") == vocabulary.APPROVE
    if row.get("kind") == vocabulary.APPROVAL and event == "answered" and (
            approve != (expected == vocabulary.APPROVED)):
        return [_differ("answer", row.get("answer_value"), expected)]
    return []


def _receipt(row: Mapping[str, Any], closed: Entry) -> list[str]:
    """The receipt kept on the row is the one whose hash the decision's entry holds."""
    sealed = closed.get("receipt_sha256")
    if not sealed or "receipt" not in row:
        return []
    kept = row.get("receipt")
    if kept is None or hashlib.sha256(str(kept).encode()).hexdigest() != sealed:
        return ["its receipt is not the one its decision recorded"]
    return []


def _uses(row: Mapping[str, Any], found: Replayed) -> list[str]:
    """A grant's uses, whether it is in use, and what ran after the latest use."""
    said = []
    closed = found.closed or {}
    if found.uses and not (closed.get("event") == "answered"
                           and closed.get("outcome", vocabulary.APPROVED) == vocabulary.APPROVED):
        said.append("its history records a use of a grant it never approved")
    numbered = [u["use"] for u in found.uses if isinstance(u.get("use"), int)]
    stored = row.get("approval_uses")
    if "approval_uses" in row and (
            (numbered and stored != max(numbered)) or (not found.uses and stored)):
        said.append(_differ("uses", stored, max(numbered) if numbered else None))
    in_use = found.uses[-1].get("at") if found.uses and not found.given_back else None
    at = row.get("approval_used_at")
    if (at is None) != (in_use is None) or (
            at is not None and in_use is not None and abs(float(at) - float(in_use)) > SAME_MOMENT_S):
        said.append("its row says its grant is " + ("in use" if at is not None else "free")
                    + ", its history " + ("in use" if in_use is not None else "free"))
    said += _ran(row, found)
    return said


def _ran(row: Mapping[str, Any], found: Replayed) -> list[str]:
    """What ran: the latest use's reported outcome (none reported: nothing ran)."""
    if not found.outcomes:
        return [] if row.get("run_outcome") is None else [
            _differ("what ran", row.get("run_outcome"), None)]
    last = found.outcomes[-1]
    latest_use_reported = not found.uses or _after(last, found.uses[-1])
    if not latest_use_reported:
        # Each numbered use starts its own report: none yet. An earlier aye's use (no number)
        # kept the earlier use's report.
        numbered = isinstance(found.uses[-1].get("use"), int)
        if numbered and row.get("run_outcome") is not None:
            return [_differ("what ran", row.get("run_outcome"), None)]
        return []
    said = []
    if row.get("run_outcome") != last.get("outcome"):
        said.append(_differ("what ran", row.get("run_outcome"), last.get("outcome")))
    elif "detail" in last and row.get("run_detail") != last["detail"]:
        said.append("its row's detail of what ran is not the one its history recorded")
    return said


def _after(later: Entry, earlier: Entry) -> bool:
    return int(later.get("seq") or 0) > int(earlier.get("seq") or 0)
