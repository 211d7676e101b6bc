"""Typed messages <-> msgpack, driven by dataclass type hints.

A message is a frozen dataclass; on the wire it is a msgpack array of its fields in
declaration order (compact, and the order is the schema). Nested dataclasses, lists, tuples,
dicts, optionals and the special `Records` type are supported.

`Records` fields never go through msgpack: the encoder moves their bytes into the frame's
data section and writes `[offset, length]` in their place; the decoder hands back a
memoryview of the received frame. Record batches thus cross the wire as opaque bytes, and a
sender may supply a file region (a `FileRegion`) that the transport sends with sendfile.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, Union

from minikafka.protocol.errors import InvalidRequestError
from minikafka.protocol.transport import FileRegion


class Records:
    """Marker type for record-batch bytes carried in the frame's data section.

    On encode the value may be bytes, bytearray, memoryview or a FileRegion; on decode it is
    a memoryview (zero-copy slice of the received frame).
    """


RecordsValue = Union[bytes, bytearray, memoryview, FileRegion]  # noqa: UP007 (runtime alias)


class DataRef(NamedTuple):
    offset: int
    length: int


class Encoder:
    """Collects data-section chunks while turning a message into plain msgpack objects."""

    def __init__(self) -> None:
        self.chunks: list[bytes | bytearray | memoryview | FileRegion] = []
        self.data_size = 0

    def records(self, value: Any) -> list[int]:
        if value is None:
            return [-1, 0]
        size = value.size if not isinstance(value, bytes | bytearray | memoryview) else len(value)
        ref = [self.data_size, size]
        if size:
            self.chunks.append(value)
            self.data_size += size
        return ref


_MessageT = TypeVar("_MessageT")
_Decoder = Callable[[Any, memoryview], Any]
_EncoderFn = Callable[[Any, Encoder], Any]
_decoders: dict[Any, _Decoder] = {}
_encoders: dict[Any, _EncoderFn] = {}


def _bad(what: str) -> InvalidRequestError:
    return InvalidRequestError(f"malformed message: {what}")


def _hints(cls: type) -> list[tuple[str, Any]]:
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name]) for f in dataclasses.fields(cls)]


# A message type's codec is generated once as straight-line Python (one function per
# dataclass, fields by position, primitive fields checked inline by exact type and handed
# to their general decoder only when that check fails): the replication path decodes and
# encodes a fetch request and response per round trip, and a closure call plus an
# isinstance per field cost more than the rest of the request's handling.
_PRIMITIVES = (int, str, bytes, float, bool)


def _exact_item(tp: Any) -> Any:
    """For list[X] / tuple[X, ...] of an int, str or bool X: X (items of exactly that type
    need no conversion), else None."""
    if typing.get_origin(tp) in (list, tuple):
        args = typing.get_args(tp)
        if args and args[0] in (int, str, bool):
            return args[0]
    return None


def _built_from_fields(cls: type) -> bool:
    """Whether an instance may be made by setting its `__dict__` to its fields: what the
    generated `__init__` of a dataclass does, field by field (through object.__setattr__
    when frozen, 11 calls for a LeaderAndIsr partition state), when it does nothing else."""
    return (
        "__slots__" not in cls.__dict__
        and not hasattr(cls, "__post_init__")
        and all(f.init for f in dataclasses.fields(cls))
    )


def _compiled_dataclass_decoder(
    cls: type, types_: list[Any], fields: list[tuple[str, _Decoder]], generic: _Decoder
) -> _Decoder:
    n = len(fields)
    env: dict[str, Any] = {
        "_cls": cls,
        "_generic": generic,
        "_list": list,
        "_tuple": tuple,
        "_new": object.__new__,
        "_set": object.__setattr__,
    }
    lines = [
        "def dec(obj, data):",
        "    t = obj.__class__",
        f"    if (t is not _list and t is not _tuple) or len(obj) < {n}:",
        "        return _generic(obj, data)",
    ]
    for i, ((_, d), ftp) in enumerate(zip(fields, types_, strict=True)):
        env[f"_d{i}"] = d
        exact = _exact_item(ftp)
        if ftp is Any:
            lines.append(f"    v{i} = obj[{i}]")
        elif ftp in _PRIMITIVES:
            env[f"_t{i}"] = ftp
            lines.append(f"    v{i} = obj[{i}]")
            lines.append(f"    if v{i}.__class__ is not _t{i}:")
            lines.append(f"        v{i} = _d{i}(v{i}, data)")
        elif exact is not None and typing.get_origin(ftp) is list:
            # A list of exactly-typed items (a LeaderAndIsr state has three) is taken as
            # msgpack made it, checked by a plain loop: a generator per list cost more
            # than the rest of the state's decoding.
            env[f"_t{i}"] = exact
            lines.append(f"    v{i} = obj[{i}]")
            lines.append(f"    if v{i}.__class__ is _list:")
            lines.append(f"        for x in v{i}:")
            lines.append(f"            if x.__class__ is not _t{i}:")
            lines.append(f"                v{i} = _d{i}(v{i}, data)")
            lines.append("                break")
            lines.append("    else:")
            lines.append(f"        v{i} = _d{i}(v{i}, data)")
        else:
            lines.append(f"    v{i} = _d{i}(obj[{i}], data)")
    if _built_from_fields(cls):
        items = ", ".join(f"{name!r}: v{i}" for i, (name, _) in enumerate(fields))
        lines.append("    o = _new(_cls)")
        lines.append(f"    _set(o, '__dict__', {{{items}}})")
        lines.append("    return o")
    else:
        lines.append(f"    return _cls({', '.join(f'v{i}' for i in range(n))})")
    exec("\n".join(lines), env)
    compiled: _Decoder = env["dec"]
    return compiled


def _compiled_dataclass_encoder(cls: type, hints: list[tuple[str, Any]]) -> _EncoderFn:
    env: dict[str, Any] = {}
    items = []
    for i, (name, ftp) in enumerate(hints):
        if ftp is Any or ftp in _PRIMITIVES:
            items.append(f"v.{name}")
        else:
            env[f"_e{i}"] = _encoder_for(ftp)
            items.append(f"_e{i}(v.{name}, e)")
    exec(f"def enc(v, e):\n    return [{', '.join(items)}]", env)
    compiled: _EncoderFn = env["enc"]
    return compiled


def _decoder_for(tp: Any) -> _Decoder:
    cached = _decoders.get(tp)
    if cached is not None:
        return cached
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    dec: _Decoder
    if tp is Records:

        def dec(obj: Any, data: memoryview) -> Any:
            if not isinstance(obj, list | tuple) or len(obj) != 2:
                raise _bad("records reference is not [offset, length]")
            off, length = obj
            if not isinstance(off, int) or not isinstance(length, int):
                raise _bad("records reference is not integers")
            if off == -1:
                return None
            if off < 0 or length < 0 or off + length > len(data):
                raise _bad(f"records reference [{off}, {length}] outside the data section")
            return data[off : off + length]

    elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
        fields = [(name, _decoder_for(ftp)) for name, ftp in _hints(tp)]
        cls = tp

        def generic(obj: Any, data: memoryview) -> Any:
            if not isinstance(obj, list | tuple):
                raise _bad(f"{cls.__name__} is not an array")
            if len(obj) < len(fields):
                # Trailing fields may be absent (older senders) when they have defaults.
                defaults = {
                    f.name
                    for f in dataclasses.fields(cls)
                    if f.default is not dataclasses.MISSING
                    or f.default_factory is not dataclasses.MISSING
                }
                missing = [n for n, _ in fields[len(obj) :] if n not in defaults]
                if missing:
                    raise _bad(f"{cls.__name__} lacks {', '.join(missing)}")
            kwargs = {name: d(v, data) for (name, d), v in zip(fields, obj, strict=False)}
            return cls(**kwargs)

        dec = _compiled_dataclass_decoder(cls, [ftp for _, ftp in _hints(tp)], fields, generic)

    elif origin in (Union, types.UnionType) and Records in args:
        dec = _decoder_for(Records)  # `Records | <python buffer types> | None`
    elif origin in (Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) != 1:
            raise TypeError(f"unsupported union {tp}")
        inner = _decoder_for(non_none[0])

        def dec(obj: Any, data: memoryview) -> Any:
            return None if obj is None else inner(obj, data)

    elif origin in (list, tuple):
        item = _decoder_for(args[0])
        as_tuple = origin is tuple
        # Items of exactly this type need no conversion: checked in one pass, no call per
        # item (floats and bytes may need one: an int for a float, a str is not bytes).
        exact = _exact_item(tp)

        def dec(obj: Any, data: memoryview) -> Any:
            if not isinstance(obj, list | tuple):
                raise _bad(f"expected an array, got {type(obj).__name__}")
            if exact is not None and all(type(v) is exact for v in obj):
                return tuple(obj) if as_tuple else obj if type(obj) is list else list(obj)
            items = [item(v, data) for v in obj]
            return tuple(items) if as_tuple else items

    elif origin is dict:
        kdec, vdec = _decoder_for(args[0]), _decoder_for(args[1])

        def dec(obj: Any, data: memoryview) -> Any:
            if not isinstance(obj, dict):
                raise _bad(f"expected a map, got {type(obj).__name__}")
            return {kdec(k, data): vdec(v, data) for k, v in obj.items()}

    elif tp in (int, str, bytes, float):
        prim = tp

        def dec(obj: Any, data: memoryview) -> Any:
            if prim is int and (not isinstance(obj, int) or isinstance(obj, bool)):
                raise _bad(f"expected an integer, got {type(obj).__name__}")
            if prim is float and isinstance(obj, int) and not isinstance(obj, bool):
                return float(obj)
            if prim is not int and not isinstance(obj, prim):
                raise _bad(f"expected {prim.__name__}, got {type(obj).__name__}")
            return obj

    elif tp is bool:

        def dec(obj: Any, data: memoryview) -> Any:
            if not isinstance(obj, bool):
                raise _bad(f"expected a boolean, got {type(obj).__name__}")
            return obj

    elif tp is Any:

        def dec(obj: Any, data: memoryview) -> Any:
            return obj

    else:
        raise TypeError(f"unsupported field type {tp!r}")
    _decoders[tp] = dec
    return dec


def _encoder_for(tp: Any) -> _EncoderFn:
    cached = _encoders.get(tp)
    if cached is not None:
        return cached
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    enc: _EncoderFn
    if tp is Records:

        def enc(v: Any, e: Encoder) -> Any:
            return e.records(v)

    elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
        enc = _compiled_dataclass_encoder(tp, _hints(tp))

    elif origin in (Union, types.UnionType) and Records in args:
        enc = _encoder_for(Records)
    elif origin in (Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        inner = _encoder_for(non_none[0])

        def enc(v: Any, e: Encoder) -> Any:
            return None if v is None else inner(v, e)

    elif origin in (list, tuple) and (args[0] in _PRIMITIVES or args[0] is Any):
        # msgpack packs a list or tuple of them as it is: no call per item (a LeaderAndIsr
        # of 10,000 partitions has three such lists in each).

        def enc(v: Any, e: Encoder) -> Any:
            return v

    elif origin in (list, tuple):
        item = _encoder_for(args[0])

        def enc(v: Any, e: Encoder) -> Any:
            return [item(x, e) for x in v]

    elif origin is dict:
        kenc, venc = _encoder_for(args[0]), _encoder_for(args[1])

        def enc(v: Any, e: Encoder) -> Any:
            return {kenc(k, e): venc(x, e) for k, x in v.items()}

    else:

        def enc(v: Any, e: Encoder) -> Any:
            return v

    _encoders[tp] = enc
    return enc


def to_wire(message: Any, encoder: Encoder) -> Any:
    return _encoder_for(type(message))(message, encoder)


def from_wire(cls: type[_MessageT], obj: Any, data: memoryview) -> _MessageT:
    result: _MessageT = _decoder_for(cls)(obj, data)
    return result
