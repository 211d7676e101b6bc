"""Frames of minikafka's RPC on a TCP connection.

    u32  size        bytes that follow this field
    u32  meta_size   bytes of msgpack metadata that follow
    ...  meta        msgpack: [header, body]
    ...  data        raw bytes (record batches) referenced from the body as [offset, length]

Request header: [api_key, api_version, correlation_id, client_id].
Response header: [correlation_id, error_code, error_message]; a non-zero error code means
the request as a whole failed (unknown API, malformed body) and the body is nil.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import msgpack

from minikafka.protocol.errors import ErrorCode, InvalidRequestError, KafkaError, error_for_code
from minikafka.protocol.transport import SIZE_PREFIX, Chunk, FrameError
from minikafka.rpc.messages import API_KEY_OF_REQUEST, API_TYPES, ApiKey
from minikafka.rpc.schema import Encoder, from_wire, to_wire

FRAME_PREFIX = struct.Struct(">II")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class RequestDecodeError(Exception):
    """The header parsed but the request cannot be served: answer `error` to `header`."""

    def __init__(self, header: RequestHeader, error: KafkaError) -> None:
        super().__init__(str(error))
        self.header = header
        self.error = error


def _pack_meta(header: list[Any], body: Any, encoder: Encoder) -> bytes:
    packed: bytes = msgpack.packb([header, body], use_bin_type=True)
    return packed


def _frame(meta: bytes, encoder: Encoder) -> list[Chunk]:
    size = 4 + len(meta) + encoder.data_size
    return [FRAME_PREFIX.pack(size, len(meta)) + meta, *encoder.chunks]


def encode_request(header: RequestHeader, body: Any) -> list[Chunk]:
    enc = Encoder()
    wire_body = to_wire(body, enc)
    head = [header.api_key, header.api_version, header.correlation_id, header.client_id]
    return _frame(_pack_meta(head, wire_body, enc), enc)


def encode_response(correlation_id: int, body: Any, error: KafkaError | None = None) -> list[Chunk]:
    enc = Encoder()
    if error is not None:
        head = [correlation_id, int(error.code), error.message]
        return _frame(_pack_meta(head, None, enc), enc)
    wire_body = to_wire(body, enc)
    return _frame(_pack_meta([correlation_id, 0, None], wire_body, enc), enc)


def _split(frame: bytes | bytearray | memoryview) -> tuple[Any, memoryview]:
    """frame = everything after the size field: meta_size, meta, data."""
    view = memoryview(frame)
    if len(view) < 4:
        raise FrameError(f"frame of {len(view)} bytes has no metadata length")
    (meta_size,) = SIZE_PREFIX.unpack_from(view, 0)
    if meta_size > len(view) - 4:
        raise FrameError(f"metadata length {meta_size} exceeds frame of {len(view)} bytes")
    try:
        meta = msgpack.unpackb(view[4 : 4 + meta_size], raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as e:
        raise FrameError(f"frame metadata is not msgpack: {e}") from e
    if not isinstance(meta, list) or len(meta) != 2 or not isinstance(meta[0], list):
        raise FrameError("frame metadata is not [header, body]")
    return meta, view[4 + meta_size :]


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Any]:
    """Returns (header, typed body). Raises FrameError when even the header is unusable, and
    RequestDecodeError when the header is fine but the API or the body is not."""
    (head, body), data = _split(frame)
    if len(head) != 4 or not all(isinstance(x, int) and not isinstance(x, bool) for x in head[:3]):
        raise FrameError("request header is not [api_key, api_version, correlation_id, client_id]")
    client_id = head[3] if isinstance(head[3], str) else None
    header = RequestHeader(head[0], head[1], head[2], client_id)
    try:
        key = ApiKey(header.api_key)
    except ValueError:
        raise RequestDecodeError(
            header, InvalidRequestError(f"unknown api key {header.api_key}")
        ) from None
    request_type = API_TYPES[key][0]
    try:
        return header, from_wire(request_type, body, data)
    except InvalidRequestError as e:
        raise RequestDecodeError(header, e) from e
    except (TypeError, ValueError) as e:
        raise RequestDecodeError(
            header, InvalidRequestError(f"malformed {request_type.__name__}: {e}")
        ) from e


@dataclass(frozen=True, slots=True)
class ResponseFrame:
    correlation_id: int
    body: Any  # None when `error` is set
    error: KafkaError | None


def decode_response(frame: bytes | bytearray | memoryview, response_type: type) -> ResponseFrame:
    """Decode a response; a request-level failure comes back as `error`, not raised."""
    (head, body), data = _split(frame)
    if len(head) != 3 or not isinstance(head[0], int) or not isinstance(head[1], int):
        raise FrameError("response header is not [correlation_id, error_code, error_message]")
    correlation_id, code, message = head
    if code != ErrorCode.NONE:
        return ResponseFrame(correlation_id, None, error_for_code(code, message or ""))
    try:
        typed: Any = from_wire(response_type, body, data)
    except (InvalidRequestError, TypeError, ValueError) as e:
        raise FrameError(f"malformed {response_type.__name__}: {e}") from e
    return ResponseFrame(correlation_id, typed, None)


def response_type_for(request: Any) -> type:
    return API_TYPES[API_KEY_OF_REQUEST[type(request)]][1]


def api_key_for(request: Any) -> ApiKey:
    return API_KEY_OF_REQUEST[type(request)]
