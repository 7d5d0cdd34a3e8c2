"""What an agent's new question is, checked the same way whichever way it came (POST /v1/asks,
or MCP's ask tool in-process): NewAsk for the core, or the API's error."""

from __future__ import annotations

from typing import Any

from ask_api.http import ApiError
from ask_api.schemas import AskBodyBase, FormatProblem, check_format, parse_time
from core.app.asks import Asks
from core.domain.policy import MAX_TIMEOUT_S
from core.domain.types import AgentInfo, KeyReused, NewAsk, NoReachableResponder
from store.models import AskRow


def new_ask(agent: AgentInfo, body: AskBodyBase, raw: dict[str, Any], now: float) -> NewAsk:
    """The question this body asks (for POST /v1/asks and MCP's ask tool alike): its deadline
    in the future and within a year, a callback only where the operator allowed this agent's,
    its format going with its options, schema and bounds; ApiError otherwise."""
    deadline = None
    if body.deadline is not None:
        deadline = parse_time(body.deadline)
        if deadline <= now:
            raise ApiError(422, "invalid_field", "deadline: must be in the future", "deadline")
        if deadline > now + MAX_TIMEOUT_S:
            raise ApiError(422, "invalid_field", "deadline: at most 8760h ahead", "deadline")
    if body.timeout_s is not None and not 0 < body.timeout_s <= MAX_TIMEOUT_S:
        raise ApiError(
            422, "invalid_field", "timeout_s: must be 1 to 31536000 seconds", "timeout_s"
        )
    may_call_back(agent, body.callback_url)
    try:
        fmt = check_format(body)
    except FormatProblem as problem:
        raise ApiError(422, "invalid_field", str(problem), problem.field) from None
    return NewAsk(
        question=body.question, options=body.options, context=body.context,
        deadline=deadline, timeout_s=body.timeout_s,
        work=body.work.as_dict() if body.work else None, key=body.key,
        sensitive=body.sensitive, body=raw, format=fmt, form_schema=body.form_schema,
        pick_min=body.min, pick_max=body.max,
        media=[m.model_dump(exclude_none=True) for m in body.media] if body.media else None,
        callback_url=body.callback_url, verifier=body.verifier,
    )


async def create(asks: Asks, agent: AgentInfo, new: NewAsk) -> tuple[AskRow, bool]:
    """The core's create_question, its refusals as the API's errors: (the ask, whether it is
    new) or ApiError (409 key_reused, 422 no_reachable_responder)."""
    try:
        return await asks.create_question(agent, new)
    except KeyReused:
        raise ApiError(
            409, "key_reused", "this key was used before with a different body", "key"
        ) from None
    except NoReachableResponder:
        raise ApiError(
            422, "no_reachable_responder",
            "none of this question's responders can be reached on a running surface",
        ) from None


def may_call_back(agent: AgentInfo, url: str | None) -> None:
    """A callback goes only where the operator allowed this agent's (its scheme, host and
    port, under a prefix's path: core/domain/callback_urls.py), signed: 422 naming callback_url
    otherwise."""
    why = None if url is None else agent.callback_refusal(url)
    if why is not None:
        raise ApiError(422, "invalid_field", f"callback_url: {why}", "callback_url")
