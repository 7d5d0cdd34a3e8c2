"""A key twice in one object of a `/mcp` request (contract: Duplicate keys).

The MCP SDK parses the JSON-RPC body itself (pydantic keeps the last of `{"a": "x", "a": "y"}`),
so aye looks at the raw body before handing it on: a `tools/call` holding a key twice gets an
error result `malformed_body: …` from its tool (ask_api/mcp/http.py), any other request a 400,
as a JSON-RPC parse error; nothing is asked either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.domain.bodies import STRICT, DuplicateKey

TOOL_CALL = "tools/call"


@dataclass(frozen=True, slots=True)
class Duplicated:
    """What a request body holds twice: `key`, and the id of the tool call it was in (None when
    it is no tool call, or has no id)."""

    key: DuplicateKey
    call: int | str | None


def duplicated(body: bytes) -> Duplicated | None:
    """The key a JSON body holds twice, in which tool call; None when it holds none (or is no
    JSON at all: the SDK says so). One strict parse on the way of every request; the body is
    read again, as the SDK reads it, only when a key was found twice."""
    try:
        text = body.decode("utf-8", "surrogatepass")
        STRICT.decode(text)
    except DuplicateKey as exc:
        return Duplicated(exc, _call_id(text))
    except (ValueError, RecursionError):
        return None
    return None


def _call_id(text: str) -> int | str | None:
    message = json.loads(text)  # the last of each key wins, as in the SDK
    if not isinstance(message, dict) or message.get("method") != TOOL_CALL:
        return None
    ident = message.get("id")
    return ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None


def error_body(key: DuplicateKey) -> dict[str, Any]:
    """The JSON-RPC parse error for a request that is no tool call."""
    return {"jsonrpc": "2.0", "id": None,
            "error": {"code": -32700, "message": f"malformed_body: {key}: a key may appear only once"}}

