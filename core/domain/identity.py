"""The canonical identity of a call, a start and an input: the one answer to "is it the same?"
for grants, an identical call while one is pending, remembered refusals, starts, and the
hashes that surfaces show (pure).

- The input: every string in it, keys included, in Unicode NFC, then written as RFC 8785
  (JCS) does, by the `rfc8785` package. Key order, whitespace, `5` / `5.0` / `5e0` and
  `"\\u0032"` / `"2"` make no difference. `input_sha256` is the hex SHA-256 of those bytes:
  what a person can compare with what they expect.
- Numbers are compared by their exact value. RFC 8785 reads a number as an IEEE double, so
  it would make `9007199254740993` and `9007199254740992` one call (and the package refuses
  integers past 2**53 - 1). An integral number past that range (an integer, or a float such
  as `1e21`) is written as its exact integer digits instead, so two different integers stay
  two calls; every other number is written exactly as RFC 8785 writes it. A non-integral
  number is below 2**52 and is written with a `.` or an `e-`, so it never reads as digits.
- Two keys of one object that are the same text once in NFC (`"é"` and `"e\\u0301"`) would
  merge two different inputs into one: that object keeps its keys as given (its values are
  still normalised). No input in NFC writes such a key, so it can be no other input's form.
- A work: the surface's own conversation key (`github:octo/app#7`, the repository
  lowercased; `slack:C0123:1700000000.000100` as given) and its kind (`github.issue` when
  no `type` is given, `github.pull`, `slack.thread`), so `"Octo/App"` and an explicit
  `"type": "issue"` make no difference. A start is about the work without its kind.
- A call: (agent, operation lowercased, canonical input, canonical work): `call_sha256`.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import rfc8785

from core.domain import kinds
from core.domain.kinds import SurfaceKind

# RFC 8785's (and I-JSON's) exact integers: a double holds every integer up to this.
SAFE_INTEGER = 2**53 - 1


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def canonical(value: Any) -> bytes:
    """`value` as canonical bytes (see the module's docstring). ValueError for what JSON
    cannot hold (a number that is not finite, a key that is not a string)."""
    out: list[bytes] = []
    _write(value, out)
    return b"".join(out)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def input_sha256(call_input: Any) -> str:
    """The hex SHA-256 of the canonical input."""
    return sha256(canonical(call_input))


def _write(value: Any, out: list[bytes]) -> None:
    # Every string and number is written by rfc8785; objects and arrays are put together here
    # only so that an integer past 2**53 - 1 can be written exactly (see the docstring).
    if value is None or isinstance(value, bool):
        out.append(rfc8785.dumps(value))
    elif isinstance(value, str):
        out.append(rfc8785.dumps(nfc(value)))
    elif isinstance(value, int | float):
        out.append(_number(value))
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for index, item in enumerate(value):
            if index:
                out.append(b",")
            _write(item, out)
        out.append(b"]")
    elif isinstance(value, Mapping):
        _write_object(value, out)
    else:
        raise ValueError(f"{type(value).__name__} is not JSON")


def _number(value: int | float) -> bytes:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite")
        if not value.is_integer():
            return rfc8785.dumps(value)
        value = int(value)
    if -SAFE_INTEGER <= value <= SAFE_INTEGER:
        return rfc8785.dumps(value)
    return str(value).encode()


def _write_object(value: Mapping[Any, Any], out: list[bytes]) -> None:
    if not all(isinstance(key, str) for key in value):
        raise ValueError("object keys must be strings")
    keys = {key: nfc(key) for key in value}
    if len(set(keys.values())) < len(keys):
        keys = {key: key for key in value}  # NFC would merge two keys: keep them as given
    # RFC 8785 3.2.3: members sorted by their keys' UTF-16 code units.
    ordered = sorted(keys.items(), key=lambda pair: pair[1].encode("utf-16-be"))
    out.append(b"{")
    for index, (key, written) in enumerate(ordered):
        if index:
            out.append(b",")
        out.append(rfc8785.dumps(written))
        out.append(b":")
        _write(value[key], out)
    out.append(b"}")


# -- works ------------------------------------------------------------------------------------


def work_key(
    work: Mapping[str, Any] | None, known: Mapping[str, SurfaceKind] | None = None
) -> str | None:
    """One string per conversation (`slack:C1:1.2`, `github:o/r#4`), as its surface (one of
    the `known` kinds; without them, of the kinds in use) keys it: the work without its kind
    (a start's identity, and one index probe for its open asks)."""
    if not work:
        return None
    known = kinds.in_use() if known is None else known
    for name, value in work.items():
        kind = known.get(name)
        if kind is not None and kind.work_key is not None and isinstance(value, Mapping):
            return f"{name}:{kind.work_key(value)}"
    return None


def work_kind(work: Mapping[str, Any] | None) -> str | None:
    """The kind of work (`github.issue`, `github.pull`, `slack.thread`) as the work says it:
    for GitHub the agent's `type`, which only GitHub itself can confirm (core.app.starts)."""
    for name, value in (work or {}).items():
        kind = kinds.known(name)
        if kind is not None and kind.work_kind is not None and isinstance(value, Mapping):
            return kind.work_kind(value)
    return None


def work_surface(work: Mapping[str, Any] | None) -> str | None:
    """The surface a work belongs to (`github`, `slack`)."""
    return next(iter(work), None) if work else None


def canonical_work(work: Mapping[str, Any] | None) -> dict[str, str | None] | None:
    """The work as the identity sees it: its key and its kind (see the docstring)."""
    if not work:
        return None
    return {"key": work_key(work), "kind": work_kind(work)}


# -- calls and starts -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One call's identity: the operation as it is matched and stored (lowercased), and the
    two hashes every surface shows by these names."""

    operation: str
    input_sha256: str
    call_sha256: str


def operation_name(operation: str) -> str:
    """`DEPLOY.prod` is `deploy.prod`."""
    return nfc(operation).lower()


def call(agent: str, operation: str, call_input: Any, work: Mapping[str, Any] | None) -> Call:
    name = operation_name(operation)
    whole = {"agent": agent, "operation": name, "input": call_input,
             "work": canonical_work(work)}
    return Call(name, input_sha256(call_input), sha256(canonical(whole)))


def start_sha256(agent: str, work: Mapping[str, Any] | None) -> str:
    """A start's identity: the agent and the work without its kind, so a start refused for
    `octo/app#7` stays refused whatever `type` a later start claims."""
    return sha256(canonical({"agent": agent, "start": work_key(work)}))


# -- a question's body and an answer's text, and an input as shown --------------------------


def canonical_json(value: Any) -> str:
    """Key order and whitespace do not matter: the same data gives the same text. For a
    question's body and an answer's text only: a call's identity, and the input an approval
    shows, are `canonical`'s, above."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ShownInput:
    """An approval's input as a surface can show it: `text` (its canonical form, at most the
    surface's limit), whether that is all of it, and `sha256`, the input's `input_sha256`
    (the SHA-256 of exactly that canonical text), which every surface
    shows by that name, with where to read the input whole (`aye show REF`) when it cuts."""

    text: str
    whole: bool
    sha256: str


def input_shown(call_input: Any, limit: int) -> ShownInput:
    """As much of the input as fits in `limit` characters; never cut silently (see ShownInput)."""
    whole = canonical(call_input)
    full, sha = whole.decode(), sha256(whole)
    if len(full) <= limit:
        return ShownInput(full, True, sha)
    return ShownInput(full[:limit], False, sha)


def digest(value: Any) -> str:
    """For a question's body (its idempotency key's check); never a call's identity."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
