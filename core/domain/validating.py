"""jsonschema validation of what people and outside systems send, bounded: no `$ref` is ever
fetched (an empty registry: a remote or file reference fails to resolve, never loads), and a
`pattern` or `patternProperties` key is matched by the `regex` module with a time limit, so an
agent's pattern such as `^(a|aa)+$` cannot hold the event loop with a crafted string. A check
that runs out of time is a failure to fit (fail closed), never a pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import regex
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry

MATCH_TIMEOUT_S = 0.05
TOO_SLOW = "took too long to check against its pattern"
NO_RETRIEVAL: Registry[Any] = Registry()


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` is found in `text`; None when that takes too long or cannot be told."""
    try:
        return regex.search(pattern, text, timeout=MATCH_TIMEOUT_S) is not None
    except (TimeoutError, regex.error, RecursionError):
        return None


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = _search(pattern, instance)
    if found is None:
        yield ValidationError(TOO_SLOW, validator="pattern", validator_value=pattern)
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Validator, properties: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            found = _search(pattern, key)
            if found is None:
                yield ValidationError(TOO_SLOW, path=[key])
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


Bounded = validators.extend(
    Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties},
)


def validator(schema: dict[str, Any], format_checker: FormatChecker) -> Any:
    """A draft 2020-12 validator for `schema` that fetches nothing and bounds its patterns."""
    return Bounded(schema, format_checker=format_checker, registry=NO_RETRIEVAL)
