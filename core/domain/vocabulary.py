"""The words of an ask: its kinds, statuses and outcomes, and why an answer is refused.

Facts only: the words people read are the renderers' (ask_api/views.py, each surface's own),
except the refusal reasons, which the API and every surface share.
"""

from __future__ import annotations

QUESTION = "question"
APPROVAL = "approval"
OPEN, ANSWERED, EXPIRED, WITHDRAWN = "open", "answered", "expired", "withdrawn"
STATUSES = (OPEN, ANSWERED, EXPIRED, WITHDRAWN)
APPROVE, REFUSE = "approve", "refuse"
APPROVAL_OPTIONS = [APPROVE, REFUSE]
APPROVED, APPROVAL_REFUSED, APPROVAL_TIMED_OUT = "approved", "approval_refused", "approval_timed_out"
# How an ask ended, beyond its status: an answer nobody but the agent may see.
ANSWERED_PRIVATELY = "answered_privately"
MAX_FREE_TEXT = 3000

# Why an answer was refused: the code (stable, in the API) and the words people see, the same
# words in the API's messages and on every surface.
REASONS = {
    "not_a_responder": "you are not one of the people this is for",
    "invalid_answer": "that answer does not fit the question",
    "answered": "it was already answered",
    "expired": "it has expired",
    "withdrawn": "it was withdrawn",
    "sensitive": "this answer is sensitive and cannot be given on a public page",
    "no_open_ask": "there is no open question here",
    "ambiguous": "several questions are open here: say which, with its ref",
    "already_approved": "you have already approved it; another person's approval is needed",
    "self_approval": "you opened this work, so someone else must approve it",
    "author_unknown": "aye could not check who opened this work, so it cannot take an approval "
                      "now; try again shortly",
    "sign_in_required": "this approval counts only from the web inbox, after a recent sign-in",
}
