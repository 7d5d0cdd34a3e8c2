"""Whether a tool's result reached the MCP client: a read of an ask through a tool (`wait`,
`ask`) counts, and a sensitive answer is erased, only once the JSON-RPC result carrying it was
written in full to the connection of its request while that was still open.

The SDK sends the result itself, on the HTTP response of the request that called the tool (an
SSE event, or a JSON body), and says nothing of how that went. The bridge (ask_api/mcp/asgi.py)
sees each chunk it writes and how the response ended; here a read waits on that: `carries`
picks out this request's own result (not an error result, not a progress notification), and
the read is settled once the response has ended. A client that gave up before the result went
out leaves the value for its next read, by any route.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ask_api.mcp.asgi import Sent
from core.app.service import Read

# Reads being recorded after their result went out (kept from the collector until done).
_settling: set[asyncio.Task[None]] = set()


def carries(chunk: bytes, request_id: Any) -> bool:
    """Whether `chunk` (one SSE event, or a whole JSON body) is the successful result of the
    JSON-RPC request `request_id`."""
    text = chunk.decode("utf-8", "replace")
    data = [line[5:].removeprefix(" ") for line in text.splitlines() if line.startswith("data:")]
    try:
        message = json.loads("\n".join(data) if data else text)
    except ValueError:
        return False
    if not isinstance(message, dict) or str(message.get("id")) != str(request_id):
        return False
    result = message.get("result")
    return isinstance(result, dict) and not result.get("isError")


class AfterSent:
    """Settles the reads of one tool call once its result has (or has not) reached the client."""

    def __init__(self, sent: Sent | None, request_id: Any) -> None:
        self.sent, self.request_id = sent, request_id

    def settle(self, read: Read) -> None:
        if self.sent is None or self.request_id is None:
            read.lost()  # no way to know it reached the client: it did not, as far as aye knows
            return

        def told(reached: bool) -> None:
            if not reached:
                read.lost()
                return
            task = asyncio.get_running_loop().create_task(read.delivered())
            _settling.add(task)
            task.add_done_callback(_settling.discard)

        self.sent.when(lambda chunk: carries(chunk, self.request_id), told)
