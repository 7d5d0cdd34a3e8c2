"""Where an answer is decided: who may answer, is the ask open or late, does the answer fit,
and which ask an answer given on a work (an issue, a thread) means. Pure: no store here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from core.domain import formats, identity, rules, vocabulary
from core.domain.ask import Ask, is_approval
from core.domain.forms import Misfit
from core.domain.people import NOBODY, People
from core.domain.responders import Responder, admitted
from core.domain.types import FollowUp, Seen

# An answer this soon after the winning one raced it: recorded as `late`, not `refused`.
LATE_WINDOW_S = 10.0
NOT_A_RESPONDER, INVALID_ANSWER, SENSITIVE = "not_a_responder", "invalid_answer", "sensitive"
NO_OPEN_ASK, AMBIGUOUS = "no_open_ask", "ambiguous"
# Step-up: an approval that counts only from a fresh inbox sign-in, given from elsewhere.
SIGN_IN_REQUIRED = "sign_in_required"
REFUSED, LATE = "refused", "late"
SHOWN_GIVEN = 300  # how much of a refused answer its history keeps
# The approval policy's refusals (a gate's `approvals` and `prevent_self_approval`).
ALREADY_APPROVED, SELF_APPROVAL, AUTHOR_UNKNOWN = "already_approved", "self_approval", "author_unknown"


@dataclass(frozen=True, slots=True)
class Taken:
    """The answer fits: what to store."""

    value: str  # as stored (core.domain.formats.Fit.stored)
    option: int | None
    outcome: str | None  # approved / approval_refused for an approval


@dataclass(frozen=True, slots=True)
class Refused:
    """Not taken: the reason (a key of vocabulary.REASONS) and the history event (`refused`, `late`)."""

    reason: str
    event: str = REFUSED
    misfit: Misfit | None = None  # for invalid_answer: which part, and why


Verdict = Taken | Refused


def allowed(ask: Ask, people: People = NOBODY) -> list[Responder]:
    """Who may answer now: the ask's responders, and the escalation's once it escalated, each
    `person:<name>` standing for every identity of that person."""
    names = list(ask.responders)
    if ask.escalated_at is not None and ask.escalate_responders:
        names += ask.escalate_responders
    return people.expand(Responder.parse(n) for n in names)


def racing(ask: Ask, now: float) -> bool:
    """An answer arriving just after the winner raced it (a late answer); one that comes
    later is a plain refusal of a closed ask."""
    return (
        ask.status == vocabulary.ANSWERED
        and ask.closed_at is not None
        and now - ask.closed_at <= LATE_WINDOW_S
    )


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt to answer an ask: who gives it, through which surface, and what that
    surface says of them and of the event.

    `public`: the answer is visible to anyone (a GitHub comment); a sensitive ask refuses it.
    `member`: false when the surface cannot vouch for the person (Slack: not of aye's own
    workspace or an allowed team, or that team not known yet). `signed_in_at`: when the person
    signed in to the inbox this answer comes from (None: not from an inbox session), for
    step-up. `follow_up`: what the surface shows once it is decided (a reaction); `seen`: the
    surface's event, recorded with its effect so it acts once.
    """

    person: Responder
    surface: str = "api"
    public: bool = False
    member: bool = True
    signed_in_at: float | None = None
    follow_up: FollowUp | None = None
    seen: Seen | None = None


def judge(ask: Ask, attempt: Attempt, given: Any, now: float, people: People = NOBODY) -> Verdict:
    """Take `given` (a surface's text, or the API's JSON) from `attempt.person` as the answer
    to `ask` as it was read, or say why not.

    A public attempt at a sensitive ask is refused; one the surface does not vouch for
    (`member` false) is refused as not a responder, whatever the ask's responders. An approval
    under step-up (`sign_in_within`) counts only from an inbox sign-in that fresh
    (`signed_in_at`), and a refusal from anywhere.
    The store still decides the race: a Taken verdict wins only if the ask is still open when
    it is written.
    """
    if not attempt.member or not admitted(attempt.person, allowed(ask, people)):
        return Refused(NOT_A_RESPONDER)
    if ask.status != vocabulary.OPEN:
        return Refused(rules.closed_reason(ask.status), LATE if racing(ask, now) else REFUSED)
    if ask.sensitive and attempt.public:
        return Refused(SENSITIVE)
    try:
        answer = formats.fit(ask, given)
    except Misfit as misfit:
        return Refused(INVALID_ANSWER, misfit=misfit)
    outcome = None
    if is_approval(ask):
        outcome = vocabulary.APPROVED if answer.value == vocabulary.APPROVE else vocabulary.APPROVAL_REFUSED
        if outcome == vocabulary.APPROVED and not fresh_enough(ask, attempt.signed_in_at, now):
            return Refused(SIGN_IN_REQUIRED)
    return Taken(answer.stored, answer.option, outcome)


