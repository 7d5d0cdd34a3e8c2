"""The database URLs aye takes (AYE_DATABASE_URL), read without SQLAlchemy so that the CLI's
commands start fast, and written in the one form each store is opened with.

People type PostgreSQL's URL as libpq, psql and most hosts print it (`postgresql://…`,
`postgres://…`), and SQLite's as SQLAlchemy's docs do (`sqlite:///…`). SQLAlchemy would open
the first with a driver aye does not ship (psycopg), refuse the second, and stop on a form it
does not know with a traceback: here each is mapped to aye's drivers, and anything else is
refused in one sentence that names the forms taken.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

SQLITE = "sqlite+aiosqlite"
POSTGRES = "postgresql+asyncpg"
SCHEMES = {
    SQLITE: SQLITE, "sqlite": SQLITE,
    POSTGRES: POSTGRES, "postgresql": POSTGRES, "postgres": POSTGRES,
}
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}")
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
FORMS = ("sqlite+aiosqlite:///PATH (or sqlite:///PATH), postgresql+asyncpg://… "
         "(or postgresql://…, postgres://…)")


class UnsupportedUrl(ValueError):
    """Not a database URL aye takes; the message (a sentence's end) never repeats the URL,
    which may hold a password."""


def canonical(url: str) -> str:
    """`url` in the form aye opens it with: `sqlite+aiosqlite:///…` or `postgresql+asyncpg://…`;
    UnsupportedUrl otherwise."""
    scheme, sep, rest = url.strip().partition("://")
    target = SCHEMES.get(scheme.lower()) if sep else None
    if target is None:
        # Only a scheme as RFC 3986 writes one is repeated: nothing else of the URL is.
        named = (f"the scheme {scheme!r} is not one aye takes" if sep and SCHEME.fullmatch(scheme)
                 else "not a database URL")
        raise UnsupportedUrl(f"{named}: use {FORMS}")
    if target == SQLITE:
        # `sqlite:///a.db` is a path; `sqlite://` with no path is a store in memory, which
        # each connection would see empty; `sqlite://host/…` names no file at all.
        path = rest.split("?", 1)[0].strip("/")
        if not rest.startswith("/") or path in ("", ":memory:"):
            raise UnsupportedUrl(f"a SQLite URL must name a file: use {FORMS}")
        return f"{SQLITE}://{rest}"
    return f"{POSTGRES}://{_libpq_query(rest)}"


def _libpq_query(rest: str) -> str:
    """SQLAlchemy's `ssl=require` as libpq's `sslmode=require`, the one name both aye's
    readers of the URL take: asyncpg's own DSN parser (bot/listener.py) and Store, which hands
    it to asyncpg's connect() as `ssl` (store/db.py)."""
    where, sep, query = rest.partition("?")
    if not sep:
        return rest
    pairs = [("sslmode" if key == "ssl" and value in SSL_MODES else key, value)
             for key, value in parse_qsl(query, keep_blank_values=True)]
    return f"{where}?{urlencode(pairs)}"
