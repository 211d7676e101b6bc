"""Between kio's entities (a class per API version) and the API layer's models (one per API).

kio has a class for every version of every message: Metadata v0 ... v13 are fourteen
request classes, each with the fields its version has. A handler reads and answers one
*model* per API instead (models/), a frozen dataclass holding the union of the fields of
the versions served, as Kafka's plain values: ints for error codes, milliseconds for
durations and times. A field some versions lack has Kafka's default in the model.

`read` makes the model of a decoded request, `write` the response entity of the version
the client asked for. Both are strict, so that no field is ever lost or made up in
silence: a request field the model lacks, a model field with no default that the version
lacks, or a field the response version requires and the model lacks, raises
ModelMismatch when the version's plan is first built (tests/unit/test_kafka_api_models.py
builds every plan of every version served). Model fields the version lacks are left out of
the response: they are other versions' (the same test checks that each belongs to one).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, cast

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial._introspect import EntityField, EntityTupleField, classify_field

__all__ = ["ModelMismatch", "Records", "read", "write"]

M = TypeVar("M")
E = TypeVar("E")

# A records field as decoded (a view of the received frame) or as written.
Records = bytes | bytearray | memoryview | None

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MS = datetime.timedelta(milliseconds=1)


class ModelMismatch(TypeError):
    """A model and a kio entity that cannot be converted into each other without losing or
    inventing a field (a bug in the model, found when the version is first served)."""


def _model_of(hint: Any) -> type | None:
    """The dataclass inside `X`, `X | None` or `tuple[X, ...]`, if there is one."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (tuple, typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


@functools.cache
def _model_fields(model: type) -> dict[str, tuple[dataclasses.Field[Any], type | None]]:
    hints = typing.get_type_hints(model)
    return {f.name: (f, _model_of(hints[f.name])) for f in dataclasses.fields(model)}


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


# -- reading -------------------------------------------------------------------------------

_Convert = Callable[[Any], Any]


def _millis(value: datetime.timedelta | datetime.datetime | None) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return int(value / _MS)
    return int((value - _EPOCH) / _MS)


@functools.cache
def _read_plan(model: type, entity: type) -> tuple[tuple[str, _Convert | None], ...]:
    fields = _model_fields(model)
    plan: list[tuple[str, _Convert | None]] = []
    present: set[str] = set()
    for ef in dataclasses.fields(entity):
        got = fields.get(ef.name)
        if got is None:
            raise ModelMismatch(
                f"{model.__qualname__} has no field {ef.name!r} of "
                f"{entity.__module__}.{entity.__qualname__}"
            )
        present.add(ef.name)
        plan.append((ef.name, _read_converter(model, ef, got[1])))
    for name, (mf, _) in fields.items():
        if name not in present and not _has_default(mf):
            raise ModelMismatch(
                f"{model.__qualname__}.{name} needs a default: "
                f"{entity.__module__}.{entity.__qualname__} lacks it"
            )
    return tuple(plan)


def _read_converter(model: type, ef: dataclasses.Field[Any], sub: type | None) -> _Convert | None:
    kind = classify_field(ef)
    if isinstance(kind, EntityField | EntityTupleField):
        if sub is None:
            raise ModelMismatch(f"{model.__qualname__}.{ef.name} must be a model")
        sub_model, sub_entity = sub, kind.type_
        if isinstance(kind, EntityTupleField):
            return lambda v: (
                None if v is None else tuple(_read(sub_model, sub_entity, i) for i in v)
            )
        return lambda v: None if v is None else _read(sub_model, sub_entity, v)
    kafka_type = ef.metadata.get("kafka_type", "")
    if kafka_type.startswith(("timedelta", "datetime")):
        return _millis
    if kafka_type == "error_code":
        return int
    return None  # as kio has it


def _read(model: type[M], entity: type, value: object) -> M:
    kwargs: dict[str, Any] = {}
    for name, convert in _read_plan(cast(type, model), entity):
        v = getattr(value, name)
        kwargs[name] = v if convert is None else convert(v)
    return model(**kwargs)


def read(model: type[M], entity: object) -> M:
    """The model of a kio request entity (see the module docstring)."""
    return _read(model, type(entity), entity)


# -- writing -------------------------------------------------------------------------------


@functools.cache
def _write_plan(entity: type, model: type) -> tuple[tuple[str, _Convert | None], ...]:
    fields = _model_fields(model)
    plan: list[tuple[str, _Convert | None]] = []
    for ef in dataclasses.fields(entity):
        got = fields.get(ef.name)
        if got is None:
            if not _has_default(ef):
                raise ModelMismatch(
                    f"{model.__qualname__} lacks {ef.name!r}, which "
                    f"{entity.__module__}.{entity.__qualname__} requires"
                )
            continue  # the version's default
        plan.append((ef.name, _write_converter(model, ef, got[1])))
    return tuple(plan)


def _write_converter(model: type, ef: dataclasses.Field[Any], sub: type | None) -> _Convert | None:
    kind = classify_field(ef)
    if isinstance(kind, EntityField | EntityTupleField):
        if sub is None:
            raise ModelMismatch(f"{model.__qualname__}.{ef.name} must be a model")
        sub_entity = cast(type, kind.type_)
        if isinstance(kind, EntityTupleField):
            return lambda v: None if v is None else tuple(_write(sub_entity, i) for i in v)
        return lambda v: None if v is None else _write(sub_entity, v)
    kafka_type = ef.metadata.get("kafka_type", "")
    if kafka_type == "error_code":
        return KioErrorCode
    if kafka_type.startswith("timedelta"):
        return lambda v: datetime.timedelta(milliseconds=v)
    if kafka_type.startswith("datetime"):
        return lambda v: None if v < 0 else _EPOCH + datetime.timedelta(milliseconds=v)
    return None


def _write(entity: type[E], value: object) -> E:
    kwargs: dict[str, Any] = {}
    for name, convert in _write_plan(cast(type, entity), cast(type, type(value))):
        v = getattr(value, name)
        kwargs[name] = v if convert is None or v is None else convert(v)
    return entity(**kwargs)


def write(entity: type[E], model: object) -> E:
    """The kio entity `entity` (a response version) of a model (see the module docstring)."""
    return _write(entity, model)
