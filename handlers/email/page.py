"""The page a mailed link opens: `GET /e/<token>` shows the ask and the chosen answer (or its
form) with a confirm button, and never answers (mail scanners open every link); the confirming
`POST` answers as `email:<recipient>`, through the same decision as every surface, and uses the
link up. An unknown, used or closed link is one uniform 404 page.

The token is the session: the form's CSRF value is derived from it with the process's key, and
the page carries the inbox's security headers (its CSP: nothing but aye's own stylesheet loads).
Plain HTML forms: no script is needed."""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

import jinja2
from aiohttp import web
from multidict import MultiDictProxy

from core.app.ports import AnswerResult, AskRow
from core.app.service import Service
from core.domain import vocabulary
from core.domain.answering import AUTHOR_UNKNOWN, INVALID_ANSWER, Attempt
from core.domain.responders import Responder
from core.domain.visible import visible
from handlers.kit.cards import answered_words, card
from handlers.kit.fields import given
from handlers.kit.forms import BadForm, protect, read_form

# The link's token: 256 bits, URL-safe base64 without padding (handlers/email/surface.py).
TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")
GONE = "This link is no longer valid."
MAX_NOTE = 3000
# Refusals the person can put right (a form to fix, the author not readable just now): the
# link stays theirs to use.
KEEPS_LINK = (INVALID_ANSWER, AUTHOR_UNKNOWN)
# The answer a link's `?answer=` may choose, in words, by the ask's controls.
CHOSEN = {
    "approval": {"approve": "Approve", "refuse": "Refuse"},
    "confirm": {"yes": "Yes", "no": "No"},
    "ack": {"continue": "Continue"},
}
AFFIRMATIVE = ("approve", "yes", "continue")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Pages:
    def __init__(self, asks: Service, key: bytes) -> None:
        self.asks, self._key = asks, key
        self.env = jinja2.Environment(
            loader=jinja2.ChoiceLoader([jinja2.PackageLoader("handlers.email", "templates"),
                                        jinja2.PackageLoader("handlers.kit", "templates")]),
            autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["visible"] = visible  # as the inbox's (handlers/web/rendering.py)

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/e/{token}", self.show), web.post("/e/{token}", self.confirm)]

    def csrf(self, token: str) -> str:
        return hmac.new(self._key, b"csrf\n" + token.encode(), hashlib.sha256).hexdigest()

    async def _open(self, token: str) -> tuple[str, AskRow] | None:
        """The link's recipient and its open ask; None for any link that opens nothing."""
        if not TOKEN.fullmatch(token):
            return None
        link = await self.asks.mails.link(token_hash(token))
        if link is None or link.used_at is not None:
            return None
        ask = await self.asks.by_seq(link.ask_seq)
        if ask is None or ask.status != vocabulary.OPEN:
            return None
        return link.recipient, ask

    # -- the pages -----------------------------------------------------------------------

    async def show(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        found = await self._open(token)
        if found is None:
            return self.gone()
        recipient, ask = found
        return self.page(token, recipient, ask, request.query.get("answer"))

    async def confirm(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        try:
            form = await read_form(request)
        except BadForm as bad:
            return self.render("said.html", bad.status, heading="That form could not be used",
                               words=bad.words)
        found = await self._open(token)
        if found is None:
            return self.gone()
        if not hmac.compare_digest(form.get("csrf", ""), self.csrf(token)):
            return self.render("said.html", 403, heading="That form is stale",
                               words="It did not come from this link's page, so nothing was "
                                     "changed. Open the link from the mail again.")
        recipient, ask = found
        note = form.get("note", "").strip() or None
        if note is not None and len(note) > MAX_NOTE:
            return self.page(token, recipient, ask, form.get("answer"), status=422,
                             problem=f"The note must be at most {MAX_NOTE} characters.",
                             typed=_typed(ask, form))
        # Used up first, by one conditional write: a replayed or racing POST finds it used.
        if not await self.asks.mails.use(token_hash(token)):
            return self.gone()
        result = await self._answer(ask, recipient, form, note)
        if not result.taken and result.reason in KEEPS_LINK:
            await self.asks.mails.unuse(token_hash(token))
            return self.page(token, recipient, result.ask or ask, form.get("answer"),
                             status=422, problem=_refusal(result), typed=_typed(ask, form))
        return self.render("said.html", 200 if result.taken else 409,
                           heading="Answered" if result.taken else "Not answered",
                           words=answered_words(result.ask or ask) if result.taken
                           else _refusal(result))

    async def _answer(self, ask: AskRow, recipient: str, form: Any, note: str | None) -> AnswerResult:
        control = "approval" if ask.kind == vocabulary.APPROVAL else card(ask, 0).control
        # No inbox sign-in stands behind a link: an approval under step-up is refused.
        attempt = Attempt(Responder.parse(f"email:{recipient}"), "email", signed_in_at=None)
        return await self.asks.answer(ask, attempt, given(control, form, ask.form_schema), note)

    # -- rendering -----------------------------------------------------------------------

    def page(self, token: str, recipient: str, ask: AskRow, chosen: str | None,
             status: int = 200, problem: str | None = None,
             typed: dict[str, list[str]] | None = None) -> web.Response:
        shown = card(ask, self.asks.clock.now(), whole_input=True)
        choices = CHOSEN.get(shown.control) or {
            str(i): option for i, option in enumerate(shown.options, 1)}
        words = choices.get(chosen or "")
        # A destructive ask's affirmative answer (approve, Yes, Continue, any option chosen).
        affirmative = bool(words) and (chosen in AFFIRMATIVE or shown.control == "choice")
        return self.render("page.html", status, card=shown, recipient=recipient,
                           chosen=chosen if words else None, chosen_words=words,
                           danger=bool(ask.danger), chosen_danger=bool(ask.danger) and affirmative,
                           action=f"/e/{token}", csrf=self.csrf(token), problem=problem,
                           typed=typed or {})

    def gone(self) -> web.Response:
        """The one page for any link that opens nothing: unknown, used, or its ask closed."""
        return self.render("said.html", 404, heading=GONE, words="")

    def render(self, template: str, status: int, **values: Any) -> web.Response:
        body = self.env.get_template(template).render(**values)
        response = web.Response(text=body, status=status, content_type="text/html",
                                charset="utf-8")
        protect(response.headers)
        return response


def _typed(ask: AskRow, form: MultiDictProxy[str]) -> dict[str, list[str]]:
    """What a refused form held, by input name, to show it again as typed (escaped by the
    template); a sensitive ask's answer is never written back into a page, only its note."""
    kept = {name: form.getall(name) for name in form if name != "csrf"}
    return {"note": kept.get("note", [])} if ask.sensitive else kept


def _refusal(result: AnswerResult) -> str:
    misfit = result.misfit
    if result.reason == INVALID_ANSWER and misfit is not None:
        return f"Not answered: {misfit.message if misfit.label else 'the answer ' + misfit.words}."
    return f"Not answered: {vocabulary.REASONS.get(result.reason or '', result.reason)}."
