"""Every query on asks and their history. Callers pass the transaction and the time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Text, and_, bindparam, cast, func, or_, select, text, update
from sqlalchemy.exc import IntegrityError

from store.db import NOTIFY_CHANNEL, Conn, Duplicate
from store.models import AskRow, HistoryRow

ASKS = AskRow.__table__  # type: ignore[attr-defined]
HISTORY = HistoryRow.__table__  # type: ignore[attr-defined]
A = ASKS.c
OPEN = "open"
# Built once: a statement built per call is compiled and cache-keyed per call.
ASK_INSERT = ASKS.insert()
# Several rows at once, their keys back in the order given (SQLAlchemy's insertmanyvalues).
ASK_INSERT_RETURNING = ASKS.insert().returning(A.seq, sort_by_parameter_order=True)
HISTORY_INSERT = HISTORY.insert()
NOTIFY = text("SELECT pg_notify(:c, :id)")
# What a row built from inserted values lacks until the store fills it in.
DEFAULTS: dict[str, Any] = {
    "options": None, "context": None, "work": None, "work_key": None,
    "escalate_responders": None, "escalate_at": None, "escalated_at": None,
    "closed_at": None, "idem_key": None, "body_hash": None, "sensitive": False,
    "answer_value": None, "answer_option": None, "answer_note": None, "answered_by": None,
    "answer_surface": None, "outcome": None, "read_at": None, "erased": False,
    "operation": None, "call_input": None, "call_hash": None, "approval_used_at": None,
}


# A column left out of one row of a several-row insert gets the model's default.
COLUMN_DEFAULTS: dict[str, Any] = {
    name: (None if spec.is_required() or spec.default_factory is not None else spec.default)
    for name, spec in AskRow.model_fields.items()
}


# The fields set of a whole row, shared by every whole row read: pydantic's own is a set of
# ~60 names (2 KB) a row, and a parked wait holds its row (bench/). Pydantic adds a name to it
# only when that field is assigned, and every name is in it already.
_WHOLE_ROW = set(AskRow.model_fields)


def _row(mapping: Any) -> AskRow:
    values = dict(mapping)
    whole = _WHOLE_ROW if len(values) == len(_WHOLE_ROW) and _WHOLE_ROW.issuperset(values) else None
    return AskRow.model_construct(whole, **values)


async def _one(conn: Conn, query: Any, params: dict[str, Any] | None = None) -> AskRow | None:
    found = (await conn.execute(query, params)).first()
    return _row(found._mapping) if found else None


async def _all(conn: Conn, query: Any) -> list[AskRow]:
    return [_row(r._mapping) for r in (await conn.execute(query)).all()]


# -- reading --------------------------------------------------------------------------------


async def by_seq(conn: Conn, seq: int) -> AskRow | None:
    return await _one(conn, select(ASKS).where(A.seq == seq))


async def by_seqs(conn: Conn, seqs: list[int]) -> list[AskRow]:
    return await _all(conn, select(ASKS).where(A.seq.in_(sorted(set(seqs)))))


def named_by(kind: str, candidates: Iterable[tuple[int, bool]]) -> ColumnElement[bool]:
    """The ask a typed ref names, as a condition: of its candidates (seq, base 36), the one
    whose row writes its ref that way (a pre-0.4.0 ask's in base 36, a later one's in decimal;
    core.domain.rules.parse_ref)."""
    return and_(A.kind == kind, or_(*(
        and_(A.seq == seq, A.ref_base36.is_(True) if base36 else A.ref_base36.is_not(True))
        for seq, base36 in candidates
    )))


async def by_ref(
    conn: Conn, kind: str, candidates: Iterable[tuple[int, bool]], agent: str | None = None
) -> AskRow | None:
    query = select(ASKS).where(named_by(kind, candidates))
    if agent is not None:
        query = query.where(A.agent == agent)
    return await _one(conn, query)


# Built once: every answer and wait finds its ask by id, and a statement built at each call is
# cache-keyed again at each call (SQLAlchemy memoizes the key on the statement object).
BY_ID = select(ASKS).where(A.id == bindparam("by_id"))
BY_ID_OF = BY_ID.where(A.agent == bindparam("by_agent"))


async def by_id(conn: Conn, ask_id: str, agent: str | None = None) -> AskRow | None:
    if agent is None:
        return await _one(conn, BY_ID, {"by_id": ask_id})
    return await _one(conn, BY_ID_OF, {"by_id": ask_id, "by_agent": agent})


async def by_ticket(conn: Conn, ticket_hash: str) -> AskRow | None:
    return await _one(conn, select(ASKS).where(A.ticket_hash == ticket_hash))


async def by_key(conn: Conn, agent: str, key: str) -> AskRow | None:
    return await _one(conn, select(ASKS).where(A.agent == agent, A.idem_key == key))


async def page(
    conn: Conn, agent: str | None, status: str | None, limit: int, before: int | None
) -> list[AskRow]:
    """Newest first, at most `limit`, below the seq `before` when given."""
    query = select(ASKS)
    if agent is not None:
        query = query.where(A.agent == agent)
    if status is not None:
        query = query.where(A.status == status)
    if before is not None:
        query = query.where(A.seq < before)
    return await _all(conn, query.order_by(A.seq.desc()).limit(limit))


async def page_naming(
    conn: Conn, names: list[str], status: str | None, limit: int, before: int | None
) -> list[AskRow]:
    """As `page`, of the asks whose responders (or escalation's) may name one of `names`
    (`slack:u0123`, `slack`): a candidate filter on the JSON text, case folded, that the
    caller narrows exactly. Newest first."""
    def naming(column: Any) -> Any:
        folded = func.lower(cast(column, Text))
        return or_(*(folded.like(f'%"{name.lower()}"%') for name in names))

    query = select(ASKS).where(or_(naming(A.responders), naming(A.escalate_responders)))
    if status is not None:
        query = query.where(A.status == status)
    if before is not None:
        query = query.where(A.seq < before)
    return await _all(conn, query.order_by(A.seq.desc()).limit(limit))


async def open_on_work(conn: Conn, key: str) -> list[AskRow]:
    return await _all(conn, select(ASKS).where(A.work_key == key, A.status == OPEN).order_by(A.seq))


async def latest_on_work(conn: Conn, key: str) -> AskRow | None:
    """The newest ask of a conversation, open or not."""
    return await _one(conn, select(ASKS).where(A.work_key == key).order_by(A.seq.desc()).limit(1))


async def history(conn: Conn, seq: int) -> list[dict[str, Any]]:
    found = await conn.execute(select(HISTORY).where(HISTORY.c.ask_seq == seq).order_by(HISTORY.c.id))
    return [{"at": r.at, "event": r.event, **r.detail} for r in found.all()]


async def histories(conn: Conn, seqs: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The histories of several asks in one query (a page of the operator's list)."""
    found: dict[int, list[dict[str, Any]]] = {seq: [] for seq in seqs}
    if not seqs:
        return found
    rows = await conn.execute(
        select(HISTORY).where(HISTORY.c.ask_seq.in_(seqs)).order_by(HISTORY.c.id)
    )
    for r in rows.all():
        found[r.ask_seq].append({"at": r.at, "event": r.event, **r.detail})
    return found


# -- writing --------------------------------------------------------------------------------


async def insert(conn: Conn, values: Mapping[str, Any]) -> AskRow:
    """The new row; Duplicate when a unique index refuses it (the same agent's key, or an
    identical pending call)."""
    try:
        result = await conn.execute(ASK_INSERT, dict(values))
    except IntegrityError as exc:
        raise Duplicate from exc
    key = result.inserted_primary_key
    assert key is not None
    return AskRow.model_construct(**{**DEFAULTS, **values, "seq": int(key[0])})


async def insert_many(conn: Conn, many: Sequence[Mapping[str, Any]]) -> list[AskRow]:
    """New rows in one statement (an executemany the driver batches), in the given order;
    Duplicate when a unique index refuses any of them (then none is kept: the transaction is
    the caller's to roll back)."""
    keys = {key for values in many for key in values}
    filled = [{key: values.get(key, COLUMN_DEFAULTS.get(key)) for key in keys} for values in many]
    try:
        result = await conn.execute(ASK_INSERT_RETURNING, filled)
    except IntegrityError as exc:
        raise Duplicate from exc
    seqs = [int(seq) for seq in result.scalars().all()]
    return [AskRow.model_construct(**{**DEFAULTS, **values, "seq": seq})
            for values, seq in zip(filled, seqs, strict=True)]


async def add_histories(conn: Conn, entries: list[dict[str, Any]]) -> None:
    """History entries (`ask_seq`, `at`, `event`, `detail`) in one executemany."""
    if entries:
        await conn.execute(HISTORY_INSERT, entries)


async def add_history(
    conn: Conn, seq: int | None, at: float, event: str, detail: dict[str, Any]
) -> None:
    await conn.execute(HISTORY_INSERT, {"ask_seq": seq, "at": at, "event": event, "detail": detail})


async def close_if_open(conn: Conn, seq: int | None, values: dict[str, Any]) -> bool:
    """The one conditional write that decides every answer, expiry and withdrawal: True for
    the one writer that found the ask still open."""
    won = await conn.execute(closing(tuple(values)), close_params(seq, values))
    return bool(won.rowcount == 1)


_CLOSING: dict[tuple[str, ...], Any] = {}


def closing(columns: tuple[str, ...]) -> Any:
    """The close's conditional UPDATE of `columns`, built once for each set of them (an answer,
    an expiry, a withdrawal): one built at each call was cache-keyed again at each call."""
    statement = _CLOSING.get(columns)
    if statement is None:
        statement = _CLOSING[columns] = (
            update(ASKS).where(A.seq == bindparam("close_seq"), A.status == OPEN)
            .values({column: bindparam(f"set_{column}") for column in columns})
        )
    return statement


def close_params(seq: int | None, values: dict[str, Any]) -> dict[str, Any]:
    """The parameters of `closing(tuple(values))`."""
    return {"close_seq": seq, **{f"set_{column}": value for column, value in values.items()}}


async def locked(conn: Conn, seq: int | None) -> AskRow | None:
    """The ask, locked until the transaction ends (FOR UPDATE on PostgreSQL; SQLite's writer
    holds the whole database already), so a read-then-write on it cannot race another."""
    return await _one(conn, select(ASKS).where(A.seq == seq).with_for_update())


async def count_approval(conn: Conn, seq: int | None, approvers: list[str]) -> bool:
    """A quorum's approvers so far, on an ask still open (read with `locked`)."""
    won = await conn.execute(
        update(ASKS).where(A.seq == seq, A.status == OPEN).values(approvers=approvers)
    )
    return bool(won.rowcount == 1)


async def remind_if_open(conn: Conn, seq: int | None, now: float, due_at: float) -> bool:
    """The one writer that sends an ask's reminder, however many processes run the clock."""
    won = await conn.execute(
        update(ASKS)
        .where(A.seq == seq, A.status == OPEN, A.reminded_at.is_(None))
        .values(reminded_at=now, due_at=due_at)
    )
    return bool(won.rowcount == 1)


async def escalate_if_open(conn: Conn, seq: int | None, now: float, due_at: float) -> bool:
    won = await conn.execute(
        update(ASKS)
        .where(A.seq == seq, A.status == OPEN, A.escalated_at.is_(None))
        .values(escalated_at=now, due_at=due_at)
    )
    return bool(won.rowcount == 1)


async def mark_read(conn: Conn, seq: int | None, values: dict[str, Any]) -> bool:
    """Record the first read (with the erasure of a sensitive answer in `values`)."""
    won = await conn.execute(update(ASKS).where(A.seq == seq, A.read_at.is_(None)).values(**values))
    return bool(won.rowcount == 1)


# One read, the common case (the wake just before this change): built once, and no IN list,
# whose expansion at each execution was 7 % of a wake's samples on SQLite (bench/).
READ_ONE = (
    update(ASKS).where(A.seq == bindparam("one_seq"), A.read_at.is_(None), A.status != OPEN)
    .values(read_at=bindparam("read_at_now")).returning(A.seq)
)


async def mark_read_many(conn: Conn, seqs: list[int], now: float) -> list[int]:
    """Record the first read of several closed asks at once: the seqs of those it recorded."""
    several = sorted(set(seqs))
    if not several:
        return []
    if len(several) == 1:
        found = await conn.execute(READ_ONE, {"one_seq": several[0], "read_at_now": now})
    else:
        found = await conn.execute(
            update(ASKS).where(A.seq.in_(several), A.read_at.is_(None), A.status != OPEN)
            .values(read_at=now).returning(A.seq)
        )
    return [int(seq) for seq in found.scalars().all()]


async def notify(conn: Conn, ask_id: str) -> None:
    """PostgreSQL: delivered at commit to every process LISTENing, whose parked agents wake."""
    await conn.execute(NOTIFY, {"c": NOTIFY_CHANNEL, "id": ask_id})


# -- the clock ------------------------------------------------------------------------------


async def due(conn: Conn, now: float, limit: int) -> list[AskRow]:
    """Open asks whose deadline or escalation has come (only open asks have a due time)."""
    return await _all(conn, select(ASKS).where(A.due_at <= now).order_by(A.due_at).limit(limit))


async def next_due(conn: Conn) -> float | None:
    found = await conn.scalar(select(func.min(A.due_at)))
    return float(found) if found is not None else None


# -- approvals --------------------------------------------------------------------------------


async def unused_approval(conn: Conn, call_hash: str, since: float) -> AskRow | None:
    """The newest approval of this exact call given since `since` and not yet used."""
    return await _one(
        conn,
        select(ASKS)
        .where(
            A.call_hash == call_hash,
            A.approval_used_at.is_(None),
            A.outcome == "approved",
            A.closed_at >= since,
        )
        .order_by(A.seq.desc())
        .limit(1),
    )


async def use_approval(conn: Conn, seq: int | None, now: float) -> int | None:
    """Single use, decided by the database: the use's number (1, then 2 after a `not_run`
    gave the grant back) for the one call that used it, None for every other. Each use starts
    its own outcome."""
    found = (await conn.execute(
        update(ASKS).where(A.seq == seq, A.approval_used_at.is_(None)).values(
            approval_used_at=now, approval_uses=func.coalesce(A.approval_uses, 0) + 1,
            run_outcome=None, run_detail=None, run_at=None)
        .returning(A.approval_uses)
    )).first()
    return None if found is None else int(found[0])


async def report_run(
    conn: Conn, seq: int | None, use: int, outcome: str, detail: str | None, now: float,
    give_back: bool,
) -> bool:
    """What ran after use `use` of the approval, once per use, decided by the database: True
    for the one report taken (only the latest use, still in use, takes one). `give_back` (a
    `not_run` the domain lets give the grant back) makes the grant usable once more."""
    values: dict[str, Any] = {"run_outcome": outcome, "run_detail": detail, "run_at": now}
    if give_back:
        values["approval_used_at"] = None
    won = await conn.execute(
        update(ASKS).where(A.seq == seq, A.approval_used_at.is_not(None),
                           A.approval_uses == use, A.run_outcome.is_(None)).values(**values)
    )
    return bool(won.rowcount == 1)


async def recent_refusal(conn: Conn, call_hash: str, since: float) -> AskRow | None:
    """The newest refusal of this exact call given since `since` (a remembered refusal)."""
    return await _one(
        conn,
        select(ASKS)
        .where(A.call_hash == call_hash, A.outcome == "approval_refused", A.closed_at >= since)
        .order_by(A.seq.desc())
        .limit(1),
    )


async def latest_call(conn: Conn, call_hash: str) -> AskRow | None:
    """The newest ask of this exact call (or start), whatever its status."""
    return await _one(
        conn, select(ASKS).where(A.call_hash == call_hash).order_by(A.seq.desc()).limit(1)
    )


async def open_call(conn: Conn, call_hash: str) -> AskRow | None:
    return await _one(conn, select(ASKS).where(A.call_hash == call_hash, A.status == OPEN))
