"""Tests' kio entities of any version from one plain description.

kio has one class per message version. A test describes a response once, as nested dicts
and lists with plain values (ints for error codes, milliseconds for durations and times),
and `build` makes the entity of a version: fields the version lacks are dropped, fields it
has but the description leaves out take their schema defaults. (The broker's own
conversion, server/kafka_api/model.py, is strict instead.)
"""

from __future__ import annotations

import datetime
import functools
import types
import typing
import uuid
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar, cast

from kio.schema.errors import ErrorCode as KioErrorCode

E = TypeVar("E")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class _Field(typing.NamedTuple):
    name: str
    kafka_type: str
    entity: type | None  # the nested entity class, for entity fields and arrays of them
    required: bool


@functools.cache
def _fields_of(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        out.append(
            _Field(
                f.name,
                f.metadata.get("kafka_type", ""),
                _entity_in(hints[f.name]),
                f.default is MISSING and f.default_factory is MISSING,
            )
        )
    return tuple(out)


def _entity_in(hint: Any) -> type | None:
    """The entity class inside `X`, `X | None` or `tuple[X, ...]`, if X is an entity."""
    if isinstance(hint, type) and hasattr(hint, "__dataclass_fields__"):
        return hint
    origin = typing.get_origin(hint)
    if origin in (tuple, typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            found = _entity_in(arg)
            if found is not None:
                return found
    return None


def build(cls: type[E], values: Mapping[str, Any]) -> E:
    """The entity `cls` from `values` (see the module docstring). A field the version
    requires and `values` lacks is a bug in the caller: TypeError names it."""
    kwargs: dict[str, Any] = {}
    for f in _fields_of(cast(type, cls)):
        if f.name not in values:
            if f.required:
                raise TypeError(f"{cls.__qualname__} v{getattr(cls, '__version__', '?')}: {f.name}")
            continue
        kwargs[f.name] = _convert(f, values[f.name])
    return cls(**kwargs)


def _convert(f: _Field, value: Any) -> Any:
    if value is None:
        return None
    if f.entity is not None:
        if isinstance(value, Mapping):
            return build(f.entity, value)
        return tuple(build(f.entity, v) for v in value)
    kind = f.kafka_type
    if kind == "error_code":
        return KioErrorCode(int(value))
    if kind.startswith("timedelta"):
        return datetime.timedelta(milliseconds=value)
    if kind.startswith("datetime"):
        return None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)
    if kind == "uuid":
        return value if isinstance(value, uuid.UUID) else uuid.UUID(int=int(value))
    if isinstance(value, list):
        return tuple(value)
    return value
