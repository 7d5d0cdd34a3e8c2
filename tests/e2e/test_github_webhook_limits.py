"""The webhook's own limits: an unsigned delivery is refused before its body is read, a body
over GitHub's 25 MB is 413 naming that limit, and bodies are read a few at a time."""

from __future__ import annotations

import asyncio
import json

from tests.e2e.test_github_e2e import SECRET, Hub, hub
from tests.fake_github import deliver

__all__ = ["hub"]  # a fixture, used by name below

MB = 1024 * 1024


async def test_an_unsigned_delivery_is_refused_before_its_body_is_read(hub: Hub) -> None:
    """The headers promise 20 MB that never come: the answer comes anyway, at once."""
    url = hub.aye.client.make_url("/github/webhook")
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(
        b"POST /github/webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: issue_comment\r\n"
        b"X-GitHub-Delivery: d-1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {20 * MB}\r\n\r\n".encode() + b"{" * 1000
    )
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 5)
    writer.close()
    assert status_line.split()[1] == b"401"


async def test_a_body_over_25_mb_is_413_naming_the_webhook_limit(hub: Hub) -> None:
    url = str(hub.aye.client.make_url("/github/webhook"))
    sent = await deliver(hub.aye.client.session, url, "issue_comment", b"{" + b" " * (26 * MB), SECRET)
    assert sent.status == 413
    assert json.loads(sent.text) == {"error": "body_too_large",
                                     "message": "the body is over GitHub's 25 MB webhook limit"}


async def test_many_large_forged_bodies_at_once_are_each_refused(hub: Hub) -> None:
    url = str(hub.aye.client.make_url("/github/webhook"))
    sends = [
        deliver(hub.aye.client.session, url, "issue_comment", b"{" + b" " * (3 * MB), SECRET,
                signature="sha256=" + "0" * 64)
        for _ in range(12)
    ]
    results = await asyncio.gather(*sends)
    assert [r.status for r in results] == [401] * 12
    assert (await hub.aye.client.get("/healthz")).status == 200
