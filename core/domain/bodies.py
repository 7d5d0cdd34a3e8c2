"""The one encoding of every JSON body aye reads (the API, an external ask's door, webhooks):
UTF-8 without a byte-order mark, as RFC 8259 section 8.1 requires of JSON on the network.

Python's `json.loads` of bytes guesses UTF-16 and UTF-32 and skips a UTF-8 BOM, and gidgethub
decodes by whatever `charset` the sender names: left alone, the same JSON would be taken in
five encodings, and what a signature covers would not be what was read. Pure: no I/O.

Nor may one object hold a key twice: `json.loads` keeps the last of `{"a": "x", "a": "y"}`,
other libraries the first, so an agent could run `x` while a person approved `y`.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

# UTF-32's marks first: UTF-32LE's begins with UTF-16LE's.
MARKS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF8, codecs.BOM_UTF16_LE,
         codecs.BOM_UTF16_BE)
NOT_UTF8 = "the body must be JSON in UTF-8"


def encoding_problem(raw: bytes) -> str | None:
    """Why `raw` is not UTF-8 without a byte-order mark, in a sentence; None when it is."""
    if raw.startswith(MARKS):
        return f"{NOT_UTF8}, without a byte-order mark"
    # JSON text never holds a NUL byte (inside a string it is written \u0000), while UTF-16 and
    # UTF-32 put one beside every ASCII character, and JSON always has some.
    if b"\x00" in raw:
        return f"{NOT_UTF8} (this looks like UTF-16 or UTF-32)"
    try:
        # Surrogates encoded as UTF-8 pass here, as json.loads takes them: they are a field's
        # problem (422, ask_api.schemas.unusable), not the body's.
        raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return NOT_UTF8
    return None


class DuplicateKey(ValueError):
    """A JSON object holds `key` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        shown = json.dumps(self.key if len(self.key) <= SHOWN_KEY else self.key[:SHOWN_KEY] + "…")
        return f"the key {shown} appears twice in one object"


SHOWN_KEY = 64  # a key named in an error, at most this many characters of it


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json`'s object_pairs_hook: the object, or DuplicateKey naming the first key it holds
    twice. On the hot path of every create: one dict and one comparison of lengths, and a
    search for the key only when they differ."""
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return found


# Built once: `json.loads` with a hook builds a new decoder at every call.
STRICT = json.JSONDecoder(object_pairs_hook=unique_keys)
