"""The inbox's pages: sign in and out, the list of asks, one ask with its history, and the
answer a form posts (answered as operator:local, then a 303 back with the outcome)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from core.app.ports import AnswerResult, AskRow
from core.app.service import BY_TOKEN, Service, Sessions
from core.domain import formats, refs, vocabulary
from core.domain.answering import NOT_A_RESPONDER, SIGN_IN_REQUIRED, Attempt
from core.domain.ask import is_external
from core.domain.responders import OPERATOR, Responder
from core.domain.visible import visible
from handlers.kit import cards, fields
from handlers.kit.forms import BadForm, read_form
from handlers.web import history
from handlers.web.failures import SignInFailures, client_address
from handlers.web.flash import FLASH_COOKIE, FLASH_S, Flash, Flashes
from handlers.web.guard import FORM, LOGIN, SESSION, safe_back, session_cookie
from handlers.web.rendering import Templates
from handlers.web.signin import SIGN_INS

TEMPLATES = web.AppKey("web_templates", Templates)
PAGE = 50
MAX_NOTE = 3000
MAX_TOKEN = 1000
NOT_VALID = "That token is not valid."
TOO_MANY = "Too many failed sign-ins from this address. Wait a minute, then try again."
MAX_SEARCH = 200
PLAIN_INTEGER = re.compile(r"[0-9]{1,19}")
KEPT_OUT = ("csrf", "back", "confirmed")  # a form's own fields, never shown again as typed
# Refusals after which the page has nothing to give back (not theirs to answer: it shows no
# controls; a step-up: sign in first): these redirect with the flash. After any other, the page
# comes back at once with what was typed.
NO_RETYPE = (NOT_A_RESPONDER, SIGN_IN_REQUIRED)


class Inbox:
    def __init__(
        self, asks: Service, operator_ok: Callable[[str], bool], sessions: Sessions,
        flashes: Flashes, failures: SignInFailures, public_url: str | None = None,
    ) -> None:
        self.asks = asks
        # Where people reach aye (AYE_PUBLIC_URL), for the receipt's line; None: as the
        # browser did.
        self.public_url = public_url.rstrip("/") if public_url else None
        self.operator_ok = operator_ok
        self.sessions = sessions
        self.flashes = flashes
        self.failures = failures

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.home),
            web.get("/login", self.login_page),
            web.post("/login", self.login),
            web.post("/logout", self.logout),
            web.get("/inbox", self.inbox),
            web.get("/inbox/{ref}", self.one),
            web.post("/inbox/{ref}/answer", self.answer),
        ]

    # -- rendering ---------------------------------------------------------------------

    def render(self, request: web.Request, name: str, context: dict[str, Any],
               status: int = 200) -> web.Response:
        session = request.get(SESSION)
        base = {"csrf": self.sessions.csrf(session) if session else "", "flash": None, "tab": None,
                "signed_in_as": _shown_identity(session), "open_count": "", "query": ""}
        return request.config_dict[TEMPLATES].render(name, {**base, **context}, status)

    def problem(self, request: web.Request, status: int, heading: str, words: str, link: str,
                link_words: str) -> web.Response:
        context = {"heading": heading, "words": words, "link": link, "link_words": link_words}
        return self.render(request, "problem.html", context, status)

    def _flash(self, request: web.Request) -> Flash | None:
        return self.flashes.read(request.cookies.get(FLASH_COOKIE))

    def _page(self, request: web.Request, name: str, context: dict[str, Any]) -> web.Response:
        """A whole page: it shows the outcome of the last answer once, then forgets it."""
        flash = self._flash(request)
        response = self.render(request, name, {**context, "flash": flash})
        if FLASH_COOKIE in request.cookies:
            response.del_cookie(FLASH_COOKIE, path="/", secure=self.sessions.secure)
        return response

    # -- signing in and out ------------------------------------------------------------

    async def home(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/inbox")

    async def login_page(self, request: web.Request) -> web.Response:
        following = safe_back(request.query.get("next"))
        # `again=1`: someone signed in is asked to sign in afresh (a gate's sign_in_within).
        if request.get(SESSION) and request.query.get("again") != "1":
            raise web.HTTPFound(following)
        # After a person's sign-in failed (handlers/web/signin.py): one sentence saying why.
        problem = request.app[SIGN_INS].refusal(request.query.get("failed"), request.query.get("via"))
        return self._sign_in_page(request, following, problem)

    async def login(self, request: web.Request) -> web.Response:
        try:
            form = await read_form(request, limit=4096)
        except BadForm as bad:
            return self._sign_in_page(request, "/inbox", bad.words, status=bad.status)
        following = safe_back(form.get("next"))
        token = form.get("token", "").strip()
        # The token first, whatever this address failed before: the right one always signs in.
        if token and len(token) <= MAX_TOKEN and self.operator_ok(token):
            earlier = request.get(SESSION)
            if earlier is not None:  # signing in again ends the session before, everywhere
                await self.sessions.end(earlier)
            session = await self.sessions.start(str(OPERATOR), BY_TOKEN)
            response = web.Response(status=303, headers={"Location": following})
            session_cookie(response, self.sessions, session)
            return response
        wait = self.failures.fail(client_address(request.remote))
        response = self._sign_in_page(request, following, NOT_VALID if wait is None else TOO_MANY,
                                      status=401 if wait is None else 429)
        if wait is not None:
            response.headers["Retry-After"] = str(wait)
        return response

    async def logout(self, request: web.Request) -> web.Response:
        session = request.get(SESSION)
        if session is not None:
            await self.sessions.end(session)
        response = web.Response(status=303, headers={"Location": LOGIN})
        response.del_cookie(self.sessions.cookie, path="/", secure=self.sessions.secure,
                            httponly=True, samesite="Strict")
        return response

    # -- the list and one ask ----------------------------------------------------------

    async def inbox(self, request: web.Request) -> web.Response:
        every = request.query.get("status") == "all"
        text = request.query.get("cursor", "")
        cursor = int(text) if PLAIN_INTEGER.fullmatch(text) else None
        status = None if every else vocabulary.OPEN
        words = request.query.get("q", "").strip()[:MAX_SEARCH]
        who = _person(request)
        if words:  # ?q=: words of the question, context or operation, a ref, an agent
            rows, more = await self.asks.search(who, words, status, PAGE, cursor)
        elif who is None:  # the operator token: every ask
            rows, more = await self.asks.list_asks(None, status, PAGE, cursor)
        else:  # a person: only the asks they may answer
            rows, more = await self.asks.list_for(who, status, PAGE, cursor)
        now = self.asks.clock.now()
        query = {**({"status": "all"} if every else {}), **({"q": words} if words else {})}
        page_url = _url("/inbox", {**query, **({"cursor": str(cursor)} if cursor else {})})
        context = {
            "heading": ("Search" if words else "All asks" if every else "Open asks"),
            "tab": "all" if every else "open", "query": words,
            "open_count": await self._open_count(request),
            "cards": [cards.card(row, now) for row in rows],
            "page_url": page_url,
            "fragment_url": _fragment(page_url),
            "next_url": _url("/inbox", {**query, "cursor": str(more)}) if more else None,
            "first_url": _url("/inbox", query) if cursor else None,
        }
        if request.query.get("fragment") == "1":
            return self.render(request, "region.html", context)
        return self._page(request, "inbox.html", context)

    async def one(self, request: web.Request) -> web.Response:
        ask = await self._find(request)
        if ask is None:
            return self.problem(request, 404, "No such ask",
                                "There is no ask with that ref.", "/inbox", "Back to the inbox")
        now = self.asks.clock.now()
        card = cards.card(ask, now, whole_input=True)
        await self._receipt(request, ask, card)
        approval = ask.kind == vocabulary.APPROVAL
        card.history = history.entries(await self.asks.history(ask.seq or 0), now, approval)
        page_url = f"/inbox/{card.ref}"
        context = {
            "heading": cards.heading(ask), "open_count": await self._open_count(request),
            "card": card, "page_url": page_url, "fragment_url": _fragment(page_url),
        }
        if request.query.get("fragment") == "1":
            return self.render(request, "detail_region.html", context)
        return self._page(request, "detail.html", context)

    async def _receipt(self, request: web.Request, ask: AskRow, card: cards.Card) -> None:
        """A decided approval's receipt on its page, and the line that checks it against
        GET /v1/keys where this person reaches aye."""
        if ask.kind != vocabulary.APPROVAL or ask.status == vocabulary.OPEN:
            return
        card.receipt = await self.asks.receipt(ask)
        if card.receipt:
            origin = self.public_url or str(request.url.origin())
            card.verify = cards.verify_command(card.receipt, f"{origin}/v1/keys")

    async def _open_count(self, request: web.Request) -> str:
        """The page title's count of the asks open for whoever is signed in ("" for none)."""
        count, more = await self.asks.open_count(_person(request))
        return f"{count}+" if more else str(count) if count else ""

    async def _find(self, request: web.Request) -> AskRow | None:
        """The ask the path names, if the one signed in may see it: any for the operator, for
        a person only an ask they may answer (any other is no such ask to them)."""
        ident = request.match_info["ref"]
        if not (ident.isascii() and ident.isalnum() and len(ident) <= 32):
            return None
        ask = await self.asks.find(ident)
        who = _person(request)
        if ask is None or who is None or self.asks.may_answer(ask, who):
            return ask
        return None

    # -- answering ---------------------------------------------------------------------

    async def answer(self, request: web.Request) -> web.Response:
        posted = request[FORM]
        back = safe_back(posted.get("back"))
        ask = await self._find(request)
        if ask is None:
            flash = Flash(False, "Not answered: there is no such ask.")
        elif needs_confirming(ask, posted):  # destructive: the confirm step first (no script)
            return self._confirm_page(request, ask, posted, back)
        else:
            flash, now = await self._answer(request, ask, posted)
            if not flash.ok and flash.reason not in NO_RETYPE and now.status == vocabulary.OPEN:
                return await self._refused_page(request, now, posted, flash)
        if flash.reason == SIGN_IN_REQUIRED:  # step-up: sign in again, and back to the ask
            again = _url(LOGIN, {"next": f"/inbox/{refs.ref(ask) if ask else ''}", "again": "1"})
            return web.Response(status=303, headers={"Location": again})
        response = web.Response(status=303, headers={"Location": back})
        response.set_cookie(FLASH_COOKIE, self.flashes.sign(flash), max_age=FLASH_S, path="/",
                            httponly=True, samesite="Strict", secure=self.sessions.secure)
        return response

    async def _answer(self, request: web.Request, ask: AskRow, posted: Any) -> tuple[Flash, AskRow]:
        """The outcome in words, and the ask as it now stands."""
        ref = refs.ref(ask)
        note = posted.get("note", "").strip() or None
        if note is not None and len(note) > MAX_NOTE:
            words = f"Not answered: the note must be at most {MAX_NOTE} characters."
            return Flash(False, words, ref), ask
        control = cards.APPROVAL_CONTROL if ask.kind == vocabulary.APPROVAL else formats.format_of(ask)
        given = fields.given(control, posted, ask.form_schema)
        session = request.get(SESSION)
        who = _person(request) or OPERATOR
        attempt = Attempt(who, "web",
                          signed_in_at=session.signed_in_at if session is not None else None)
        result = await self.asks.answer(ask, attempt, given, note)
        return Flash(result.taken, outcome(result, ask), ref, result.reason), result.ask or ask

    async def _refused_page(self, request: web.Request, ask: AskRow, posted: Any,
                            flash: Flash) -> web.Response:
        """An answer refused while its ask stays open: the ask's page again at once (no
        redirect, which would lose them), with the reason and what was typed kept."""
        now = self.asks.clock.now()
        card = cards.card(ask, now, whole_input=True)
        card.typed = typed(ask, posted)
        card.history = history.entries(await self.asks.history(ask.seq or 0), now,
                                       ask.kind == vocabulary.APPROVAL)
        page_url = f"/inbox/{card.ref}"
        context = {
            "heading": cards.heading(ask), "open_count": await self._open_count(request),
            "card": card, "page_url": page_url, "fragment_url": _fragment(page_url),
            "flash": flash,
        }
        return self.render(request, "detail.html", context, status=422)

    def _confirm_page(self, request: web.Request, ask: AskRow, posted: Any,
                      back: str) -> web.Response:
        """A destructive ask's affirmative answer, sent without the page's script: the same
        answer again with `confirmed`, or Cancel back to where it came from."""
        fields_ = [(k, v) for k, v in posted.items() if k not in ("csrf", "confirmed")]
        context = {"ref": refs.ref(ask), "heading": cards.heading(ask), "back": back,
                   "fields": fields_, "chosen": chosen_words(ask, posted)}
        return self.render(request, "confirm.html", context)

    # -- the sign-in page ----------------------------------------------------------------

    def _sign_in_page(self, request: web.Request, following: str, problem: str | None,
                      status: int = 200) -> web.Response:
        """/login: the operator token's form, and a button per person's sign-in set up."""
        offers = request.app[SIGN_INS].offers(following)
        session = request.get(SESSION)
        context = {"next": following, "problem": problem, "offers": offers,
                   "signed_in_as": session.identity if session else None}
        return self.render(request, "login.html", context, status=status)


