"""Kafka's protocol from the client's side: a kio request entity as the frame any Kafka
client sends, and a response frame back as kio's entity. For the tools' own connections
(client/kafka_wire.py) and for a broker authenticating to another with SASL."""

from __future__ import annotations

import asyncio
import io
import struct
from typing import Any

_SIZE = struct.Struct(">i")


def request_frame(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    """The size-prefixed frame of a kio request entity, in the header version its schema
    names."""
    # Imported here: kio's schemas take a noticeable part of a second to import, which
    # every `minikafka` command would pay at start.
    from kio.serial import entity_writer
    from kio.static.primitive import i16, i32

    header = request.__header_schema__(
        request_api_key=i16(request.__api_key__),
        request_api_version=i16(request.__version__),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    out = io.BytesIO()
    entity_writer(type(header))(out, header)
    entity_writer(type(request))(out, request)
    payload = out.getvalue()
    return _SIZE.pack(len(payload)) + payload


def parse_response(request: Any, frame: bytes) -> tuple[int, Any]:
    """(correlation id, kio response entity) of a response frame (its size prefix read
    off) answering a request of `request`'s api key and version."""
    from kio.serial import entity_reader

    from minikafka.protocol.kafka.codec import response_type

    (correlation_id,) = _SIZE.unpack_from(frame)
    rtype = response_type(request.__api_key__, request.__version__)
    offset = _SIZE.size
    if rtype.__header_schema__.__version__ >= 1:
        offset += 1  # the header's tagged fields: brokers send none
    value, _ = entity_reader(rtype)(memoryview(frame), offset)
    return correlation_id, value


class CorrelationMismatchError(OSError):
    """A response came with another correlation id than the request's: the connection is out
    of step with its requests (a late answer to an earlier one), so it cannot be used on."""

    def __init__(self, got: int, expected: int) -> None:
        super().__init__(f"answer {got} came where {expected}'s was due")
        self.got = got
        self.expected = expected


async def exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    request: Any,
    correlation_id: int,
    client_id: str | None,
) -> Any:
    """Send `request` (a kio request entity) and read the next response frame as its kio
    response entity. CorrelationMismatchError when that frame answers another request;
    asyncio.IncompleteReadError when the stream ends first. No timeout: the caller bounds
    the wait (and drops the connection when it passes)."""
    writer.write(request_frame(request, correlation_id, client_id))
    await writer.drain()
    (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
    got, response = parse_response(request, await reader.readexactly(size))
    if got != correlation_id:
        raise CorrelationMismatchError(got, correlation_id)
    return response
