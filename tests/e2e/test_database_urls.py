"""AYE_DATABASE_URL in every form the contract names works (`postgresql://…` as every PostgreSQL
user types it, `postgres://…`, `sqlite:///…`), for `aye serve` and `aye migrate` as real
processes; anything else is exit 2 with one line naming those forms, never a traceback, never
the URL's password. The forms as read, without a process, are
tests/unit/test_database_url_forms.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import postgres_url
from tests.e2e.test_process import AGENT, Api, Server, base_env, servers, start_server
from tests.unit.test_database_url_forms import BAD, FORMS

__all__ = ["servers"]  # a fixture, used by name below


def run(tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = base_env(tmp, url, AYE_PORT="0", AYE_OPERATOR_TOKEN="op-url-token",
                   AYE_AGENT_TOKEN="agent-url-token")
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def names_the_forms(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("aye: AYE_DATABASE_URL: "), lines
    assert all(form in lines[0] for form in FORMS), lines
    assert "pa55word" not in done.stderr + done.stdout


@pytest.fixture
async def pg(pg_session_url: str | None) -> str:
    """The test PostgreSQL database, emptied, as `postgresql+asyncpg://…`."""
    url = await postgres_url(pg_session_url)
    assert url.startswith("postgresql+asyncpg://")
    return url


def typed(url: str, scheme: str) -> str:
    return scheme + "://" + url.partition("://")[2]


# -- aye serve and aye migrate --------------------------------------------------------------------


# libpq's sslmode and SQLAlchemy's ssl, as people write them (the test server has no TLS).
@pytest.mark.parametrize(("scheme", "query"), [("postgresql", "?sslmode=prefer"),
                                               ("postgres", "?ssl=prefer"), ("postgres", "")])
async def test_migrate_and_serve_take_postgresqls_own_url(
    tmp_path: Path, pg: str, scheme: str, query: str, servers: list[Server]
) -> None:
    url = typed(pg, scheme) + query
    migrated = run(tmp_path, url, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert "postgresql+asyncpg://" in migrated.stdout and "(head)" in migrated.stdout
    server = await start_server(tmp_path, url)
    servers.append(server)
    assert "store postgresql+asyncpg://" in server.output()
    # Both connections work: the store's and the listener's (LISTEN/NOTIFY, asyncpg's own DSN).
    async with aiohttp.ClientSession() as session:
        api = Api(session, server.url)
        assert (await api.call("POST", "/v1/asks", token=AGENT, json={"question": "Up?"}))[0] == 201
        status, health = await api.call("GET", "/healthz")
        assert status == 200 and health["store"] == "ok"
    assert "cannot listen for store notifications" not in server.output()


async def test_migrate_and_serve_take_sqlites_short_url(tmp_path: Path, servers: list[Server]) -> None:
    migrated = run(tmp_path, "sqlite:///./short.db", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert (tmp_path / "short.db").exists()
    server = await start_server(tmp_path, "sqlite:///./short.db")
    servers.append(server)
    assert "store sqlite+aiosqlite:///./short.db" in server.output()


@pytest.mark.parametrize("command", ["serve", "migrate"])
@pytest.mark.parametrize("url", BAD)
def test_serve_and_migrate_refuse_anything_else_in_one_line(
    tmp_path: Path, command: str, url: str
) -> None:
    names_the_forms(run(tmp_path, url, command))


@pytest.mark.parametrize("command", [["asks"], ["mcp"]])
def test_the_clients_reading_the_token_file_refuse_it_too(tmp_path: Path, command: list[str]) -> None:
    # With no token in the environment the clients look for the token file beside the store.
    env = {k: v for k, v in base_env(tmp_path, "notaurl").items()
           if k not in ("AYE_OPERATOR_TOKEN", "AYE_AGENT_TOKEN")}
    done = subprocess.run([sys.executable, "-m", "bot", *command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    names_the_forms(done)
