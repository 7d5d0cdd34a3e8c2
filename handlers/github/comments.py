"""`issue_comment` events: an `/answer` comment on an issue or pull request answers its ask."""

from __future__ import annotations

from typing import Any

from gidgethub import routing, sansio

from .answer_desk import AnswerDesk
from .facts import comment_said

router = routing.Router()


# Only `created`: an edited or deleted comment answers nothing (the first word stands).
@router.register("issue_comment", action="created")
async def answer_by_comment(event: sansio.Event, desk: AnswerDesk, *args: Any, **kwargs: Any) -> None:
    await desk.handle(comment_said(event.data), event.delivery_id, react=True)
