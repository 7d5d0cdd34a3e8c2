"""Whether a response reached its client: written in full to a connection that was still open.

aiohttp does not cancel a handler whose client has gone (aye serves without handler
cancellation), and a write to a connection the client closed does not fail either when the
close is still unread in the socket. A route whose response counts as the agent's read (a
sensitive answer is then erased) sends it itself, here, and asks how it went.
"""

from __future__ import annotations

import asyncio

from aiohttp import web


def gone(request: web.Request) -> bool:
    """The client's connection is closed, or closing."""
    transport = request.transport
    return transport is None or transport.is_closing()


async def send_whole(request: web.Request, response: web.StreamResponse) -> bool:
    """Write `response` now, to the last byte; True when every byte was handed to the
    operating system on a connection that was still open before and after (see end_whole)."""
    if gone(request):
        return False
    try:
        await response.prepare(request)
    except ConnectionError:
        return False
    return await end_whole(request, response)


async def end_whole(request: web.Request, response: web.StreamResponse) -> bool:
    """End `response` (prepared, perhaps partly written): True when every byte of it was handed
    to the operating system on a connection still open before and after.

    Beyond that nothing at the HTTP level can say more: a client that dies in the instant after
    its kernel took the bytes loses them."""
    transport = request.transport
    if transport is None or transport.is_closing():
        return False
    # With no room in asyncio's own buffer, write_eof() waits until the kernel has taken every
    # byte (or the connection is lost), not merely until the bytes are queued in this process.
    transport.set_write_buffer_limits(high=0)
    try:
        await response.write_eof()
    except ConnectionError:
        return False
    finally:
        if not transport.is_closing():
            transport.set_write_buffer_limits()
    # A close the client sent before the last write is read by the loop's next turn or two
    # (its poll runs after the task that was ready): let it run, then look.
    for _ in range(2):
        await asyncio.sleep(0)
    return not gone(request)
