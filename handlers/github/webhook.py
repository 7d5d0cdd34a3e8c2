"""`POST /github/webhook`: verify, dedupe and dispatch GitHub's deliveries, and answer fast."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gidgethub
from aiohttp import web
from gidgethub import routing, sansio

from bot.core.logs import emit

from . import comments, reviews
from .answering import AnswerDesk
from .events import MalformedPayload

log = logging.getLogger("aye.github")

WEBHOOK_PATH = "/github/webhook"
# The SHA-1 signature GitHub still sends beside the SHA-256 one; gidgethub falls back to it
# when X-Hub-Signature-256 is absent. The contract is SHA-256 only, so it is dropped.
LEGACY_SIGNATURE = "x-hub-signature"

router = routing.Router(comments.router, reviews.router)


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

    def routes(self) -> list[web.RouteDef]:
        return [web.post(WEBHOOK_PATH, self.receive)]

    async def receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() != LEGACY_SIGNATURE}
        try:
            # Always with the secret: without it gidgethub accepts an unsigned request.
            event = sansio.Event.from_http(headers, body, secret=self.secret)
        except gidgethub.ValidationFailure:
            self.stats.refused += 1
            emit(log, "github.bad_signature", level=logging.WARNING,
                 delivery=headers.get("x-github-delivery"))
            return error(401, "bad_signature", "the X-Hub-Signature-256 signature is missing or wrong")
        except (KeyError, gidgethub.BadRequest):
            # KeyError: gidgethub's way of saying X-GitHub-Event or X-GitHub-Delivery is missing.
            return error(400, "malformed", "not a GitHub webhook delivery (headers or JSON body)")
        if not isinstance(event.data, dict):
            return error(400, "malformed", "the body is not a JSON object")
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
            # The store is down, most likely. GitHub shows the status on the delivery, and the
            # delivery id is not taken if the failure came before it was recorded. The class
            # alone is logged: the text may carry data.
            emit(log, "github.delivery_failed", level=logging.ERROR, delivery=event.delivery_id,
                 error=exc.__class__.__name__)
            return error(500, "internal", "the delivery could not be handled; redeliver it later")
        return web.json_response({"ok": True})
