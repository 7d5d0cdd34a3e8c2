"""aye's tables. Times are UTC epoch seconds (float): portable across SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, Integer, Text, text
from sqlalchemy.orm import configure_mappers
from sqlmodel import Field, SQLModel

# BIGINT on PostgreSQL, but INTEGER on SQLite, where only "INTEGER PRIMARY KEY" is the rowid
# alias that autoincrements.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class AskRow(SQLModel, table=True):
    """One question or approval, its answer and its clock."""

    __tablename__ = "asks"
    __table_args__ = (
        Index("ix_asks_agent_seq", "agent", "seq"),
        Index("ix_asks_status_seq", "status", "seq"),
        Index("ix_asks_agent_status_seq", "agent", "status", "seq"),
        Index("ix_asks_work_open", "work_key", "status"),
        Index("ix_asks_work_seq", "work_key", "seq"),
        # Only open asks have a due time, so this index holds just what the clock can fire.
        Index("ix_asks_due", "due_at"),
        Index("ix_asks_agent_key", "agent", "idem_key", unique=True),
        # One pending approval per exact call, decided by the database.
        Index(
            "ix_asks_open_call",
            "call_hash",
            unique=True,
            sqlite_where=text("status = 'open'"),
            postgresql_where=text("status = 'open'"),
        ),
        Index("ix_asks_call_approved", "call_hash", "approval_used_at"),
        Index("ix_asks_ticket", "ticket_hash", unique=True),
    )

    seq: int | None = Field(default=None, sa_column=Column(BigId, primary_key=True))
    id: str = Field(max_length=32, unique=True)
    agent: str = Field(max_length=100)
    kind: str = Field(max_length=16)
    status: str = Field(max_length=16)
    question: str = Field(sa_column=Column(Text, nullable=False))
    options: list[str] | None = Field(default=None, sa_column=Column(JSON))
    # The answer format (core.domain.formats); NULL for asks made before formats existed.
    format: str | None = Field(default=None, max_length=16)
    form_schema: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    pick_min: int | None = None
    pick_max: int | None = None
    media: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    context: str | None = Field(default=None, sa_column=Column(Text))
    work: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    work_key: str | None = Field(default=None, max_length=300)
    responders: list[str] = Field(sa_column=Column(JSON, nullable=False))
    escalate_responders: list[str] | None = Field(default=None, sa_column=Column(JSON))
    escalate_at: float | None = None
    escalated_at: float | None = None
    deadline: float
    due_at: float | None = None
    created_at: float
    closed_at: float | None = None
    idem_key: str | None = Field(default=None, max_length=200)
    body_hash: str | None = Field(default=None, max_length=64)
    sensitive: bool = False
    answer_value: str | None = Field(default=None, sa_column=Column(Text))
    answer_option: int | None = None
    answer_note: str | None = Field(default=None, sa_column=Column(Text))
    answered_by: str | None = Field(default=None, max_length=120)
    answer_surface: str | None = Field(default=None, max_length=32)
    outcome: str | None = Field(default=None, max_length=32)
    read_at: float | None = None
    erased: bool = False
    operation: str | None = Field(default=None, max_length=200)
    call_input: Any = Field(default=None, sa_column=Column(JSON))
    call_hash: str | None = Field(default=None, max_length=64)
    approval_used_at: float | None = None
    # Approval policy: a quorum counted on this row (its lock decides a race), whether the
    # work's author may not approve, and one reminder.
    approvals_needed: int | None = None
    approvers: list[str] | None = Field(default=None, sa_column=Column(JSON))
    self_check: bool | None = None
    remind_at: float | None = None
    reminded_at: float | None = None
    # Where the agent is called back when the ask closes (ask_api/callbacks.py).
    callback_url: str | None = Field(default=None, sa_column=Column(Text))
    # An external ask (core/app/external.py): the verifier its door checks, the SHA-256 of its
    # ticket (the ticket itself is never stored), and the digest of the delivery that answered.
    verifier: str | None = Field(default=None, max_length=100)
    ticket_hash: str | None = Field(default=None, max_length=64)
    delivery_digest: str | None = Field(default=None, max_length=64)
    # Step-up (a gate's sign_in_within, seconds): approvals count only from a sign-in this fresh.
    sign_in_within: float | None = None
    # What ran (POST /v1/calls/outcome): reported once per use of the approval by its agent.
    run_outcome: str | None = Field(default=None, max_length=16)
    run_detail: str | None = Field(default=None, sa_column=Column(Text))
    run_at: float | None = None
    # How many times the single grant was used (NULL: never); a `not_run` gives back use 1 only.
    approval_uses: int | None = None
    # A decided approval's receipt (a compact JWS), signed once at the decision and kept.
    receipt: str | None = Field(default=None, sa_column=Column(Text))
    # A destructive ask (`"danger": true`, or a gate's `danger = true`): its affirmative answer
    # is a danger-styled control with a confirmation step on every surface.
    danger: bool | None = None
    # An ask made before 0.4.0 keeps its base-36 ref (`qa`), already posted on its surfaces;
    # later asks' refs are decimal (`q10`). core.domain.rules.ref_for.
    ref_base36: bool | None = None


class HistoryRow(SQLModel, table=True):
    """What happened to an ask, oldest first. Never holds a sensitive value."""

    __tablename__ = "history"
    __table_args__ = (
        Index("ix_history_ask", "ask_seq", "id"),
        Index("ix_history_chain", "chain_seq", unique=True),
    )

    id: int | None = Field(default=None, sa_column=Column(BigId, primary_key=True))
    ask_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    at: float
    event: str = Field(max_length=16)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # Its place in the audit chain (store/chain.py): 1, 2, 3, … across every ask, the hash of
    # the entry before it, and its own.
    chain_seq: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    prev: str | None = Field(default=None, max_length=64)
    hash: str | None = Field(default=None, max_length=64)


class OutboxRow(SQLModel, table=True):
    """Something a surface must show, written in the same transaction as the change it shows."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_due", "due_at"), Index("ix_outbox_ask", "ask_seq"))

    id: int | None = Field(default=None, sa_column=Column(BigId, primary_key=True))
    ask_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    surface: str = Field(max_length=32)
    action: str = Field(max_length=32)
    # Surface-specific data (a comment id to react to…); never a sensitive value.
    payload: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: float
    # NULL once done: the delivery loop's index holds only pending work.
    due_at: float | None = None
    attempts: int = 0
    claimed_until: float | None = None
    done_at: float | None = None
    last_error: str | None = Field(default=None, max_length=300)
    # Set when the row was given up (a permanent error, or past the retry budget): a dead letter.
    dead_at: float | None = None


