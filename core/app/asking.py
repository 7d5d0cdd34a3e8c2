"""Asking: an agent's new question (or external ask), checked for reach and repeated keys,
made with its limits counted in the create's own transaction (core.app.batch, core.app.change)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from core.app.parts import Parts
from core.domain import external, identity, vocabulary
from core.domain.ask import AskValues
from core.domain.responders import Responder
from core.domain.types import AgentInfo, KeyReused, NewAsk, NoReachableResponder
from store import asks as q
from store.db import Duplicate
from store.models import AskRow


async def create_question(parts: Parts, agent: AgentInfo, new: NewAsk) -> tuple[AskRow, bool]:
    """The ask and True when created, or the earlier one and False for a repeated key. Its
    callback must be one the operator allowed this agent (CallbackRefused)."""
    agent.check_callback(new.callback_url)
    # `person:<name>` is written out as that person's identities: each surface finds its own.
    responders = parts.people.expand(agent.responders or parts.defaults.responders)
    if new.verifier is not None:  # an outside system answers it, through its door alone
        responders = [external.responder(new.verifier)]
    body_hash = identity.digest(new.body)
    if new.key is not None:
        earlier = await _by_key(parts, agent.name, new.key, body_hash)
        if earlier is not None:
            return earlier, False
    if new.verifier is None and not parts.places.reachable(responders, new.work):
        raise NoReachableResponder
    now = parts.clock.now()
    deadline = new.deadline or now + (new.timeout_s or parts.defaults.question_timeout)
    values = new_ask_values(agent.name, vocabulary.QUESTION, new.work, responders, now, deadline)
    values.update(AskValues(
        question=new.question, options=new.options, context=new.context,
        idem_key=new.key, body_hash=body_hash, sensitive=new.sensitive, format=new.format,
        form_schema=new.form_schema, pick_min=new.pick_min, pick_max=new.pick_max,
        media=new.media, callback_url=new.callback_url, verifier=new.verifier,
        ticket_hash=new.ticket_hash, danger=new.danger or None,
    ))
    remind = parts.defaults.question_remind_after
    if remind is not None and new.verifier is None and now + remind < deadline:
        values.update(AskValues(remind_at=now + remind, due_at=now + remind))
    try:
        ask = await insert(parts, values, {"agent": agent.name}, agent)
    except Duplicate:
        # Another request with the same key won the insert: answer as it would have.
        earlier = await _by_key(parts, agent.name, new.key or "", body_hash)
        if earlier is None:
            raise
        return earlier, False
    return ask, True


async def _by_key(parts: Parts, agent: str, key: str, body_hash: str) -> AskRow | None:
    async with parts.store.read() as conn:
        ask = await q.by_key(conn, agent, key)
    if ask is not None and ask.body_hash != body_hash:
        raise KeyReused
    return ask


async def insert(
    parts: Parts, values: AskValues, detail: dict[str, Any], agent: AgentInfo | None = None,
    counted: bool = False,
) -> AskRow:
    """A new ask, its `created` entry and its posts, in one transaction (shared with the asks
    made at the same time: core/app/batch.py). With `agent`, its limits are checked in that
    transaction (Limited, nothing written): room for one more open ask, and unless `counted`
    already, one more hit this minute."""
    ask = await parts.batcher.insert(values, detail, agent, counted)
    return ask


def new_ask_values(
    agent: str, kind: str, work: dict[str, Any] | None, responders: Sequence[Responder],
    now: float, deadline: float,
) -> AskValues:
    """The columns every new ask has."""
    return {
        "id": uuid.uuid4().hex, "agent": agent, "kind": kind, "status": vocabulary.OPEN,
        "work": work, "work_key": identity.work_key(work), "responders": [str(r) for r in responders],
        "deadline": deadline, "due_at": deadline, "created_at": now,
    }
