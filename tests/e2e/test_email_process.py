"""Email from a real `aye serve`: the start-up line, exit 2 without an https:// AYE_PUBLIC_URL,
and exactly one mail across a kill -9 between the send and its record (on both stores)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from tests.conftest import eventually
from tests.e2e.test_process import OP, Api, Server, base_env, servers, session, start_server, stop
from tests.e2e.test_process import store_url as store_url
from tests.smtp_server import email_env, smtp_server

__all__ = ["servers", "session"]  # fixtures, used by name
ADA = "ada@example.com"


def serve(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = base_env(tmp, f"sqlite+aiosqlite:///{tmp}/aye.db", AYE_PORT="0", **env)
    return subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp, env=full,
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(("public", "said"), [
    ("", "email needs AYE_PUBLIC_URL, an https:// URL"),
    ("http://aye.example.test", "(it is 'http://aye.example.test')"),
    # Plain http:// only on a loopback host: not on a private address, not on a name that
    # merely starts like one.
    ("http://192.168.1.20:8080", "(it is 'http://192.168.1.20:8080')"),
    ("http://localhost.example.test", "http:// only on a loopback host"),
])
def test_email_without_an_https_public_url_is_exit_2(tmp_path: Path, public: str, said: str) -> None:
    done = serve(tmp_path, AYE_SMTP_URL="smtp://127.0.0.1:2525", AYE_MAIL_FROM="aye@example.test",
                 AYE_PUBLIC_URL=public)
    assert done.returncode == 2 and said in done.stderr


def test_a_password_over_plain_smtp_is_exit_2_without_showing_it(tmp_path: Path) -> None:
    done = serve(tmp_path, AYE_SMTP_URL="smtp://aye:hunter2-secret@127.0.0.1:25",
                 AYE_MAIL_FROM="aye@example.test", AYE_PUBLIC_URL="https://aye.example.test")
    assert done.returncode == 2 and "smtp+starttls://" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


async def outbox_claimed(url: str) -> bool:
    """Whether the email row of the outbox is claimed by a process now (read as another
    client of the store)."""
    query = "SELECT count(*) FROM outbox WHERE surface = 'email' AND claimed_until IS NOT NULL"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.split("///", 1)[1]) as conn:
            return bool(conn.execute(query).fetchone()[0])
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return bool(await conn.fetchval(query))
    finally:
        await conn.close()


async def test_one_mail_across_a_kill_9_between_the_send_and_its_record(
    tmp_path: Path, store_url: str, servers: list[Server], session: aiohttp.ClientSession
) -> None:
    (tmp_path / "aye.toml").write_text(f'[defaults]\nresponders = ["email:{ADA}"]\n')
    async with smtp_server() as smtp:
        env = email_env(smtp, smtp.url(query="timeout=1"))
        first = await start_server(tmp_path, store_url, "first", None, **env)
        servers.append(first)
        smtp.mailbox.hold = asyncio.Event()  # the server takes the whole mail, then waits
        status, ask = await Api(session, first.url).call(
            "POST", "/v1/asks", json={"question": "Ship?", "options": ["yes", "no"]})
        assert status == 201

        async def sent_and_unclaimed() -> bool:  # aye sent it all and handed the row back
            return smtp.mailbox.datas == 1 and not await outbox_claimed(store_url)

        await eventually(sent_and_unclaimed, timeout=10)
        stop(first, signal.SIGKILL)  # before aye could hear the 250 and record the mail sent
        smtp.mailbox.hold.set()
        smtp.mailbox.hold = None
        await eventually(lambda: _count(smtp.mailbox.received, 1))
        again = await start_server(tmp_path, store_url, "again", None, **env)
        servers.append(again)
        api = Api(session, again.url)

        async def recorded() -> bool:
            _, view = await api.call("GET", f"/v1/asks/{ask['id']}", token=OP)
            return any(e["event"] == "posted" for e in view["history"])

        await eventually(recorded, timeout=20)
        _, view = await api.call("GET", f"/v1/asks/{ask['id']}", token=OP)
    received = smtp.mailbox.received
    # Sent again as the same message: one mail to its reader, whose links are the same.
    assert len(received) == 2 and smtp.mailbox.datas == 2
    assert received[0].message["Message-ID"] == received[1].message["Message-ID"]
    assert received[0].part("html") == received[1].part("html")
    assert [e["where"] for e in view["history"] if e["event"] == "posted"] == [f"a mail to {ADA}"]
    async with session.get(again.url + _path(received[0].part("plain"))) as resp:
        assert resp.status == 200 and "Ship?" in await resp.text()


async def _count(found: list[Any], count: int) -> bool:
    return len(found) >= count


def _path(text: str) -> str:
    start = text.index("https://aye.example.test/e/") + len("https://aye.example.test")
    return text[start:].split()[0]


@pytest.mark.parametrize("public", ["http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"])
async def test_email_tried_on_one_machine_with_an_http_loopback_public_url(
    tmp_path: Path, store_url: str, servers: list[Server], session: aiohttp.ClientSession,
    public: str
) -> None:
    """http:// AYE_PUBLIC_URL on a loopback host starts, says so in a warning line, mails links
    to it that open; and a first send that succeeds logs no warning."""
    (tmp_path / "aye.toml").write_text(f'[defaults]\nresponders = ["email:{ADA}"]\n')
    async with smtp_server() as smtp:
        server = await start_server(tmp_path, store_url, "aye", None,
                                    **{**email_env(smtp), "AYE_PUBLIC_URL": public})
        servers.append(server)
        started = server.output()
        assert f"links to {public}/e/…" in started
        assert "aye: warning: AYE_PUBLIC_URL is http:// on a loopback host" in started
        api = Api(session, server.url)
        status, ask = await api.call("POST", "/v1/asks",
                                     json={"question": "Ship?", "options": ["yes", "no"]})
        assert status == 201

        async def posted() -> bool:
            _, view = await api.call("GET", f"/v1/asks/{ask['id']}", token=OP)
            return any(e["event"] == "posted" for e in view["history"])

        await eventually(posted, timeout=10)
    text = smtp.mailbox.received[0].part("plain")
    link = next(word for word in text.split() if word.startswith(f"{public}/e/"))
    async with session.get(server.url + link.removeprefix(public)) as resp:
        assert resp.status == 200 and "Ship?" in await resp.text()
    logged = server.output()
    assert "outbox.retry" not in logged and "warning" not in logged.replace(started, "")
