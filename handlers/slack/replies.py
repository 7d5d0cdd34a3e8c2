"""What the presser alone is told (ephemerally, or in the answer form): pure words, no I/O.

Agent text quoted here (an operation, an answer) is escaped like the blocks' (text.fit):
an ephemeral line is mrkdwn too, and must not mention anyone or make a link. An answer is shown
as people read it (formats.plain: `web, cache`, `yes`), never as the JSON the store keeps.
"""

from __future__ import annotations

from core.app.ports import AnswerResult, AskRow
from core.domain import formats, rules, vocabulary
from handlers.slack import quorum, starts
from handlers.slack.text import fit

VALUE_MAX = 2000
# Why a member of another organisation (Slack Connect) cannot answer, after the reason's words.
OUTSIDER_WHY = (
    "only members of aye's own Slack workspace (or of a workspace its operator allows) "
    "can answer here"
)


def reply(ask: AskRow, ref: str, result: AnswerResult) -> str:
    """The ephemeral line after a press or a submission: taken, or why not, in words."""
    if not result.taken:
        why = vocabulary.REASONS.get(result.reason or "", "it could not be taken")
        return f"Your answer to `{ref}` was not taken: {why}."
    taken = result.ask or ask
    if taken.kind == vocabulary.APPROVAL and taken.status == vocabulary.OPEN:
        return quorum.counted_reply(taken, ref)  # counted towards a quorum not yet reached
    if starts.is_start(taken) and taken.outcome in (vocabulary.APPROVED, vocabulary.APPROVAL_REFUSED):
        return _start_reply(taken, ref)
    if taken.outcome == vocabulary.APPROVED:
        return f"You approved `{fit(taken.operation or ref, 200)}` (`{ref}`)."
    if taken.outcome == vocabulary.APPROVAL_REFUSED:
        return f"You refused `{fit(taken.operation or ref, 200)}` (`{ref}`)."
    shown = None if taken.sensitive else formats.plain(taken, taken.answer_value)
    if not shown:
        return f"Thanks: your answer to `{ref}` was taken."
    return f"Thanks: your answer to `{ref}` was taken: *{fit(shown, VALUE_MAX)}*"


def _start_reply(taken: AskRow, ref: str) -> str:
    """To whoever decided a start: what they let start, or what they cancelled."""
    started = fit(starts.what(taken), 300)
    if taken.outcome == vocabulary.APPROVED:
        return f"You approved {started} (`{ref}`)."
    return f"You refused {started} (`{ref}`): {starts.cancelled(taken)}."


def not_taken_error(result: AnswerResult) -> str:
    """Why a modal's answer was not taken, said in the modal under its first input."""
    if result.misfit is not None:
        return result.misfit.message
    why = vocabulary.REASONS.get(result.reason or "", "it could not be taken")
    return f"Not taken: {why}."


def not_open_reply(ask: AskRow, ref: str) -> str:
    why = vocabulary.REASONS.get(rules.closed_reason(ask.status), "it is closed")
    return f"`{ref}` cannot be answered any more: {why}."


def not_yours_reply(ref: str) -> str:
    return f"You cannot answer `{ref}`: {vocabulary.REASONS['not_a_responder']}."


def external_reply(ask: AskRow, ref: str) -> str:
    """To a person who tried to answer an external ask: only its outside system answers it."""
    return (f"Your answer to `{ref}` was not taken: only {fit(ask.verifier or '?', 100)}, an "
            "outside system, answers it, through its signed door.")


def external_error(ask: AskRow) -> str:
    """The same, under a modal's field (plain text, not mrkdwn)."""
    return (f"Not taken: only {ask.verifier or '?'}, an outside system, answers this question, "
            "through its signed door.")


def outsider_reply(ref: str) -> str:
    """To a person of another Slack organisation (a Slack Connect channel) who pressed."""
    return f"Your answer to `{ref}` was not taken: {vocabulary.REASONS['not_a_responder']}: {OUTSIDER_WHY}."


UNKNOWN_ASK_REPLY = "aye does not know this question any more, so nothing was recorded."
STALE_BUTTON_REPLY = "That button no longer matches the question, so nothing was recorded."
FAILED_REPLY = (
    "Something went wrong while aye handled that, and it may not have been recorded. "
    "Please try again in a moment."
)
EMPTY_ANSWER_ERROR = "Write an answer first."
UNKNOWN_ASK_ERROR = "aye does not know this question any more, so nothing was recorded."
STALE_MODAL_ERROR = "This form no longer matches the question, so nothing was recorded."
OUTSIDER_ERROR = f"Not taken: {vocabulary.REASONS['not_a_responder']}: {OUTSIDER_WHY}."
