"""Pure parsing of what people write on GitHub: the `/answer` command and the reaction it earns."""

from __future__ import annotations

from dataclasses import dataclass

from core.domain.refs import parse_ref

ANSWER_COMMAND = "/answer"
TAKEN_REACTION = "+1"
REFUSED_REACTION = "confused"


@dataclass(frozen=True, slots=True)
class Command:
    """An `/answer` comment: what follows the command on its first line, and the note below it.

    `ref` is set when the first word after the command looks like a ref (`q7`, `a3`) and more
    follows it; whether it names an ask is for the caller to decide against the store, so both
    readings are kept: `ref` + `ref_answer`, or `text` as a whole.
    """

    text: str
    note: str | None
    ref: str | None = None
    ref_answer: str | None = None


def parse_command(body: str | None) -> Command | None:
    """The command in a comment or review body, or None when its first line is not `/answer …`.

    Leading blank lines are skipped; the command word is plain ASCII, matched without regard
    to ASCII case (`/ANSWER`, never `/anſwer`), and must stand alone (`/answered` is not a
    command). `/answer` with nothing after it is a command with an empty answer, which the
    rules refuse.
    """
    if not body:
        return None
    first, _, rest = body.lstrip().partition("\n")
    first = first.strip()
    word, _, answer = first.partition(" ")
    if not is_command(word):
        # A tab after the command is as good as a space.
        word, _, answer = first.partition("\t")
        if not is_command(word):
            return None
    answer = answer.strip()
    ref, ref_answer = _split_ref(answer)
    return Command(text=answer, note=parse_note(rest), ref=ref, ref_answer=ref_answer)


def is_command(word: str) -> bool:
    """`/answer` in ASCII letters of either case: casefold() would let `/anſwer` (U+017F) in."""
    return word.isascii() and word.lower() == ANSWER_COMMAND


def parse_note(rest: str) -> str | None:
    """The lines after the first, as a note; None when there are none or only blank ones."""
    note = rest.replace("\r\n", "\n").strip()
    return note or None


def _split_ref(answer: str) -> tuple[str | None, str | None]:
    parts = answer.split(None, 1)
    if len(parts) == 2 and parts[0].isascii() and parse_ref(parts[0]) is not None:
        return parts[0].lower(), parts[1].strip()
    return None, None


def reaction_for(taken: bool) -> str:
    """👍 for an answer taken, 😕 for any refusal (the reason is in the ask's history)."""
    return TAKEN_REACTION if taken else REFUSED_REACTION
