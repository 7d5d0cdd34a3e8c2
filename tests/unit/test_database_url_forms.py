"""AYE_DATABASE_URL's forms, read: every form the contract names (`postgresql://…` as every
PostgreSQL user types it, `postgres://…`, `sqlite:///…`) maps to the driver aye ships; anything
else is refused naming those forms, never the URL's password. `aye serve` and `aye migrate` taking
them as real processes are tests/e2e/test_database_urls.py's."""

from __future__ import annotations

import pytest

from bot.settings import SettingsError, store_url
from store.database_url import UnsupportedUrl, canonical
from store.db import Store, StoreError

FORMS = ("sqlite+aiosqlite:///", "sqlite:///", "postgresql+asyncpg://", "postgresql://",
         "postgres://")
BAD = ("notaurl", "mysql://x", "", "   ", "sqlite://", "sqlite:///:memory:",
       "postgresql+psycopg://ada:pa55word@127.0.0.1/db", "http://ada:pa55word@example.com/")


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
