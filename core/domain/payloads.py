"""An external ask's schema and payload: any JSON Schema (draft 2020-12) the agent pins, written
out whole (no `$ref`: a reference could point off the machine, or make validating a payload
cost exponential time) and bound to its request (a required property fixed with `const`); and
the outside system's JSON checked against it with bounded patterns (core/domain/validating.py).
Pure: no I/O.

Where a payload does not fit, the words say which part and why, never the pinned value: the
outside system learns that `reference` is not what the ask expects, not what it expects.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from core.domain import validating
from core.domain.forms import FORMAT_CHECKER, TYPE_WORDS, Misfit, SchemaProblem

ROOT = "payload"


def check(schema: Any) -> dict[str, Any]:
    """The schema, when it is a JSON Schema (an object or a boolean schema is not enough: an
    object); SchemaProblem naming the part (`schema.properties.status`) otherwise."""
    if not isinstance(schema, dict):
        raise SchemaProblem("schema", "must be a JSON Schema object")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = "schema" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        raise SchemaProblem(where, f"is not valid JSON Schema: {_first_line(error.message)}") from None
    except RecursionError:
        raise SchemaProblem("schema", "is nested too deeply") from None
    referenced = _reference(schema, "schema")
    if referenced is not None:
        raise SchemaProblem(referenced, "references are not taken: write the schema out whole")
    if not pinned(schema):
        raise SchemaProblem("schema", UNPINNED)
    return schema


UNPINNED = (
    'must pin the request with `const`: an object schema ("type": "object") with a required '
    'property whose value is fixed by "const" (or a one-value "enum"), such as '
    '{"reference": {"const": "inv-42"}}, so that only a delivery about this request answers it'
)


def pinned(schema: dict[str, Any]) -> bool:
    """Whether the schema binds a payload to one request: an object schema with a required
    property fixed to one value. Without it any signed delivery of the verifier fits any of
    its asks, and one captured for an ask answers another. Every other keyword of a schema only
    narrows what fits (an instance must satisfy them all), so the pin cannot be undone
    beside it; a pin inside `anyOf` or `oneOf` could, so only a top-level one counts."""
    properties, required = schema.get("properties"), schema.get("required")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return False
    for name in required if isinstance(required, list) else []:
        sub = properties.get(name) if isinstance(name, str) else None
        if not isinstance(sub, dict):
            continue
        enum = sub.get("enum")
        if "const" in sub or (isinstance(enum, list) and len(enum) == 1):
            return True
    return False


REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")


def _reference(node: Any, where: str) -> str | None:
    """The path of the first reference keyword in the schema, or None."""
    stack = [(node, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in REFERENCES:
                    return f"{at}.{key}"
                stack.append((value, f"{at}.{key}"))
        elif isinstance(item, list):
            stack.extend((value, f"{at}[{i}]") for i, value in enumerate(item))
    return None


def fit(schema: dict[str, Any], given: Any) -> Any:
    """The payload (JSON, already parsed), when it fits the ask's schema; Misfit naming the first failing part
    (`payload.status`) otherwise."""
    validator = validating.validator(schema, FORMAT_CHECKER)
    try:
        error = min(validator.iter_errors(given), key=_depth_first, default=None)
    except Exception:  # an unresolvable $ref, a pattern Python cannot compile: never a yes
        raise Misfit("cannot be checked against the ask's schema", ROOT) from None
    if error is not None:
        raise Misfit(_words(error), _path(error))
    return given


def _depth_first(error: ValidationError) -> tuple[int, str]:
    return (-len(error.absolute_path), error.message)


def _path(error: ValidationError) -> str:
    return ROOT + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def _words(error: ValidationError) -> str:
    kind, limit = str(error.validator), error.validator_value
    if kind == "required":
        missing = [n for n in limit if isinstance(error.instance, dict) and n not in error.instance]
        return f"needs {', '.join(map(str, missing))}" if missing else "misses a required field"
    if kind == "type":
        return TYPE_WORDS.get(str(limit), f"must be of type {limit}")
    if kind in ("const", "enum"):
        return "is not the value the ask expects"
    if kind == "additionalProperties":
        return "has fields the ask does not expect"
    if error.message == validating.TOO_SLOW:
        return str(validating.TOO_SLOW)
    return f"does not fit the ask's schema ({kind})"


def _first_line(text: str) -> str:
    line = text.splitlines()[0] if text else "invalid"
    return line if len(line) <= 200 else line[:197] + "..."