class PostRow(SQLModel, table=True):
    """Where a surface showed an ask (channel and ts, comment id…), to update it later."""

    __tablename__ = "posts"

    ask_seq: int = Field(sa_column=Column(BigInteger, primary_key=True))
    surface: str = Field(max_length=32, primary_key=True)
    location: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    posted_at: float


class DeliveryRow(SQLModel, table=True):
    """Webhook deliveries already acted on (GitHub's X-GitHub-Delivery), so redeliveries are not."""

    __tablename__ = "deliveries"
    __table_args__ = (Index("ix_deliveries_received", "received_at"),)

    delivery_id: str = Field(max_length=100, primary_key=True)
    source: str = Field(max_length=32)
    received_at: float


class EventRow(SQLModel, table=True):
    """What happened to asks, in commit order, for the event stream (GET /v1/events): kept a
    few hours so a reconnect (Last-Event-ID) or another process's stream finds it."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_agent_id", "agent", "id"), Index("ix_events_at", "at"))

    id: int | None = Field(default=None, sa_column=Column(BigId, primary_key=True))
    at: float
    ask_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    agent: str = Field(max_length=100)
    event: str = Field(max_length=32)


class RateRow(SQLModel, table=True):
    """How many asks, calls and starts an agent made in one minute's window (its limit's
    count, shared by every process on the store)."""

    __tablename__ = "rates"

    agent: str = Field(max_length=100, primary_key=True)
    window: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    hits: int = 0


class OpenCountRow(SQLModel, table=True):
    """How many open asks an agent has: kept in the transaction of every create and close, so
    that `max_open` is one row's lookup, not a count of every open ask."""

    __tablename__ = "open_counts"

    agent: str = Field(max_length=100, primary_key=True)
    open: int = 0


class SessionRow(SQLModel, table=True):
    """A browser signed in to the web inbox. The cookie holds a random secret; the store keeps
    only its keyed hash, so a copy of the store opens nothing. Who signed in (`identity`, a
    responder such as operator:local), how (`method`: the operator token today) and when (a
    step-up's "signed in within") are kept with it; Sign out deletes the row."""

    __tablename__ = "sessions"
    __table_args__ = (Index("ix_sessions_expires", "expires_at"),)

    id_hash: str = Field(max_length=64, primary_key=True)
    identity: str = Field(max_length=120)
    method: str = Field(max_length=16)
    signed_in_at: float
    expires_at: float


class SigningKeyRow(SQLModel, table=True):
    """A key receipts are signed with; the highest generation is current. A generated key
    keeps its private half here (PEM); one from AYE_SIGNING_KEY_PATH keeps it in its file."""

    __tablename__ = "signing_keys"

    generation: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    kid: str = Field(max_length=64, unique=True)
    public_jwk: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    private_pem: str | None = Field(default=None, sa_column=Column(Text))
    created_at: float


class EmailLinkRow(SQLModel, table=True):
    """A mailed link's capability (handlers/email): one per recipient and ask. The store keeps
    only the SHA-256 of its token, so a copy of the store answers nothing; `used_at` is set
    once, by the one conditional write that lets its answer through."""

    __tablename__ = "email_links"
    __table_args__ = (Index("ix_email_links_ask_recipient", "ask_seq", "recipient", unique=True),)

    token_hash: str = Field(max_length=64, primary_key=True)
    ask_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    recipient: str = Field(max_length=254)
    created_at: float
    used_at: float | None = None


class EmailMailRow(SQLModel, table=True):
    """One mail to one recipient about one ask (`purpose`: ask, or remind), recorded before it
    is first sent: its Message-ID (the same on every retry), the lease of the process sending
    it now (`sending_until`: no second process sends it meanwhile), and how it ended."""

    __tablename__ = "email_mails"
    __table_args__ = (
        Index("ix_email_mails_once", "ask_seq", "recipient", "purpose", unique=True),
    )

    id: int | None = Field(default=None, sa_column=Column(BigId, primary_key=True))
    ask_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    recipient: str = Field(max_length=254)
    purpose: str = Field(max_length=16)
    message_id: str = Field(max_length=200, unique=True)
    created_at: float
    sending_until: float | None = None
    attempts: int = 0
    sent_at: float | None = None
    refused_at: float | None = None
    last_error: str | None = Field(default=None, max_length=300)


class MetaRow(SQLModel, table=True):
    """aye 0.1.0's schema_version (2 since revision 0002, so 0.1.0 refuses a migrated store).

    The schema's version is Alembic's revision in alembic_version (see store/migrate.py).
    """

    __tablename__ = "meta"

    key: str = Field(max_length=64, primary_key=True)
    value: str = Field(max_length=200)


# Rows are built with model_construct from query results; their attributes work only once the
# mappers are configured, which would otherwise wait for the first ORM-style query.
configure_mappers()
