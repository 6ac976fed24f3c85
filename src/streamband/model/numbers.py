"""Where a number goes, a number: the base of every validated model (specs, configs,
API bodies).

pydantic's lax mode reads ``true`` as 1, ``"1_000"`` as 1000 and ``"inf"`` as infinity
wherever a number goes; :class:`Numbers` refuses a boolean or a string in a number field
(and in the elements of a list, tuple or mapping of numbers) before pydantic converts it,
so ``duration_s: yes`` is an error, not one second.

Examples
--------
>>> class Run(Numbers):
...     seconds: float
>>> Run(seconds=5).seconds
5.0
>>> try:
...     Run(seconds=True)
... except ValueError as err:
...     print(err.errors()[0]["msg"])
Value error, expected a number, not a boolean
"""

from __future__ import annotations

import enum
import types
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationInfo, field_validator

_NUMBER, _OTHER = "number", "other"


def _takes(ann: Any) -> set[str]:
    """What a field of annotation ``ann`` takes: ``number`` (int or float, not bool),
    ``other`` (anything a boolean or a string may legitimately be)."""
    origin = get_origin(ann)
    if origin in (Union, types.UnionType):
        return set().union(*(_takes(a) for a in get_args(ann)))
    if origin is Annotated:
        return _takes(get_args(ann)[0])
    if ann in (int, float):
        return {_NUMBER}
    if ann is type(None):
        return set()
    if origin is Literal or ann in (str, bool, bytes) or (
            isinstance(ann, type) and issubclass(ann, PurePath | enum.Enum)):
        return {_OTHER}
    return {_OTHER} if origin is None else {"container"}


def _problem(ann: Any, value: Any) -> str | None:
    """Why ``value`` cannot go where ``ann`` goes (a boolean or string for a number),
    or None."""
    takes = _takes(ann)
    if _NUMBER in takes and _OTHER not in takes:
        if isinstance(value, bool):
            return "expected a number, not a boolean"
        if isinstance(value, str):
            return "expected a number, not a string"
    origin = get_origin(ann)
    if origin in (Union, types.UnionType):
        for a in get_args(ann):
            if get_origin(a) is not None and (p := _problem(a, value)) is not None:
                return p
        return None
    args = get_args(ann)
    if origin in (list, tuple, set, frozenset) and isinstance(value, list | tuple):
        for i, v in enumerate(value):
            item = args[0] if origin is not tuple or (len(args) == 2 and args[1] is ...) \
                else (args[i] if i < len(args) else None)
            if item is not None and (p := _problem(item, v)) is not None:
                return f"element {i}: {p}"
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        for k, v in value.items():
            if (p := _problem(args[1], v)) is not None:
                return f"{str(k)[:40]!r}: {p}"
    return None


class Numbers(BaseModel):
    """A model whose number fields take numbers only: a boolean or a string there is
    refused (one error naming the field), never converted."""

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_only(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and (p := _problem(field.annotation, value)) is not None:
            raise ValueError(p)
        return value
