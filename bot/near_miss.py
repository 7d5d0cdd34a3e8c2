"""A mistyped key of the config named with the key it was most likely meant to be."""

from __future__ import annotations

import difflib
import typing
from typing import Any

from pydantic import BaseModel


def did_you_mean(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """`; did you mean gates?` for an unknown key at `loc` close to a key its section takes
    (`[[gate]]`, `[default]`, `timout`), else nothing."""
    section: Any = model
    for part in loc[:-1]:
        if isinstance(part, str):
            field = section.model_fields.get(part) if _is_model(section) else None
            section = _model_in(field.annotation) if field is not None else None
    if not _is_model(section) or not isinstance(loc[-1], str):
        return ""
    keys = [f.alias or name for name, f in section.model_fields.items()]
    near = difflib.get_close_matches(loc[-1], keys, n=1, cutoff=0.7)
    return f"; did you mean {near[0]}?" if near else ""


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The section model a field holds: itself, a list's items, or an optional one."""
    if _is_model(annotation):
        return typing.cast(type[BaseModel], annotation)
    for arg in typing.get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None
