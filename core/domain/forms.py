"""A form's schema: the subset of JSON Schema (draft 2020-12) every surface can render as
inputs, checked when the ask is made; and a form's answer, validated by jsonschema.

The subset: `{"type": "object", "properties": {…1..10…}, "required": [...]}`, each property a
string (`enum` of up to 20, `format` email/uri/date, `minLength`, `maxLength` <= 3000,
`pattern`), an integer or number (`minimum`, `maximum`), a boolean, or an array of strings
with `items.enum` (a multi-select, with optional `minItems`, `maxItems`, `uniqueItems`); each
with an optional `title` and `description`. An answer may not carry fields the form lacks.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from core.domain import validating

MAX_FIELDS = 10
MAX_ENUM = 20
MAX_ENUM_TEXT = 75
MAX_TITLE = 75
MAX_DESCRIPTION = 300
MAX_NAME = 64
MAX_PATTERN = 200
MAX_TEXT = 3000
TYPES = ("string", "integer", "number", "boolean", "array")
STRING_FORMATS = ("email", "uri", "date")
COMMON = {"type", "title", "description"}
ALLOWED = {
    "string": COMMON | {"enum", "format", "minLength", "maxLength", "pattern"},
    "integer": COMMON | {"minimum", "maximum"},
    "number": COMMON | {"minimum", "maximum"},
    "boolean": COMMON,
    "array": COMMON | {"items", "minItems", "maxItems", "uniqueItems"},
}
TOP = {"type", "properties", "required", "title", "description", "$schema", "additionalProperties"}
DRAFT = "https://json-schema.org/draft/2020-12/schema"

FORMAT_CHECKER = FormatChecker(("date", "email"))


def _is_uri(value: object) -> bool:
    """An absolute URI (jsonschema checks `uri` only with an optional GPL-free extra)."""
    if not isinstance(value, str) or any(c.isspace() for c in value):
        return not isinstance(value, str)
    parts = urlsplit(value)
    return bool(parts.scheme) and bool(parts.netloc or parts.path)


FORMAT_CHECKER.checks("uri")(_is_uri)


class Misfit(ValueError):
    """What was given does not fit the ask: `field` names the failing part (`answer`,
    `answer.count`, `answer[2]`), `words` say why, `label` is the form field's title."""

    def __init__(self, words: str, field: str = "answer", label: str | None = None) -> None:
        super().__init__(words)
        self.words, self.field, self.label = words, field, label

    @property
    def message(self) -> str:
        return f"{self.label} {self.words}" if self.label else self.words


class SchemaProblem(ValueError):
    """The schema is outside the subset: `field` names the part (`schema.properties.when.type`)."""

    def __init__(self, field: str, words: str) -> None:
        super().__init__(f"{field}: {words}")
        self.field, self.words = field, words


def check(schema: Any) -> dict[str, Any]:
    """The schema, when it is inside the subset; SchemaProblem otherwise."""
    where = "schema"
    if not isinstance(schema, dict):
        raise SchemaProblem(where, "must be a JSON Schema object")
    _only(schema, TOP, where)
    if schema.get("type") != "object":
        raise SchemaProblem(f"{where}.type", 'must be "object"')
    if schema.get("$schema", DRAFT) != DRAFT:
        raise SchemaProblem(f"{where}.$schema", f"must be {DRAFT}")
    if schema.get("additionalProperties", False) is not False:
        raise SchemaProblem(f"{where}.additionalProperties", "may only be false")
    for key in ("title", "description"):
        _text(schema, key, MAX_DESCRIPTION, where)
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not 1 <= len(properties) <= MAX_FIELDS:
        raise SchemaProblem(f"{where}.properties", f"must be an object of 1 to {MAX_FIELDS} fields")
    for name, spec in properties.items():
        if not name.strip() or len(name) > MAX_NAME:
            raise SchemaProblem(f"{where}.properties", f"field names are 1 to {MAX_NAME} characters")
        _property(spec, f"{where}.properties.{name}")
    _required(schema.get("required", []), properties, where)
    Draft202012Validator.check_schema(schema)  # the subset is valid JSON Schema; say so plainly
    return schema


