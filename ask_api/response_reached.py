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
    """Write `response` now, to the last byte; True when its last byte was handed to the
    operating system on a connection that was still open then (see end_whole)."""
    # A close the client sent before now is read by the loop's next turn or two (its poll runs
    # after the task that was ready): let them run before anything goes out. Not after: a client
    # that has read the whole response may close at once (curl, HTTP/1.0, `Connection: close`),
    # and a close read then says nothing about the bytes it had already read.
    for _ in range(2):
        await asyncio.sleep(0)
    if gone(request):
        return False
    try:
        await response.prepare(request)
    except ConnectionError:
        return False
    return await end_whole(request, response)


async def end_whole(request: web.Request, response: web.StreamResponse) -> bool:
    """End `response` (prepared, perhaps partly written): True when its last byte was handed to
    the operating system on a connection still open at that moment, whatever the client does
    after; False when the connection was gone (or going) before.

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
    # Looked at with no turn of the loop in between: write_eof() returned in the turn that
    # wrote (the kernel took every byte at once), or it waited, and then resumes at the turn
    # after the one whose write emptied the buffer, before that turn reads any socket. Either
    # way a close seen here was read before the last byte went (a send that failed, a close
    # read in the same turn before the write), never one the client sent after reading it.
    return not gone(request)
