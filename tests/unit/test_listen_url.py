"""AYE_LISTEN_URL, read: the forms of AYE_DATABASE_URL, PostgreSQL only, beside a PostgreSQL
store; unset, LISTEN uses AYE_DATABASE_URL. Given, the store makes every statement safe behind a
transaction pooler (no prepared statement outlives its transaction, reads in one). Through a real
PgBouncer: tests/e2e/test_process.py's two processes, parametrised."""

from __future__ import annotations

import pytest

from bot.settings import Settings, SettingsError, listen_store_url
from store.db import Store, StoreError

POOLER = "postgres://aye:pw@pgbouncer:6432/aye"
DIRECT = "postgresql://aye:pw@db:5432/aye"


def test_unset_or_empty_means_listen_on_the_database_url() -> None:
    for env in ({"AYE_DATABASE_URL": POOLER}, {"AYE_DATABASE_URL": POOLER, "AYE_LISTEN_URL": " "}):
        assert listen_store_url(env) is None
    store = Store(POOLER)
    assert store.listen_url == store.url == "postgresql+asyncpg://aye:pw@pgbouncer:6432/aye"
    assert not store.pooled


@pytest.mark.parametrize("form", ["postgresql://", "postgres://", "postgresql+asyncpg://"])
def test_each_postgresql_form_is_taken(form: str) -> None:
    env = {"AYE_DATABASE_URL": POOLER, "AYE_LISTEN_URL": f"{form}aye:pw@db:5432/aye"}
    assert Settings.from_env(env).listen_url == "postgresql+asyncpg://aye:pw@db:5432/aye"


@pytest.mark.parametrize("env", [
    {"AYE_DATABASE_URL": POOLER, "AYE_LISTEN_URL": "mysql://aye:pw@db/aye"},
    {"AYE_DATABASE_URL": POOLER, "AYE_LISTEN_URL": "sqlite:///aye.db"},
    {"AYE_DATABASE_URL": "sqlite:///aye.db", "AYE_LISTEN_URL": DIRECT},
])
def test_anything_else_is_one_line_naming_the_variable_not_the_password(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError) as refused:
        listen_store_url(env)
    assert str(refused.value).startswith("AYE_LISTEN_URL: ")
    assert "pw" not in str(refused.value) and "\n" not in str(refused.value)


def test_a_listen_url_the_store_cannot_read_names_it() -> None:
    with pytest.raises(StoreError, match=r"^AYE_LISTEN_URL: ") as refused:
        Store(POOLER, "postgresql://aye:pw@db:port/aye")
    assert "pw" not in str(refused.value)


def test_given_a_listen_url_the_store_is_the_poolers_and_listens_elsewhere() -> None:
    store = Store(POOLER, DIRECT)
    assert store.pooled and store.listen_url == "postgresql+asyncpg://aye:pw@db:5432/aye"
    assert store.url == "postgresql+asyncpg://aye:pw@pgbouncer:6432/aye"
    # No statement it prepares outlives its transaction: tests/middle/test_pooled_store.py.
