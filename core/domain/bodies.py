"""The one encoding of every JSON body aye reads (the API, an external ask's door, webhooks):
UTF-8 without a byte-order mark, as RFC 8259 section 8.1 requires of JSON on the network.

Python's `json.loads` of bytes guesses UTF-16 and UTF-32 and skips a UTF-8 BOM, and gidgethub
decodes by whatever `charset` the sender names: left alone, the same JSON would be taken in
five encodings, and what a signature covers would not be what was read. Pure: no I/O.
"""

from __future__ import annotations

import codecs

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
