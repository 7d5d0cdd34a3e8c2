"""`pull_request_review` events: a submitted review whose body starts with `/answer` answers."""

from __future__ import annotations

from typing import Any

from gidgethub import routing, sansio

from .answer_desk import AnswerDesk
from .facts import review_said

router = routing.Router()


@router.register("pull_request_review", action="submitted")
async def answer_by_review(event: sansio.Event, desk: AnswerDesk, *args: Any, **kwargs: Any) -> None:
    # Reviews take no reactions through the REST API: the outcome is in the ask's history.
    await desk.handle(review_said(event.data), event.delivery_id, react=False)