def _only(spec: dict[str, Any], allowed: set[str], where: str) -> None:
    for key in spec:
        if key not in allowed:
            raise SchemaProblem(f"{where}.{key}", "is not supported in a form")


def _text(spec: dict[str, Any], key: str, limit: int, where: str) -> None:
    value = spec.get(key)
    if value is not None and (not isinstance(value, str) or not 1 <= len(value) <= limit):
        raise SchemaProblem(f"{where}.{key}", f"must be text of 1 to {limit} characters")


def _property(spec: Any, where: str) -> None:
    if not isinstance(spec, dict):
        raise SchemaProblem(where, "must be an object with a type")
    kind = spec.get("type")
    if kind not in TYPES:
        raise SchemaProblem(f"{where}.type", "must be one of " + ", ".join(TYPES))
    _only(spec, ALLOWED[kind], where)
    _text(spec, "title", MAX_TITLE, where)
    _text(spec, "description", MAX_DESCRIPTION, where)
    if kind == "string":
        _string(spec, where)
    elif kind in ("integer", "number"):
        _range(spec, "minimum", "maximum", where, whole=False)
    elif kind == "array":
        _array(spec, where)


def _string(spec: dict[str, Any], where: str) -> None:
    if "enum" in spec:
        _enum(spec["enum"], f"{where}.enum")
    if "format" in spec and spec["format"] not in STRING_FORMATS:
        raise SchemaProblem(f"{where}.format", "must be one of " + ", ".join(STRING_FORMATS))
    _range(spec, "minLength", "maxLength", where, whole=True, top=MAX_TEXT)
    pattern = spec.get("pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or not 1 <= len(pattern) <= MAX_PATTERN:
            raise SchemaProblem(f"{where}.pattern", f"must be 1 to {MAX_PATTERN} characters")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SchemaProblem(f"{where}.pattern", f"is not a regular expression ({exc})") from None


def _enum(values: Any, where: str) -> None:
    if not isinstance(values, list) or not 1 <= len(values) <= MAX_ENUM:
        raise SchemaProblem(where, f"must list 1 to {MAX_ENUM} values")
    seen: set[str] = set()
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_ENUM_TEXT:
            raise SchemaProblem(f"{where}[{index}]", f"must be text of 1 to {MAX_ENUM_TEXT} characters")
        if value in seen:
            raise SchemaProblem(f"{where}[{index}]", "repeats an earlier value")
        seen.add(value)


def _range(
    spec: dict[str, Any], low_key: str, high_key: str, where: str, whole: bool, top: int = 0
) -> None:
    low, high = spec.get(low_key), spec.get(high_key)
    for key, value in ((low_key, low), (high_key, high)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise SchemaProblem(f"{where}.{key}", "must be a number")
        if whole and (not isinstance(value, int) or value < 0 or (top and value > top)):
            limit = f" up to {top}" if top else ""
            raise SchemaProblem(f"{where}.{key}", f"must be a whole number from 0{limit}")
    if low is not None and high is not None and low > high:
        raise SchemaProblem(f"{where}.{high_key}", f"must not be below {low_key}")


def _array(spec: dict[str, Any], where: str) -> None:
    items = spec.get("items")
    if not isinstance(items, dict) or "enum" not in items:
        raise SchemaProblem(f"{where}.items", 'must be {"type": "string", "enum": [...]}')
    _only(items, {"type", "enum"}, f"{where}.items")
    if items.get("type", "string") != "string":
        raise SchemaProblem(f"{where}.items.type", 'must be "string"')
    _enum(items["enum"], f"{where}.items.enum")
    _range(spec, "minItems", "maxItems", where, whole=True, top=MAX_ENUM)
    if not isinstance(spec.get("uniqueItems", True), bool):
        raise SchemaProblem(f"{where}.uniqueItems", "must be true or false")


def _required(required: Any, properties: dict[str, Any], where: str) -> None:
    if not isinstance(required, list):
        raise SchemaProblem(f"{where}.required", "must be a list of field names")
    for index, name in enumerate(required):
        if name not in properties:
            raise SchemaProblem(f"{where}.required[{index}]", "names no field of the form")
    if len(set(required)) != len(required):
        raise SchemaProblem(f"{where}.required", "repeats a field")


# -- answers ------------------------------------------------------------------------------------


def fields(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(name, spec, required) per field, in the schema's order."""
    required = set(schema.get("required", []))
    return [(name, spec, name in required) for name, spec in schema.get("properties", {}).items()]


def title(schema: dict[str, Any], name: str) -> str:
    spec = schema.get("properties", {}).get(name, {})
    return str(spec.get("title") or name)


def answer(schema: dict[str, Any], given: Any) -> dict[str, Any]:
    """`given` (an object, or one line of JSON holding one) as the form's answer; a Misfit
    naming the first failing field otherwise."""
    if isinstance(given, str):
        try:
            given = json.loads(given)
        except (ValueError, RecursionError):
            raise Misfit('must be a JSON object like {"field": "value"}') from None
    if not isinstance(given, dict):
        raise Misfit('must be a JSON object like {"field": "value"}')
    strict = {**schema, "additionalProperties": False}
    validator = validating.validator(strict, FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(given), key=_order(schema))
    if errors:
        field, words = _words(errors[0])
        name = field.removeprefix("answer.").split("[")[0].split(".")[0]
        label = title(schema, name) if field != "answer" else None
        raise Misfit(words, field, label)
    return given


def _order(schema: dict[str, Any]) -> Any:
    names = list(schema.get("properties", {}))

    def key(error: ValidationError) -> tuple[int, str]:
        path = list(error.absolute_path)
        name = str(path[0]) if path else _named(error) or ""
        return (names.index(name) if name in names else len(names), error.message)

    return key


def _named(error: ValidationError) -> str | None:
    """The field a `required` or `additionalProperties` error is about."""
    if error.validator == "required":
        found = re.match(r"'(.*)' is a required property", error.message)
        return found.group(1) if found else None
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = [k for k in error.instance if k not in known]
        return str(extra[0]) if extra else None
    return None


TYPE_WORDS = {
    "string": "must be text", "integer": "must be a whole number", "number": "must be a number",
    "boolean": "must be true or false", "array": "must be a list", "object": "must be an object",
}
FORMAT_WORDS = {
    "email": "must be an email address", "uri": "must be a URL like https://example.com",
    "date": "must be a date like 2026-12-01",
}


def _words(error: ValidationError) -> tuple[str, str]:
    """(field, words) for a jsonschema error, in words a person reads."""
    path = "answer" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    kind, limit = str(error.validator), error.validator_value
    if kind in ("required", "additionalProperties"):
        name = _named(error)
        words = "is required" if kind == "required" else "is not a field of this form"
        return (f"answer.{name}" if name else path), words
    words = {
        "type": TYPE_WORDS.get(str(limit), f"must be of type {limit}"),
        "minimum": f"must be at least {limit}",
        "maximum": f"must be at most {limit}",
        "minLength": "must not be empty" if limit == 1 else f"must be at least {limit} characters",
        "maxLength": f"must be at most {limit} characters",
        "enum": "must be one of: " + ", ".join(map(str, limit)) if isinstance(limit, list) else "",
        "pattern": f"must match the pattern {limit}",
        "format": FORMAT_WORDS.get(str(limit), f"must be a {limit}"),
        "minItems": f"must pick at least {limit}",
        "maxItems": f"must pick at most {limit}",
        "uniqueItems": "must not pick the same value twice",
    }.get(kind) or "does not fit the form"
    return path, words