def fresh_enough(ask: Ask, signed_in_at: float | None, now: float) -> bool:
    """Whether an approval may count under the ask's step-up: no `sign_in_within`, or a sign-in
    to the inbox no older than it."""
    if ask.sign_in_within is None:
        return True
    return signed_in_at is not None and 0 <= now - signed_in_at <= ask.sign_in_within


# -- which ask an answer on a work means ---------------------------------------------------------


class Reply(Protocol):
    """An answer written on a work: its whole text, and the reading where it starts with a ref
    (`q7 yes`), kept both ways until the store says whether the ref names an ask."""

    @property
    def text(self) -> str: ...
    @property
    def ref(self) -> str | None: ...
    @property
    def ref_answer(self) -> str | None: ...


A = TypeVar("A", bound=Ask)


@dataclass(frozen=True, slots=True)
class Target(Generic[A]):
    ask: A
    text: str


@dataclass(frozen=True, slots=True)
class Ambiguous(Generic[A]):
    open_asks: list[A]


@dataclass(frozen=True, slots=True)
class Nothing:
    """No open ask on the work, and no ref naming one of its asks."""


def choose(
    reply: Reply, open_asks: list[A], named: A | None, elsewhere: bool = False
) -> Target[A] | Ambiguous[A] | Nothing:
    """Which ask a reply answers.

    `named` is the ask the reply's ref names, when that ask belongs to this work (open or
    not): it wins, so `q7 yes` reaches q7 alone, and an answer to a closed q7 is refused as
    closed instead of landing on another open ask. `elsewhere`: the ref names an ask of another
    work; refused rather than taken as this one's free text, since a wrong answer taken cannot
    be undone and a refused one can be written again. Otherwise one open ask takes the whole
    text (a free-text answer may well start with a word that only looks like a ref).
    """
    if reply.ref_answer is not None:
        if named is not None:
            return Target(named, reply.ref_answer)
        if elsewhere:
            return Nothing()
    if len(open_asks) == 1:
        return Target(open_asks[0], reply.text)
    if open_asks:
        return Ambiguous(open_asks)
    return Nothing()


def refused_detail(ask: Ask, given: Any, misfit: Misfit | None) -> dict[str, Any]:
    """What a refused answer said (cut to SHOWN_GIVEN characters; never for a sensitive ask)
    and, when it did not fit, which part and why."""
    detail: dict[str, Any] = {}
    if given is not None and not ask.sensitive:
        text = given if isinstance(given, str) else identity.canonical_json(given)
        detail["answer"] = text[:SHOWN_GIVEN]
    if misfit is not None:
        detail.update(field=misfit.field, message=misfit.message)
    return detail


# -- the approval policy: a quorum of distinct people, and no self-approval ----------------


def policed(ask: Ask, verdict: Taken) -> bool:
    """An approval whose `approve` the policy must weigh (a quorum, or no self-approval)."""
    return verdict.outcome == vocabulary.APPROVED and (
        (ask.approvals_needed or 1) > 1 or bool(ask.self_check)
    )


def self_approval(
    person: Responder, author: str | None, known: bool = True, people: People = NOBODY
) -> str | None:
    """Why `person` may not approve a work `author` opened: SELF_APPROVAL when they are its
    author by any identity of their person, AUTHOR_UNKNOWN when the author could not be read
    (`known` False: never a guess); None when they may."""
    if not known:
        return AUTHOR_UNKNOWN
    if author is not None and people.same(Responder.parse(author), person):
        return SELF_APPROVAL
    return None


def not_countable(
    row: Ask, person: Responder, now: float, people: People = NOBODY
) -> tuple[str | None, str]:
    """Why this approval cannot count towards the quorum of `row` (read locked), and its
    history event; (None, "") when it counts. A quorum counts people: a second identity of a
    person who approved already is refused."""
    if row.status != vocabulary.OPEN:
        return rules.closed_reason(row.status), LATE if racing(row, now) else REFUSED
    if any(people.same(Responder.parse(name), person) for name in row.approvers or []):
        return ALREADY_APPROVED, REFUSED
    return None, ""
