"""`aye show REF`: one ask in full, as the operator's view on the server has it. Everything
from the server is printed through bot.cli.text's `line` or `block`: see there."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.cli import formats as cli_formats
from bot.cli.text import block, joined, line, relative, when
from core.domain.visible import HIDDEN_WARNING, approval_hides, visible_json
from core.domain.vocabulary import REASONS

START = "human.start"  # the operation a start's approval is recorded as
HASHES = ("input_sha256", "call_sha256")
# Above an approval whose operation or input holds a control or format character.
HIDDEN_LINE = f"warning: {HIDDEN_WARNING}, shown as codes such as [U+202E]"


def show(ask: dict[str, Any]) -> None:
    _show_what(ask)
    _show_when(ask, time.time())
    _show_answer(ask)
    print("history:")
    for entry in ask.get("history", []):
        extra = ", ".join(
            f"because {line(REASONS.get(str(v), str(v)))}" if k == "why" else f"{line(k)} {joined(v)}"
            for k, v in entry.items() if k not in ("at", "event")
        )
        print(f"  {line(entry.get('at'))}  {line(entry.get('event'))}"
              + (f"  ({extra})" if extra else ""))


def _show_what(ask: dict[str, Any]) -> None:
    print(f"{line(ask['ref'])}  {line(ask['kind'])}  {line(ask['status'])}"
          f"  (agent {line(ask.get('agent', '?'))})")
    print(f"question: {block(ask['question'])}")
    if ask.get("kind") == "approval" and approval_hides(ask.get("operation"), ask.get("input")):
        print(HIDDEN_LINE)
    if ask.get("operation") == START:
        _show_start(ask.get("input") or {})
    elif ask.get("operation"):
        print(f"operation: {line(ask['operation'])}")
        # Readable letters; every control and format character as its code (or JSON escape).
        print(f"input: {block(visible_json(ask.get('input'), indent=2, sort_keys=True), '')}")
    elif ask.get("context"):
        print(f"context: {block(ask['context'])}")
    for name in HASHES:  # an approval's, each named as what it is (as every surface shows it)
        if ask.get(name):
            print(f"{name}: {line(ask[name])}")
    if ask.get("kind") != "approval":
        print(f"format: {cli_formats.how(ask)}")
    if ask.get("options"):
        print("options:")
        for number, option in enumerate(ask["options"], start=1):
            print(f"  {number}. {line(option)}")
    elif cli_formats.format_of(ask) == cli_formats.TEXT:
        print("options: free text")
    for text in (*cli_formats.field_lines(ask), *cli_formats.media_lines(ask)):
        print(text)
    print(f"for: {joined(ask.get('responders', []))}")
    ticket = cli_formats.ticket_line(ask)
    if ticket:
        print(ticket)


def _show_start(what: dict[str, Any]) -> None:
    """A start's approval: what would start, in words (`start: triage on github:o/r#7`)."""
    work = what.get("work") or {}
    where = ", ".join(f"{line(k)} {line(json.dumps(v, sort_keys=True, ensure_ascii=False))}"
                      for k, v in work.items())
    print(f"start: agent {line(what.get('agent', '?'))} on {where or 'its work'}")
    for key in ("title", "trigger"):
        if what.get(key):
            print(f"{key}: {line(what[key])}")
    for link in what.get("links") or []:
        print(f"link: {line(link)}")
    print("refusing it cancels this work for the agent")


def _show_when(ask: dict[str, Any], now: float) -> None:
    if ask.get("escalation"):
        esc = ask["escalation"]
        if esc.get("escalated_at"):
            state = f"escalated {relative(when(esc['escalated_at']), now)}"
        elif ask["status"] == "open":
            state = f"escalates {relative(when(esc['at']), now)}"
        else:
            state = "never escalated"
        print(f"escalation: {joined(esc['responders'])} ({state})")
    if ask["status"] == "open":
        print(f"deadline: {line(ask['deadline'])} ({relative(when(ask['deadline']), now)})")
    else:
        print(f"deadline: {line(ask['deadline'])}")
        print(f"closed: {line(ask.get('closed_at'))}"
              f" ({relative(when(ask.get('closed_at')), now)})")


def _show_answer(ask: dict[str, Any]) -> None:
    answer = ask.get("answer")
    if answer:
        by = f"  by {line(ask.get('answered_by'))} via {line(ask.get('surface'))}"
        if answer.get("hidden") or answer.get("erased"):
            print(f"answer: (sensitive, hidden){by}")
        elif cli_formats.format_of(ask) == cli_formats.TEXT:
            print(f"answer: {block(answer['value'])}{by}")
        else:
            below = cli_formats.answer_lines(ask, answer["value"])
            # A form's fields go one a line below; anything else is shown on the line.
            value = "" if cli_formats.format_of(ask) == cli_formats.FORM and below else (
                " " + cli_formats.shown(ask, answer["value"]))
            print(f"answer:{value}{by}")
            for text in below:
                print(text)
        if answer.get("note"):
            print(f"note: {block(answer['note'])}")
    if ask.get("outcome"):
        print(f"outcome: {line(ask['outcome'])}")
    run = ask.get("run")
    if run:  # what ran after the approval was used, as its agent reported it
        detail = f": {block(run['detail'])}" if run.get("detail") else ""
        print(f"ran: {line(run['outcome'])} at {line(run.get('at'))}{detail}")
    if ask.get("receipt"):
        print(f"receipt: {line(ask['receipt'])}")
    approvals = ask.get("approvals")
    if approvals:
        who = joined(approvals.get("approvers") or []) or "nobody yet"
        print(f"approvals: {len(approvals.get('approvers') or [])} of {approvals['needed']}: {who}")
    if ask.get("remembered_until"):
        until = ask["remembered_until"]
        # A refusal the gate remembers: the identical call is refused at once until then.
        print(f"remembered until: {line(until)} ({relative(when(until), time.time())})")
