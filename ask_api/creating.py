"""What an agent's new question is, read the same way whichever way it came (POST /v1/asks,
or MCP's ask tool in-process): NewAsk for the core, or the API's error. Whether it is one aye
can take is the domain's (core/domain/new_ask.py); here its refusals become the API's."""

from __future__ import annotations

from typing import Any

from ask_api.http import ApiError, callback_refused
from ask_api.schemas import AskBodyBase, parse_time
from core.app.ports import AskRow
from core.app.service import Service
from core.domain.new_ask import FormatProblem, check_format, check_times
from core.domain.types import AgentInfo, CallbackRefused, KeyReused, NewAsk, NoReachableResponder


def new_ask(agent: AgentInfo, body: AskBodyBase, raw: dict[str, Any], now: float) -> NewAsk:
    """The question this body asks (for POST /v1/asks and MCP's ask tool alike): its deadline
    in the future and within a year, a callback only where the operator allowed this agent's,
    its format going with its options, schema and bounds; ApiError otherwise."""
    deadline = parse_time(body.deadline) if body.deadline is not None else None
    try:
        check_times(deadline, body.timeout_s, now)
        agent.check_callback(body.callback_url)
        fmt = check_format(body)
    except FormatProblem as problem:
        raise ApiError(422, "invalid_field", str(problem), problem.field) from None
    except CallbackRefused as refused:
        raise callback_refused(refused) from None
    return NewAsk(
        question=body.question, options=body.options, context=body.context,
        deadline=deadline, timeout_s=body.timeout_s,
        work=body.work.as_dict() if body.work else None, key=body.key,
        sensitive=body.sensitive, danger=body.danger, body=raw, format=fmt, form_schema=body.form_schema,
        pick_min=body.min, pick_max=body.max,
        media=[m.model_dump(exclude_none=True) for m in body.media] if body.media else None,
        callback_url=body.callback_url, verifier=body.verifier,
    )


async def create(service: Service, agent: AgentInfo, new: NewAsk) -> tuple[AskRow, bool]:
    """The core's create_question, its refusals as the API's errors: (the ask, whether it is
    new) or ApiError (409 key_reused, 422 no_reachable_responder)."""
    try:
        return await service.create_question(agent, new)
    except KeyReused:
        raise ApiError(
            409, "key_reused", "this key was used before with a different body", "key"
        ) from None
    except NoReachableResponder:
        raise ApiError(
            422, "no_reachable_responder",
            "none of this question's responders can be reached on a running surface",
        ) from None
