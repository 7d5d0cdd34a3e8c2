"""`POST /github/webhook`: verify and dispatch GitHub's deliveries (each comment or review acts
once: handlers.github.answer_desk), and answer fast."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import gidgethub
from aiohttp import web
from gidgethub import routing, sansio

from core.domain.bodies import encoding_problem
from core.domain.logline import emit

from . import comments, reviews
from .answer_desk import AnswerDesk
from .facts import MalformedPayload

log = logging.getLogger("aye.github")

WEBHOOK_PATH = "/github/webhook"
# The SHA-1 signature GitHub still sends beside the SHA-256 one; gidgethub falls back to it
# when X-Hub-Signature-256 is absent. The contract is SHA-256 only, so it is dropped.
LEGACY_SIGNATURE = "x-hub-signature"

router = routing.Router(comments.router, reviews.router)
# GitHub's delivery ids are GUIDs; the store keeps ids of up to 100 characters.
MAX_DELIVERY_ID = 100
# GitHub caps webhook payloads at 25 MB. A body must be read whole before its signature can be
# checked, so at most this many are read at once: unsigned floods cannot fill the memory.
MAX_BODY = 25 * 1024 * 1024
READING_AT_ONCE = 4
SIGNATURE = "x-hub-signature-256"


class TooLarge(Exception):
    pass


@dataclass
class WebhookStats:
    deliveries: int = 0
    refused: int = 0


def error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status)


class Webhook:
    def __init__(self, secret: str, desk: AnswerDesk) -> None:
        if not secret:
            raise ValueError("the GitHub webhook needs a secret: unsigned deliveries are refused")
        self.secret = secret
        self.desk = desk
        self.stats = WebhookStats()
        self._reading = asyncio.Semaphore(READING_AT_ONCE)

    def routes(self) -> list[web.RouteDef]:
        return [web.post(WEBHOOK_PATH, self.receive)]

    async def _read(self, request: web.Request) -> bytes:
        """The body, at most MAX_BODY, with at most READING_AT_ONCE bodies in memory at once."""
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise TooLarge
        async with self._reading:
            chunks, size = [], 0
            async for chunk in request.content.iter_chunked(65536):
                size += len(chunk)
                if size > MAX_BODY:
                    raise TooLarge
                chunks.append(chunk)
        return b"".join(chunks)

    def _bad_signature(self, headers: dict[str, str]) -> web.Response:
        self.stats.refused += 1
        emit(log, "github.bad_signature", level=logging.WARNING,
             delivery=headers.get("x-github-delivery"))
        return error(401, "bad_signature", "the X-Hub-Signature-256 signature is missing or wrong")

    async def receive(self, request: web.Request) -> web.Response:
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() != LEGACY_SIGNATURE}
        if SIGNATURE not in headers:
            # Unsigned: refused before a byte of the body is read.
            return self._bad_signature(headers)
        try:
            body = await self._read(request)
        except TooLarge:
            return error(413, "body_too_large", "the body is over GitHub's 25 MB webhook limit")
        event: sansio.Event | None = None
        try:
            # Always with the secret: without it gidgethub accepts an unsigned request.
            event = sansio.Event.from_http(headers, body, secret=self.secret)
        except gidgethub.ValidationFailure:
            return self._bad_signature(headers)
        except (LookupError, RecursionError, gidgethub.BadRequest):
            # Signed (gidgethub checks the signature first). KeyError: gidgethub's way of saying
            # X-GitHub-Event or X-GitHub-Delivery is missing; LookupError: an unknown charset;
            # RecursionError: JSON nested too deep to decode.
            pass
        unreadable = encoding_problem(body)
        if unreadable is not None:
            # gidgethub decodes by the charset the sender names (UTF-16 too): aye reads UTF-8.
            return error(400, "malformed_body", unreadable)
        if event is None:
            return error(400, "malformed", "not a GitHub webhook delivery (headers or JSON body)")
        refused = _malformed(event)
        if refused is not None:
            return error(400, "malformed", refused)
        self.stats.deliveries += 1
        if event.event == "ping":
            emit(log, "github.ping", delivery=event.delivery_id, hook=event.data.get("hook_id"))
            return web.json_response({"ok": True, "event": "ping"})
        try:
            await router.dispatch(event, self.desk)
        except MalformedPayload as exc:
            emit(log, "github.malformed", level=logging.WARNING, delivery=event.delivery_id,
                 kind=event.event, why=str(exc))
            return error(400, "malformed", "the payload lacks what this event always carries")
        except Exception as exc:
            # The store is down, most likely. GitHub shows the status on the delivery; nothing
            # of it was kept (a comment is recorded in its answer's own transaction), so
            # redelivering it acts. The class alone is logged: the text may carry data.
            emit(log, "github.delivery_failed", level=logging.ERROR, delivery=event.delivery_id,
                 error=exc.__class__.__name__)
            return error(500, "internal", "the delivery could not be handled; redeliver it later")
        return web.json_response({"ok": True})


def _malformed(event: sansio.Event) -> str | None:
    """Why a signed delivery cannot be handled, or None."""
    if not isinstance(event.data, dict):
        return "the body is not a JSON object"
    if len(event.delivery_id) > MAX_DELIVERY_ID:
        return f"X-GitHub-Delivery is longer than {MAX_DELIVERY_ID} characters"
    action = event.data.get("action")
    if action is not None and not isinstance(action, str):
        # gidgethub's router looks the action up in a dict: a list there would raise.
        return "action is not a string"
    return None
