"""What the `/v1` routes return, as pydantic models: the OpenAPI document's response schemas.

They mirror ask_api/views.py and the routes' bodies key for key. Every model forbids keys it
does not name, so a key a view gains without a field here makes tests/e2e/test_openapi.py fail
(it validates real responses against the document) instead of the document drifting quietly.
A key a view adds only where it applies is a field with `sometimes()`: not required, and never
null when it is there unless its type says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

# Times in responses: ISO 8601 in UTC with milliseconds (views.iso), e.g. 2026-12-01T09:00:00.000Z.
TIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"
Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time", "pattern": TIME_PATTERN})]
AskId = Annotated[str, Field(pattern=r"^[0-9a-f]{32}$", description="32 lowercase hex characters")]
Ref = Annotated[str, Field(pattern=r"^[qa][0-9a-z]{1,13}$", description="`q7`, `a1z`: for people")]
Format = Literal["text", "choice", "multi", "confirm", "ack", "form", "external"]
Status = Literal["open", "answered", "expired", "withdrawn"]
Outcome = Literal["approved", "approval_refused", "approval_timed_out"]
RunOutcome = Literal["ran", "failed", "not_run"]
Receipt = Annotated[str, Field(
    pattern=r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$",
    description="a compact JWS (EdDSA, typ aye-receipt+jwt) that GET /v1/keys verifies")]
HistoryEvent = Literal[
    "created", "posted", "answered", "late", "refused", "escalated", "approved", "reminded",
    "expired", "withdrawn", "read", "used", "undelivered", "outcome",
]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def sometimes(description: str = "", alias: str | None = None) -> Any:
    """A key that is in the body only where it applies (the view leaves it out otherwise)."""
    return Field(default=None, alias=alias, description=description or None,
                 json_schema_extra=_no_default)


class Shown(BaseModel):
    """A response body: no key beyond those named."""

    model_config = ConfigDict(extra="forbid")


class Error(Shown):
    """Every error from a `/v1` route."""

    error: str = Field(description="a stable code: `invalid_field`, `not_found`, …")
    message: str = Field(description="a sentence for people")
    field: str = sometimes("the offending input's path (`options[1]`, `work.slack.channel`)")


class Answer(Shown):
    """`answer` of an answered ask (null while it is not answered)."""

    value: Any = Field(description="as the format says: text, a list, true/false, an object")
    option: int | None = Field(description="the 1-based option of a choice or an approval")
    note: str | None = Field(description="the answerer's remark")
    options: list[int] = sometimes("a multi's picked 1-based options")
    erased: Literal[True] = sometimes("a sensitive answer erased once the agent read it")
    hidden: Literal[True] = sometimes("a sensitive answer, which only the asking agent sees")


class Medium(Shown):
    kind: Literal["image", "link"]
    url: str
    caption: str = sometimes()


class Run(Shown):
    """What ran after an approval was used (POST /v1/calls/outcome)."""

    outcome: RunOutcome
    detail: str | None
    at: Time


class AgentAskBase(Shown):
    """The ask as the agent that asked sees it (views.ask_view); `work` is set by responses()."""

    id: AskId
    ref: Ref
    kind: Literal["question", "approval"]
    status: Status
    question: str
    options: list[str] | None
    format: Format
    context: str | None
    deadline: Time
    work: Any
    created_at: Time
    sensitive: bool
    answer: Answer | None
    danger: Literal[True] = sometimes("destructive: its affirmative answer asks to confirm")
    form_schema: dict[str, Any] = sometimes("a form's JSON Schema", alias="schema")
    min: int = sometimes("a multi's least picks")
    max: int = sometimes("a multi's most picks")
    media: list[Medium] = sometimes()
    callback_url: str = sometimes()
    verifier: str = sometimes("an external ask's verifier")
    answer_url: str = sometimes("an external ask's door, in the 201 that made it only")
    operation: str | None = sometimes("an approval's gated operation")
    input: Any = sometimes("an approval's call input, whole")
    outcome: Outcome | None = sometimes("a closed approval's outcome (null when withdrawn)")
    by: str | None = sometimes("who refused an approval (with `approval_refused`)")
    receipt: Receipt = sometimes("a decided approval's signed receipt (GET, wait)")
    run: Run = sometimes("what ran after the approval's last use, as its agent reported")


class HistoryEntry(Shown):
    """One entry of an ask's history; which details an entry has depends on its event."""

    at: Time
    event: HistoryEvent
    agent: str = sometimes()
    operation: str = sometimes()
    input_hash: str = sometimes("an older entry's: a 16-character prefix of its call hash, unnamed")
    input_sha256: str = sometimes("an approval's: the SHA-256 of its canonical input")
    call_sha256: str = sometimes("an approval's: the SHA-256 of its canonical call")
    surface: str = sometimes()
    where: str = sometimes()
    by: str = sometimes()
    why: str = sometimes()
    outcome: Outcome | RunOutcome = sometimes("how an approval closed; what ran (`outcome`)")
    detail: str | None = sometimes("what the agent said of what ran")
    usable_again: bool = sometimes("a `not_run` that gave the grant back")
    use: int = sometimes("which use of an approval's grant (`used`, `outcome`): 1, 2, …")
    receipt_sha256: str = sometimes(
        "the entry that decided an approval: the SHA-256 of its receipt (the compact JWS)")
    answer: str = sometimes("a refused answer as given, cut to 300 characters")
    field: str = sometimes()
    message: str = sometimes()
    to: list[str] = sometimes()
    until: Time = sometimes()
    count: int = sometimes()
    needed: int = sometimes()
    approvers: list[str] = sometimes()
    erased: Literal[True] = sometimes()
    action: str = sometimes()


