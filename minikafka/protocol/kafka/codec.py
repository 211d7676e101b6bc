"""Kafka's request and response frames, decoded to and encoded from kio's entities.

A request frame (after its 4-byte size) is a request header then the body:

    header v1   api_key int16, api_version int16, correlation_id int32,
                client_id nullable string with an int16 length (in every header version,
                so a broker can read the header of any ApiVersions request)
    header v2   v1 followed by tagged fields; used by the flexible versions of each API

A response frame is the int32 size, the correlation id, in header v1 (flexible versions)
tagged fields, then the body. ApiVersions responses always use header v0 (KIP-511): the
client cannot know yet whether the broker speaks flexible versions.

Each API version's header versions come from kio's schemas (`__header_schema__`). Requests
are read by this module's struct reader over kio's scalar readers (see "decoding" for why
not kio's entity_reader), responses written by kio's entity_writer; both are built once per
(api key, version). Records fields are read as one bytes object (one copy of the whole
blob, nothing per record) and written as they are (bytes or memoryview).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, Final, cast

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial._parse import get_field_reader, get_reader
from kio.serial.errors import DecodeError
from kio.serial.readers import (
    read_compact_array_length,
    read_int8,
    read_legacy_array_length,
    read_nullable_legacy_string,
    read_unsigned_varint,
)
from kio.static.primitive import i16
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

__all__ = [
    "KafkaCodecError",
    "KafkaRequest",
    "MalformedRequest",
    "ServedVersions",
    "UnsupportedVersion",
    "codecs_loaded",
    "decode_request",
    "encode_response",
    "load_codecs",
    "request_api",
    "request_type",
    "response_type",
    "unsupported_api_versions_response",
]

API_VERSIONS_KEY: Final = 18

# api key -> (min, max): the versions a broker serves, which it passes in (the Kafka API
# layer's registry, server/kafka_api/registry.py). Every version served must have kio
# 0.6.5 schemas.
ServedVersions = Mapping[int, tuple[int, int]]

_FIXED_HEADER: Final = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_SIZE: Final = struct.Struct(">i")
_SIZE_AND_CORRELATION: Final = struct.Struct(">ii")

# A reader takes (buffer, offset) and returns (value, bytes it read), as kio's readers do.
_Reader = Callable[[memoryview, int], tuple[Any, int]]


class KafkaCodecError(Exception):
    """A request frame the broker cannot serve."""


class UnsupportedVersion(KafkaCodecError):
    """Unknown api key, or a version the broker does not serve (or kio has no schema for).

    Only the fixed header fields were parsed. An ApiVersions request is answered with
    `unsupported_api_versions_response` (KIP-511); Kafka closes the connection for others.
    """

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported api key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class MalformedRequest(KafkaCodecError):
    """Bytes that do not decode; Kafka closes the connection for these."""

    def __init__(
        self,
        detail: str,
        api_key: int | None = None,
        correlation_id: int | None = None,
        api_version: int | None = None,
    ) -> None:
        where = "" if api_key is None else f" (api key {api_key} version {api_version})"
        super().__init__(f"malformed request{where}: {detail}")
        self.detail = detail
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True, slots=True)
class KafkaRequest:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: object  # the kio request entity of (api_key, api_version)
    request_header_version: int  # 1, or 2 for flexible versions
    response_header_version: int  # 0, or 1 for flexible versions except ApiVersions


@cache
def request_type(api_key: int, api_version: int) -> type[RequestPayload]:
    """kio's request class; raises kio.index.KioIndexError when kio has no schema for it."""
    return load_request_schema(api_key, api_version)


@cache
def response_type(api_key: int, api_version: int) -> type[ResponsePayload]:
    """kio's response class; raises kio.index.KioIndexError when kio has no schema for it."""
    return load_response_schema(api_key, api_version)


