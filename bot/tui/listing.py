"""The left of `aye tui`: which asks the list shows, in what order, and each row's cells.

Every cell is a `rich.text.Text` made from the server's text through bot.cli.text (terminal
controls shown as their escapes, as `aye asks` does): a Text is never read as markup, so an
agent's `[bold]` or `[link=…]` is shown as typed, and no control character reaches the
terminal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from bot.cli.text import line, relative, when

OPEN = "open"
START = "human.start"
# A closed approval is labelled by its outcome, as the web inbox labels it.
OUTCOME_WORDS = {"approved": "Approved", "approval_refused": "Refused",
                 "approval_timed_out": "Timed out"}
AGE_WIDTH, DUE_WIDTH = 3, 4  # `10s`, `24h`, `5d`; `late` (wider: `400d`, as the cells say)
MAX_REF = 8  # a ref is at most 8 characters: shown whole, people type it
CELL_PADDING = 2  # the table's one column of padding either side of each cell
MIN_QUESTION = 10


@dataclass
class Listing:
    """Every ask the TUI knows of, by id, and what the list shows of them."""

    asks: dict[str, dict[str, Any]] = field(default_factory=dict)
    everything: bool = False  # Tab: all asks, not only the open ones
    text: str = ""  # `/`: only asks whose text holds this (any case)
    kept: str | None = None  # the selected ask, kept in view after it closed

    def replace(self, asks: list[dict[str, Any]]) -> None:
        self.asks = {a["id"]: a for a in asks if isinstance(a.get("id"), str)}

    def apply(self, ask: dict[str, Any]) -> None:
        """An event's ask: newer than what the list had (history is not in events: kept)."""
        ident = ask.get("id")
        if isinstance(ident, str):
            self.asks[ident] = self.asks.get(ident, {}) | ask

    def shown(self) -> list[dict[str, Any]]:
        """The asks the list shows, newest first."""
        rows = [a for a in self.asks.values() if self.wanted(a)]
        rows.sort(key=lambda a: (str(a.get("created_at") or ""), str(a.get("id"))), reverse=True)
        return rows

    def wanted(self, ask: dict[str, Any]) -> bool:
        if not (self.everything or ask.get("status") == OPEN or ask.get("id") == self.kept):
            return False
        return not self.text or self.text.casefold() in haystack(ask)

    def open_count(self) -> int:
        return sum(1 for a in self.asks.values() if a.get("status") == OPEN)


def haystack(ask: dict[str, Any]) -> str:
    """What `/` searches: ref, question, context, operation, agent."""
    parts = (ask.get(k) for k in ("ref", "question", "context", "operation", "agent"))
    return " ".join(str(p) for p in parts if p).casefold()


def title(ask: dict[str, Any]) -> str:
    """The question as the list says it: `Approval needed: deploy.prod` for an approval."""
    if ask.get("kind") == "approval":
        label = "Approval needed"
        if ask.get("status") != OPEN:
            label = OUTCOME_WORDS.get(str(ask.get("outcome")), str(ask.get("status")).capitalize())
        what = "start" if ask.get("operation") == START else ask.get("operation") or ""
        return f"{label}: {what}" if what else label
    words = str(ask.get("question") or "")
    return words if ask.get("status") == OPEN else f"({ask.get('status')}) {words}"


def outcome_words(code: Any) -> str:
    """An approval's outcome in words (`Refused`), not its code (`approval_refused`)."""
    if not code:
        return ""
    return OUTCOME_WORDS.get(str(code), line(code).replace("_", " ").capitalize())


def short(ts: float | None, now: float) -> str:
    """`3m`, `2h`, `5d`: `relative` without its `ago`/`in` (the column says which)."""
    return relative(ts, now).removeprefix("in ").removesuffix(" ago") if ts else "-"


def cells(ask: dict[str, Any], now: float, question_width: int) -> tuple[Text, ...]:
    return (
        Text(line(ask.get("ref") or "?")[:MAX_REF]),
        *timing(ask, now),
        Text(_cut(line(title(ask)), question_width)),
    )


def timing(ask: dict[str, Any], now: float) -> tuple[Text, Text]:
    """The age and due cells, as of `now`: what changes as time passes."""
    due = short(when(ask.get("deadline")), now) if ask.get("status") == OPEN else "-"
    if ask.get("status") == OPEN and (when(ask.get("deadline")) or now) < now:
        due = "late"
    return Text(short(when(ask.get("created_at")), now)), Text(due)


def widths(asks: list[dict[str, Any]], list_width: int, now: float) -> dict[str, int]:
    """Each column's width, by its key: age and due as wide as their widest cell (`late`,
    `400d`), the question what the others leave."""
    refs = ref_width(asks)
    times = [timing(a, now) for a in asks]
    age = max([AGE_WIDTH, *(len(age) for age, _ in times)])
    due = max([len("Due"), *(len(due) for _, due in times)])
    return {"ref": refs, "age": age, "due": due,
            "what": question_width(list_width, refs, due, age)}


def ref_width(asks: list[dict[str, Any]]) -> int:
    return max([3, *(min(MAX_REF, len(line(a.get("ref") or "?"))) for a in asks)])


def question_width(
    list_width: int, refs: int, due: int = DUE_WIDTH, age: int = AGE_WIDTH
) -> int:
    """What is left of the list's inner width for the question."""
    fixed = refs + age + due + 4 * CELL_PADDING
    return max(MIN_QUESTION, list_width - fixed)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
