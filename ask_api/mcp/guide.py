"""What a model reads of aye's MCP server: when to ask a person, what each tool does and what
each argument means. The argument descriptions are added to the input schemas that
ask_api/mcp/tools.py generates from the API's own request models."""

from __future__ import annotations

INSTRUCTIONS = """\
aye puts you in touch with the people responsible for your work. They answer in Slack, on \
GitHub or in aye's inbox, and may take minutes or hours.

When to ask a person (`ask`): you need a decision, a preference, a fact or a go-ahead that only \
a person can give, and guessing would be costly or wrong. Do not ask what you can find out \
yourself. Ask one clear question; give `options` when the possible answers are known; put what \
the person needs to know in `context`. You cannot choose who answers: the operator decides.

Gated operations (`request_approval`): before you run an operation that needs a person's \
approval (a deploy, a payment, a deletion, anything the operator gates), call \
`request_approval` with its name and its exact input, and run it only when the decision is \
`allow`. Each `allow` lets that exact call through once, and is already used when you get it; \
an operation nobody gates is allowed at once.

A refusal (`decision: refuse`) means a person said no, or nobody can approve it: do not run \
the operation and do not retry the same call. A refusal is remembered for a while: the \
identical call is refused at once (`repeat: true`) without asking anyone. Tell the user, or change your plan.

Waiting: `ask` and `request_approval` wait up to `wait_s` seconds (default 50). If nobody has \
answered by then you get the ask back with `status: open` (or `decision: pending`); nothing is \
lost. Call `wait` with its `ref` to keep waiting; never ask the same question again.

Never put a secret (a password, a token, a private key, personal data the person does not \
need) in a question, its context or an operation's input. When the answer itself is secret, \
set `sensitive: true`."""

ASK = """\
Ask a person a question and wait for the answer. Use it when you need a decision, a \
preference, a fact or a go-ahead that only a person can give. The question goes to the people \
the operator configured (Slack, GitHub, aye's inbox). Waits up to wait_s seconds (default 50, \
at most 300), then returns the ask: status "answered" with answer.value (typed by format: text \
and choice a string, multi a list, confirm and ack a boolean, form an object) and answer.note \
(the person's remark, if any); status "open" when nobody has answered yet: call `wait` with its \
ref to keep waiting, do not ask again; "expired" or "withdrawn": no answer will come. Never put \
a secret in the question or its context."""

WAIT = """\
Keep waiting for an ask you made: a question from `ask`, or a pending approval from \
`request_approval` (its ask.ref). Waits up to wait_s seconds (default 50, at most 300) and \
returns the ask as it stands; status "open" means nobody has answered yet, so wait again \
later. For an approval: once its outcome is "approved", call `request_approval` again with \
exactly the same operation, input and work to use the approval; "approval_refused" means do \
not run it."""

REQUEST_APPROVAL = """\
Ask permission before running an operation that may need a person's approval (a deploy, a \
payment, a deletion). Call it right before the operation, with the operation's name and its \
exact input, and run the operation only if decision is "allow": an "allow" is for this one \
call and is already used up, so running it again needs a new request_approval. Operations \
nobody gates are allowed at once. decision "pending": nobody decided within wait_s seconds \
(default 50, at most 300): call `wait` with ask.ref, then call request_approval again with the \
same arguments once it is approved. decision "refuse": do not run it and do not retry the same \
call; error says why (approval_refused: a person refused it, `by` who and `note` their reason, \
`repeat: true` when an earlier refusal is remembered; approval_timed_out: nobody approved it in \
time; approval_unavailable: nobody can approve it here)."""

WAIT_S = (
    "How long this call waits, in whole seconds (0 to 300, default 50). Nothing is lost when it "
    "runs out: the ask stays open and `wait` goes on waiting."
)
WORK = (
    'The conversation you work in, so the question is shown there: exactly one of '
    '{"slack": {"channel": "C0123ABCD", "thread_ts": "1700000000.000100"}} or '
    '{"github": {"repo": "owner/name", "number": 42}} (with "type": "pull" for a pull request).'
)
CALLBACK_URL = (
    "Optional: where aye POSTs the ask, signed, when it closes, for a program of yours that is "
    "not waiting on this tool. Only URLs the operator allowed for you; leave it out otherwise."
)

ASK_FIELDS = {
    "question": "The question, in plain words a person can answer quickly (1 to 3000 "
                "characters). Never a secret.",
    "options": "2 to 20 distinct answers to pick from (1 to 75 characters each). With options "
               "the format defaults to choice.",
    "format": 'How the person answers, and what answer.value holds: "text" (free text: a '
              'string), "choice" (one of options: its text), "multi" (min to max of options: '
              'a list of their texts), "confirm" (yes or no: true or false), "ack" (a go-ahead: '
              'true), "form" (the fields of `schema`: an object). Default: choice with options, '
              "text without.",
    "schema": 'Only with format "form": a JSON Schema {"type": "object", "properties": {...}, '
              '"required": [...]} of 1 to 10 fields: strings (enum, format email, uri or date, '
              "minLength, maxLength, pattern), integers and numbers (minimum, maximum), "
              "booleans, arrays of strings with items.enum; each may have title and "
              "description.",
    "min": 'Only with format "multi": the fewest options to pick (default 1).',
    "max": 'Only with format "multi": the most options to pick (default all).',
    "media": 'Up to 5 pictures or links shown beside the question: {"kind": "image" or '
             '"link", "url": "https://...", "caption": "..."}.',
    "context": "What the person needs to know to answer (up to 3000 characters). Never a "
               "secret.",
    "deadline": "When the question expires unanswered: an ISO 8601 time with a zone, e.g. "
                "2026-12-01T09:00:00Z, at most a year ahead. Give deadline or timeout_s, not "
                "both; without either the operator's default applies (24h unless set).",
    "timeout_s": "Seconds until the question expires unanswered, instead of deadline.",
    "work": WORK,
    "key": "An idempotency key (up to 200 characters): asking again with the same key and the "
           "same arguments returns the same ask instead of asking twice.",
    "sensitive": "true when the answer is secret: it is never logged or shown anywhere, and is "
                 "erased once you have read it.",
    "danger": "true when the affirmative answer is destructive: people must confirm it (a "
              "red button with a confirmation step).",
    "callback_url": CALLBACK_URL,
    "wait_s": WAIT_S,
}

APPROVAL_FIELDS = {
    "operation": "The operation's name, e.g. deploy.prod: letters, digits, _ and -, in parts "
                 "joined by dots.",
    "input": "The operation's exact input, any JSON. People approve this input, and an "
             "approval lets only the identical call (same operation, input and work) through, "
             "once.",
    "work": WORK,
    "timeout_s": "Your own bound, in seconds, on how long a new approval may stay open (its "
                 "deadline is the earlier of this and the operator's gate timeout).",
    "callback_url": CALLBACK_URL,
    "wait_s": WAIT_S,
}

WAIT_FIELDS = {
    "ref": 'The ask\'s ref (like "q7" or "a3") or its id, as `ask` or `request_approval` '
           "returned it.",
    "wait_s": WAIT_S,
}