# -- decoding ------------------------------------------------------------------------------
#
# kio's native entity_reader is not used for requests, for two faults of kio 0.6.5 on bytes
# from the network:
# - a tagged field it does not know raises KeyError, where the protocol says to skip it (a
#   newer client may send fields this schema lacks);
# - it allocates an array's storage from the count on the wire before reading any item: a
#   compact array count of 2^32 makes it fail to allocate and abort the whole process.
# So structs holding arrays are read here, the way Kafka's generated readers do (unknown
# tags skipped, counts checked against the bytes left), with kio's native readers for their
# scalar fields, which check lengths before they allocate. A struct with no array anywhere
# inside (FetchPartition, PartitionProduceData, ...) cannot trip the allocation, so kio's
# native reader reads it, many times faster; only when it raises KeyError (an unknown tag)
# is that struct read again here.


@dataclass(frozen=True, slots=True)
class _RequestCodec:
    read_body: _Reader
    request_header_version: int
    response_header_version: int


@cache
def _request_codec(api_key: int, api_version: int) -> _RequestCodec:
    entity = request_type(api_key, api_version)
    return _RequestCodec(
        read_body=_struct_reader(cast(type[Entity], entity)),
        request_header_version=int(entity.__header_schema__.__version__),
        response_header_version=int(
            response_type(api_key, api_version).__header_schema__.__version__
        ),
    )


