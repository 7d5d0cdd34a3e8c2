"""`issue_comment` events: an `/answer` comment on an issue or pull request answers its ask."""

from __future__ import annotations

from typing import Any

from gidgethub import routing, sansio

from .answering import AnswerDesk
from .events import comment_said
from .parsing import parse_command

router = routing.Router()


# Only `created`: an edited or deleted comment answers nothing (the first word stands).
@router.register("issue_comment", action="created")
async def answer_by_comment(event: sansio.Event, desk: AnswerDesk, *args: Any, **kwargs: Any) -> None:
    said = comment_said(event.data)
    command = parse_command(said.body)
    if command is None or said.by_bot:
        return
    if await desk.first_time(event.delivery_id):
        await desk.answer(said, command, event.delivery_id, react=True)
