"""Asks as the store returns them, for tests of pure code (no store, no app).

`make_ask(**overrides)` is an open question with every column set: the columns a test names,
sensible values for the required ones, and each other column's own default, so reading any
attribute of the row works as it does on a row read from the store. `question` and `approval`
give the two kinds their usual shape; an approval, like the ones core.app.gating creates, stores
its operation and input as facts (its question is the operation's name, its context empty).
"""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.orm import configure_mappers

from bot.surfaces import KINDS
from core.domain import rules
from store.models import AskRow

DEADLINE = 1_893_456_000.0  # 2030-01-01T00:00:00Z
CREATED_AT = DEADLINE - 3600
SEQ = 7
RESPONDERS = ("slack:U0123ABCD", "github:octocat", "operator:local")


def ask_id(seq: int) -> str:
    """The 32-hex id the builders give an ask of this seq (unless a test names one)."""
    return f"{seq:032x}"


def _column_defaults() -> dict[str, Any]:
    return {
        name: info.get_default(call_default_factory=True)
        for name, info in AskRow.model_fields.items()
        if not info.is_required()
    }


def make_ask(**overrides: Any) -> AskRow:
    """An AskRow: an open question (`Deploy now?`, yes/no) unless `overrides` say otherwise.

    `id` follows `seq` and `work_key` follows `work`, as in the store, unless given. The values
    are copied: two asks built from one dict share no list or mapping.
    """
    unknown = set(overrides) - set(AskRow.model_fields)
    if unknown:
        raise TypeError(f"AskRow has no column {', '.join(sorted(unknown))}")
    # model_construct on a table model needs its mapper set up, as opening the store does.
    configure_mappers()
    values = _column_defaults()
    values.update(
        seq=SEQ, agent="default", kind=rules.QUESTION, status=rules.OPEN,
        question="Deploy now?", options=["yes", "no"], responders=list(RESPONDERS),
        deadline=DEADLINE, due_at=DEADLINE, created_at=CREATED_AT,
    )
    values.update(copy.deepcopy(overrides))
    values.setdefault("id", ask_id(values["seq"]))
    if "work_key" not in overrides:
        values["work_key"] = rules.work_key(values["work"], KINDS)  # slack's and github's too
    return AskRow.model_construct(**values)


def question(**overrides: Any) -> AskRow:
    """An open question; `options=None` makes it free text."""
    return make_ask(**{"kind": rules.QUESTION, **overrides})


def approval(**overrides: Any) -> AskRow:
    """An open approval of `deploy.prod` with input {"region": "eu"}, approve/refuse."""
    operation = overrides.get("operation", "deploy.prod")
    return make_ask(**{
        "kind": rules.APPROVAL, "question": operation, "options": list(rules.APPROVAL_OPTIONS),
        "operation": operation, "call_input": {"region": "eu"}, **overrides,
    })