def decode_request(frame: bytes | bytearray | memoryview, served: ServedVersions) -> KafkaRequest:
    """Decode one request frame, given without its 4-byte size prefix, of a version in
    `served`.

    Raises UnsupportedVersion (the header's fixed fields parsed, the rest not) or
    MalformedRequest; nothing else.
    """
    buffer = memoryview(frame)
    if buffer.ndim != 1 or buffer.format != "B":
        buffer = buffer.cast("B")
    if not buffer.readonly:
        buffer = buffer.toreadonly()  # kio's native readers refuse a writable buffer
    size = len(buffer)
    if size < _FIXED_HEADER.size:
        raise MalformedRequest(f"frame of {size} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _FIXED_HEADER.unpack_from(buffer)
    supported = served.get(api_key)
    if supported is None or not supported[0] <= api_version <= supported[1]:
        raise UnsupportedVersion(api_key, api_version, correlation_id)
    try:
        codec = _request_codec(api_key, api_version)
    except KioIndexError:
        raise UnsupportedVersion(api_key, api_version, correlation_id) from None

    try:
        client_id, used = read_nullable_legacy_string(buffer, _FIXED_HEADER.size)
        offset = _FIXED_HEADER.size + used
        if codec.request_header_version >= 2:
            # RequestHeader defines no tagged fields: every one is skipped.
            offset = _skip_tagged_fields(buffer, offset)
        body, used = codec.read_body(buffer, offset)
    except Exception as e:  # anything kio raises on bad bytes: the stream is unusable
        raise MalformedRequest(
            f"{type(e).__name__}: {e}", api_key, correlation_id, api_version
        ) from e
    # Bytes after the body are ignored, as Kafka's request parsing ignores them: librdkafka
    # 2.16 sends three more after an all-topics Metadata v12 request.
    return KafkaRequest(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
        body=body,
        request_header_version=codec.request_header_version,
        response_header_version=codec.response_header_version,
    )


def _skip_tagged_fields(buffer: memoryview, offset: int) -> int:
    """The offset after a tagged fields section, all of whose fields are skipped."""
    count, used = read_unsigned_varint(buffer, offset)
    offset += used
    for _ in range(count):
        _tag, used = read_unsigned_varint(buffer, offset)
        offset += used
        length, used = read_unsigned_varint(buffer, offset)
        offset += used + length
        if offset > len(buffer):
            raise DecodeError("tagged field runs past the end of the frame")
    return offset


@cache
def _struct_reader(entity_type: type[Entity]) -> _Reader:
    python_reader = _python_struct_reader(entity_type)
    if _holds_an_array(entity_type):
        return python_reader
    native_reader: _Reader = entity_reader(entity_type)

    def read(buffer: memoryview, offset: int) -> tuple[Any, int]:
        try:
            return native_reader(buffer, offset)
        except KeyError:  # a tagged field kio does not know
            return python_reader(buffer, offset)

    return read


@cache
def _holds_an_array(entity_type: type[Entity]) -> bool:
    for field in fields(entity_type):
        kind = classify_field(field)
        if kind.is_array or (isinstance(kind, EntityField) and _holds_an_array(kind.type_)):
            return True
    return False


def _python_struct_reader(entity_type: type[Entity]) -> _Reader:
    untagged: list[tuple[str, _Reader]] = []
    tagged: dict[int, tuple[str, _Reader]] = {}
    absent: dict[str, object] = {}  # the value of a tagged field that was not sent
    for field in fields(entity_type):
        tag = get_field_tag(field)
        reader = _field_reader(entity_type, field, is_tag=tag is not None)
        if tag is None:
            untagged.append((field.name, reader))
        else:
            tagged[int(tag)] = (field.name, reader)
            absent[field.name] = get_tagged_field_default(field)
    flexible = entity_type.__flexible__

    def read(buffer: memoryview, start: int) -> tuple[Any, int]:
        values: dict[str, object] = {}
        offset = start
        for name, read_field in untagged:
            values[name], used = read_field(buffer, offset)
            offset += used
        if flexible:
            values.update(absent)
            count, used = read_unsigned_varint(buffer, offset)
            offset += used
            for _ in range(count):
                tag, used = read_unsigned_varint(buffer, offset)
                offset += used
                length, used = read_unsigned_varint(buffer, offset)
                offset += used
                end = offset + length
                if end > len(buffer):
                    raise DecodeError(f"tagged field {tag} runs past the end of the frame")
                known = tagged.get(tag)
                if known is not None:
                    name, read_field = known
                    # Bounded by the field's own length, which a lying value cannot overrun.
                    values[name], used = read_field(buffer[:end], offset)
                    if used != length:
                        raise DecodeError(f"tagged field {tag} is not {length} bytes long")
                # else: a tag this schema does not know, skipped
                offset = end
        return entity_type(**values), offset - start

    return read


def _field_reader(entity_type: type[Entity], field: Any, *, is_tag: bool) -> _Reader:
    kind = classify_field(field)
    flexible = entity_type.__flexible__
    if isinstance(kind, EntityField):
        struct_reader = _struct_reader(kind.type_)
        # Tagged fields are never null-marked: their absence is what stands for the default.
        return struct_reader if is_tag or not is_optional(field) else _nullable(struct_reader)
    if isinstance(kind, EntityTupleField):
        return _array(_struct_reader(kind.type_), flexible=flexible, nullable=is_optional(field))
    if isinstance(kind, PrimitiveTupleField):
        # Nullability is the array's; its items never are.
        item_reader: _Reader = get_reader(get_schema_field_type(field), flexible, False)
        return _array(item_reader, flexible=flexible, nullable=is_optional(field))
    scalar_reader: _Reader = get_field_reader(entity_type, field, False, is_tag)
    return scalar_reader


def _nullable(struct_reader: _Reader) -> _Reader:
    # A nullable struct is preceded by an int8: negative for null (KIP-893).
    def read(buffer: memoryview, offset: int) -> tuple[Any, int]:
        marker, used = read_int8(buffer, offset)
        if marker < 0:
            return None, used
        value, size = struct_reader(buffer, offset + used)
        return value, used + size

    return read


def _array(item_reader: _Reader, *, flexible: bool, nullable: bool) -> _Reader:
    def read(buffer: memoryview, start: int) -> tuple[Any, int]:
        count: int | None
        if flexible:
            count, used = read_compact_array_length(buffer, start)
        else:
            count, used = read_legacy_array_length(buffer, start)
            if count < 0:
                count = None
        offset = start + used
        if count is None:
            if not nullable:
                raise DecodeError("null array in a non-nullable field")
            return None, used
        # Every item takes at least one byte: a larger count is a lie, refused before any
        # work or allocation.
        if count > len(buffer) - offset:
            raise DecodeError(f"array of {count} items is longer than the frame")
        items = []
        for _ in range(count):
            item, used = item_reader(buffer, offset)
            offset += used
            items.append(item)
        return tuple(items), offset - start

    return read


# -- encoding ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ResponseCodec:
    entity: type[Entity]
    write_body: Callable[[io.BytesIO, Any], None]


@cache
def _response_codec(api_key: int, api_version: int) -> _ResponseCodec:
    entity = cast(type[Entity], response_type(api_key, api_version))
    return _ResponseCodec(entity=entity, write_body=entity_writer(entity))


# -- loading -------------------------------------------------------------------------------
#
# kio's schemas are modules of dataclasses, imported on first use: a version's request and
# response types and the readers and writers built from them cost tens of milliseconds (up
# to 100 for Fetch v16; 1.3 s for all 147 versions served). That work belongs neither on
# the event loop (every connection would stall behind a client's first request of a
# version) nor in the broker's start (tests start hundreds of brokers): the server loads a
# version's codecs in a worker thread the first time a request of it arrives, then
# decodes it on the loop.

_loaded: set[tuple[int, int]] = set()


def request_api(frame: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """(api key, api version) of a request frame, None if it is too short for a header."""
    if len(frame) < _FIXED_HEADER.size:
        return None
    api_key, api_version, _ = _FIXED_HEADER.unpack_from(frame)
    return api_key, api_version


def codecs_loaded(api_key: int, api_version: int, served: ServedVersions) -> bool:
    """Whether decoding and answering this version needs no more loading (also for a
    version the broker does not serve: nothing to load)."""
    supported = served.get(api_key)
    return (
        supported is None
        or not supported[0] <= api_version <= supported[1]
        or (api_key, api_version) in _loaded
    )


def load_codecs(api_key: int, api_version: int, served: ServedVersions) -> None:
    """Import kio's schemas of a version the broker serves and build its request reader and
    response writer (thread-safe: at worst two threads build the same one)."""
    if codecs_loaded(api_key, api_version, served):
        return
    try:
        _request_codec(api_key, api_version)
        _response_codec(api_key, api_version)
    except KioIndexError:
        pass  # decode_request answers UnsupportedVersion
    _loaded.add((api_key, api_version))


def encode_response(request: KafkaRequest, body: object) -> bytes:
    """The whole response frame, size prefix included.

    `body` must be the kio response entity of the request's api key and version (TypeError
    otherwise); kio's own errors for out-of-range values propagate.
    """
    codec = _response_codec(request.api_key, request.api_version)
    if type(body) is not codec.entity:
        raise TypeError(
            f"response to api key {request.api_key} v{request.api_version} must be "
            f"{codec.entity.__module__}.{codec.entity.__qualname__}, not {type(body).__name__}"
        )
    out = io.BytesIO()
    out.write(_SIZE_AND_CORRELATION.pack(0, request.correlation_id))  # size patched below
    if request.response_header_version >= 1:
        out.write(b"\x00")  # no tagged fields in the header
    codec.write_body(out, body)
    size = out.tell() - _SIZE.size
    out.seek(0)
    out.write(_SIZE.pack(size))
    return out.getvalue()


def unsupported_api_versions_response(correlation_id: int, ranges: ServedVersions) -> bytes:
    """The whole frame answering an ApiVersions request newer than the broker serves.

    KIP-511: an ApiVersions v0 response (header v0) with UNSUPPORTED_VERSION and the
    ranges the broker serves (`ranges`), so the client retries with the highest version it
    shares. (Kafka lists only ApiVersions' own range here; listing all is equally valid v0.)
    """
    body = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            ApiVersionV0(api_key=i16(key), min_version=i16(low), max_version=i16(high))
            for key, (low, high) in sorted(ranges.items())
        ),
    )
    request = KafkaRequest(
        api_key=API_VERSIONS_KEY,
        api_version=0,
        correlation_id=correlation_id,
        client_id=None,
        body=None,
        request_header_version=1,
        response_header_version=0,
    )
    return encode_response(request, body)
