"""AYE_DATABASE_URL in every form the contract names works (`postgresql://…` as every PostgreSQL
user types it, `postgres://…`, `sqlite:///…`), for `aye serve` and `aye migrate` as real
processes; anything else is exit 2 with one line naming those forms, never a traceback, never
the URL's password."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from bot.settings import SettingsError, store_url
from store.database_url import UnsupportedUrl, canonical
from store.db import Store, StoreError
from tests.conftest import postgres_url
from tests.test_process import AGENT, Api, Server, base_env, free_port, servers, start_server

__all__ = ["servers"]  # a fixture, used by name below

FORMS = ("sqlite+aiosqlite:///", "sqlite:///", "postgresql+asyncpg://", "postgresql://",
         "postgres://")
BAD = ("notaurl", "mysql://x", "", "   ", "sqlite://", "sqlite:///:memory:",
       "postgresql+psycopg://ada:pa55word@127.0.0.1/db", "http://ada:pa55word@example.com/")


def run(tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = base_env(tmp, url, AYE_PORT=str(free_port()), AYE_OPERATOR_TOKEN="op-url-token",
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


# -- the forms, read ------------------------------------------------------------------------------


def test_each_form_maps_to_the_driver_aye_ships() -> None:
    assert canonical("sqlite:///./aye.db") == "sqlite+aiosqlite:///./aye.db"
    assert canonical("sqlite:////var/aye.db") == "sqlite+aiosqlite:////var/aye.db"
    assert canonical("sqlite+aiosqlite:///a.db") == "sqlite+aiosqlite:///a.db"
    for scheme in ("postgresql", "postgres", "postgresql+asyncpg", "POSTGRES"):
        assert canonical(f"{scheme}://u:p@db:5432/aye") == "postgresql+asyncpg://u:p@db:5432/aye"
    # libpq's sslmode, as a hosting service prints it, is kept; SQLAlchemy's ssl becomes it.
    assert canonical("postgres://db/aye?sslmode=require&application_name=aye") == (
        "postgresql+asyncpg://db/aye?sslmode=require&application_name=aye")
    assert canonical("postgresql+asyncpg://db/aye?ssl=verify-full") == (
        "postgresql+asyncpg://db/aye?sslmode=verify-full")


@pytest.mark.parametrize("url", BAD)
def test_anything_else_is_refused_naming_the_forms_and_not_the_password(url: str) -> None:
    with pytest.raises(UnsupportedUrl) as refused:
        canonical(url)
    with pytest.raises(SettingsError) as settings:
        store_url({"AYE_DATABASE_URL": url})
    with pytest.raises(StoreError) as store:
        Store(url)
    for said in (str(refused.value), str(settings.value), str(store.value)):
        assert all(form in said for form in FORMS) and "pa55word" not in said


def test_unset_is_the_default_and_set_but_empty_is_refused() -> None:
    assert store_url({}) == "sqlite+aiosqlite:///./aye.db"
    with pytest.raises(SettingsError):
        store_url({"AYE_DATABASE_URL": ""})


def test_a_url_sqlalchemy_cannot_read_is_one_line() -> None:
    with pytest.raises(StoreError) as refused:
        Store("postgresql://ada:pa55word@127.0.0.1:notaport/db")
    assert "pa55word" not in str(refused.value) and "postgres://" in str(refused.value)


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