def needs_confirming(ask: AskRow, posted: Any) -> bool:
    """A destructive ask's affirmative answer not yet confirmed: anything but Refuse and No."""
    if not ask.danger or posted.get("confirmed") == "1":
        return False
    given = posted.get("answer", "")
    if ask.kind == vocabulary.APPROVAL:
        return bool(given != "refuse")
    return not (formats.format_of(ask) == formats.CONFIRM and given == "no")


def typed(ask: AskRow, posted: Any) -> dict[str, list[str]]:
    """What a refused form held, by input name, to show it again as typed (the templates
    escape it); a sensitive ask's answer is never written back into a page, only its note."""
    kept = {name: posted.getall(name) for name in posted if name not in KEPT_OUT}
    return {"note": kept.get("note", [])} if ask.sensitive else kept


def chosen_words(ask: AskRow, posted: Any) -> str:
    """The answer about to be sent, as the confirm page names it."""
    given = str(posted.get("answer", ""))
    if ask.kind == vocabulary.APPROVAL:
        return "Approve"
    options = list(ask.options or [])
    if given.isdigit() and 1 <= int(given) <= len(options):
        return visible(options[int(given) - 1])
    return {"yes": "Yes", "continue": "Continue"}.get(given, "the answer you gave")


def outcome(result: AnswerResult, ask: AskRow) -> str:
    """What the operator reads after answering: taken with its value, or why not."""
    if result.taken:
        return cards.answered_words(result.ask or ask)
    if is_external(ask) and result.reason == NOT_A_RESPONDER:
        return (f"Not answered: only {ask.verifier}, an outside system, answers this ask, "
                "through its signed door.")
    misfit = result.misfit
    if misfit is not None:
        return f"Not answered: {misfit.message if misfit.label else 'the answer ' + misfit.words}."
    reason = result.reason or "closed"
    return f"Not answered: {vocabulary.REASONS.get(reason, reason)}."


def _shown_identity(session: Any) -> str | None:
    """Who the page says is signed in: the person's identity, or "the operator"."""
    if session is None:
        return None
    return "the operator" if session.method == BY_TOKEN else str(session.identity)


def _person(request: web.Request) -> Responder | None:
    """The person signed in (their identity), or None for the operator token's session."""
    session = request.get(SESSION)
    if session is None or session.method == BY_TOKEN:
        return None
    return Responder.parse(session.identity)


def _url(path: str, query: dict[str, str]) -> str:
    return f"{path}?{urlencode(query)}" if query else path


def _fragment(page_url: str) -> str:
    return page_url + ("&" if "?" in page_url else "?") + "fragment=1"
