"""Agent text cut to fit a GitHub comment (pure): the longest start of a text whose inert
rendering fits in so many bytes, said plainly where it is cut.

GitHub refuses a comment over 65,536 characters, and rendering can grow text several times
(an unseen character becomes a 6- or 12-byte `\\uXXXX` escape, `<` becomes `&lt;`). A comment
is written whole when it fits; otherwise each part gets a room in bytes, smaller at each of the
LEVELS down to TIGHT (whose rooms together are well inside the budget), so that no part can
crowd out the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import inert

ELLIPSIS = "…"
UNBOUNDED = 1 << 40


@dataclass(frozen=True, slots=True)
class Rooms:
    """Bytes each part of a question comment may take."""

    question: int = UNBOUNDED
    context: int = UNBOUNDED
    option: int = UNBOUNDED  # each
    field: int = UNBOUNDED  # each of a form's fields
    example: int = UNBOUNDED
    caption: int = UNBOUNDED  # each medium's
    url: int = UNBOUNDED  # each medium's link target
    host: int = UNBOUNDED
    who: int = UNBOUNDED  # the logins who may answer


    def times(self, factor: int) -> Rooms:
        return Rooms(*(min(getattr(self, name) * factor, UNBOUNDED) for name in self.__slots__))


WHOLE = Rooms()
# Together (a form with 10 fields and 5 media, say) about 53,000 bytes, with room for aye's words.
TIGHT = Rooms(question=10_000, context=6_000, option=300, field=2_000, example=1_500,
              caption=400, url=2_100, host=100, who=1_000)
# Tried in turn until one fits: the first may not, the last always does.
LEVELS = (WHOLE, TIGHT.times(4), TIGHT.times(2), TIGHT)


def size(text: str) -> int:
    """Bytes, as GitHub may count them: never fewer than characters."""
    return len(text.encode())


def longest(value: str, room: int, render: Callable[[str], str]) -> int:
    """How many characters of `value` (from its start) render within `room` bytes."""
    if size(render(value)) <= room:
        return len(value)
    low, high = 0, len(value)
    while low < high:
        middle = (low + high + 1) // 2
        if size(render(value[:middle])) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def inline(value: str, room: int) -> str:
    """`value` on one line, inert, within `room` bytes: whole, or its start and `…`."""
    whole = inert.inline(value)
    if size(whole) <= room:
        return whole
    kept = longest(value, room - size(ELLIPSIS), inert.inline)
    return inert.inline(value[:kept]) + ELLIPSIS


def quoted(value: str, room: int, what: str, ref: str) -> list[str]:
    """`value` as an inert block quote within `room` bytes: whole, or as much as fits and a
    line saying that the `what` is cut and where to read it whole."""
    def render(text: str) -> str:
        return "\n".join(inert.quoted(text))

    if size(render(value)) <= room:
        return inert.quoted(value)
    said = f"**The {what} is cut here**: read it whole with `aye show {ref}`."
    kept = longest(value, room - size(said) - 2, lambda text: render(text + ELLIPSIS))
    return [*inert.quoted(value[:kept] + ELLIPSIS), "", said]
