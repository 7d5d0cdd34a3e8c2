"""What a page that takes a form needs, whichever surface serves it (the inbox, email's answer
page): the security headers of every response, and a bounded URL-encoded form body of text."""

from __future__ import annotations

from urllib.parse import parse_qsl

from aiohttp import web
from multidict import CIMultiDict, MultiDict, MultiDictProxy

MAX_FORM = 64 * 1024
MAX_FIELDS = 500
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


class BadForm(Exception):
    """A POST body that is not a small URL-encoded form of text."""

    def __init__(self, status: int, words: str) -> None:
        super().__init__(words)
        self.status, self.words = status, words


def protect(headers: CIMultiDict[str]) -> None:
    for name, value in HEADERS.items():
        headers.setdefault(name, value)
    headers.setdefault("Cache-Control", "no-store")


async def read_form(request: web.Request, limit: int = MAX_FORM) -> MultiDictProxy[str]:
    """The URL-encoded body, at most `limit` bytes: BadForm otherwise."""
    if request.content_type != "application/x-www-form-urlencoded":
        raise BadForm(415, "The form was not sent as a web form.")
    if request.content_length is not None and request.content_length > limit:
        raise BadForm(413, "The form is too large.")
    size, chunks = 0, []
    async for chunk in request.content.iter_chunked(16384):
        size += len(chunk)
        if size > limit:
            raise BadForm(413, "The form is too large.")
        chunks.append(chunk)
    try:
        pairs = parse_qsl(b"".join(chunks).decode("ascii"), keep_blank_values=True,
                          errors="strict", max_num_fields=MAX_FIELDS)
    except (UnicodeError, ValueError):
        raise BadForm(400, "The form could not be read.") from None
    # The stores refuse NUL in text (PostgreSQL): refuse it here, never change what was typed.
    if any("\x00" in key or "\x00" in value for key, value in pairs):
        raise BadForm(400, "The form holds a character that cannot be kept (NUL).")
    return MultiDictProxy(MultiDict(pairs))