class Escalation(Shown):
    responders: list[str]
    at: Time | None
    escalated_at: Time | None


class Quorum(Shown):
    needed: int
    approvers: list[str]


class OperatorFields(Shown):
    """What the operator sees beyond the agent's view (views.operator_view)."""

    agent: str
    responders: list[str]
    answered_by: str | None
    surface: str | None
    closed_at: Time | None
    escalation: Escalation = sometimes()
    approvals: Quorum = sometimes()
    prevent_self_approval: Literal[True] = sometimes()
    remind_at: Time | None = sometimes()
    reminded_at: Time | None = sometimes()
    remembered_until: Time = sometimes()
    input_sha256: str = sometimes("an approval's: the SHA-256 of its canonical input")
    call_sha256: str | None = sometimes("an approval's: the SHA-256 of its canonical call")
    ticket: Literal["waiting", "used", "dead"] = sometimes(
        "an external ask's ticket: its door open, used by the answer, or closed unused")
    history: list[HistoryEntry] = sometimes("every event, oldest first (not in the event stream)")


class Allow(Shown):
    decision: Literal["allow"]
    approval: AskId = sometimes("the approval this call (or start) used")
    receipt: Receipt = sometimes("the used approval's signed receipt")


class PendingBase(Shown):
    decision: Literal["pending"]
    ask: Any  # the approval ask in the agent's view: see responses()


class Refusal(Shown):
    """403 from `/v1/calls` and `/v1/starts`: a decision, not an error."""

    decision: Literal["refuse"]
    error: Literal["approval_unavailable", "approval_refused", "start_refused", "approval_timed_out"]
    message: str
    by: str | None = sometimes("who refused")
    note: str | None = sometimes("the refuser's reason")
    repeat: Literal[True] = sometimes("a remembered refusal: no new ask was made")
    approval: AskId = sometimes("the approval ask that decided it")
    receipt: Receipt = sometimes("the refusal's signed receipt")


class Reported(Shown):
    """200 from `POST /v1/calls/outcome`."""

    approval: AskId
    outcome: RunOutcome
    usable_again: bool = Field(description="a `not_run` within the grant's window gave it back")


class Jwk(Shown):
    kty: Literal["OKP"]
    crv: Literal["Ed25519"]
    x: str
    alg: Literal["EdDSA"]
    use: Literal["sig"]
    kid: str


class Keys(Shown):
    """200 from `GET /v1/keys`: the public keys that verify receipts, the current first."""

    keys: list[Jwk]


class Delivered(Shown):
    """200 from an external ask's door."""

    outcome: Literal["taken", "already_answered"]


class Taken(Shown):
    """200 from the operator's answer."""

    outcome: Literal["taken"]
    ref: Ref
    approvals: int = sometimes("a quorum's approvals so far, while it is short")
    needed: int = sometimes("the approvals the quorum needs")


class Whoami(Shown):
    """200 from `GET /v1/whoami`: whose token the request carries."""

    as_: Literal["operator", "agent"] = Field(alias="as", description="the operator, or an agent")
    agent: str = sometimes("the agent's name (`[[agents]] name`, or `default`)")


@dataclass(frozen=True, slots=True)
class Responses:
    """The response models, with `work` made of the registered surfaces' variants."""

    agent_ask: type[BaseModel]
    operator_ask: type[BaseModel]
    pending: type[BaseModel]
    page: type[BaseModel]
    asks: type[BaseModel]

    def models(self) -> list[type[BaseModel]]:
        return [self.agent_ask, self.operator_ask, self.page, self.asks, Allow, self.pending,
                Refusal, Taken, Delivered, Whoami, Reported, Keys, Error]


def responses(work: Any) -> Responses:
    """The models whose asks carry `work` (the same Work model that validates requests)."""
    described = Field(description="as given, or null")
    agent = create_model("AgentAsk", __base__=AgentAskBase, work=(work | None, described))
    operator = create_model(
        "OperatorAsk", __base__=(OperatorFields, agent),
        __doc__="The ask as the operator sees it: the agent's view and who, where and how.",
    )
    either = list[agent | operator]  # type: ignore[valid-type]
    return Responses(
        agent_ask=agent,
        operator_ask=operator,
        pending=create_model("Pending", __base__=PendingBase, ask=(agent, ...)),
        page=create_model(
            "AskPage", __base__=Shown, asks=(either, ...),
            next_cursor=(str | None, Field(description="pass as `cursor` for the next page")),
        ),
        asks=create_model("AskList", __base__=Shown, asks=(either, Field(description="in the order asked"))),
    )
