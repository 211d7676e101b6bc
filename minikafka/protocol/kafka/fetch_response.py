"""Fetch responses (v4-17) encoded by hand, so that record batches leave by sendfile.

kio writes a whole response into one buffer, which would mean reading every fetched batch
from its segment file into Python first. This writer produces the frame as chunks instead:
bytes for the fields, and each partition's records as what the log handed over (a file
region goes from the page cache to the socket with os.sendfile, as Kafka's FileRecords
does). Its output is byte for byte kio's for the same values, for every version
(tests/unit/test_kafka_fetch_response.py checks it against kio).

Layout (Kafka's FetchResponse.json): throttle_time_ms, error_code and session_id (v7+),
then per topic its name (v4-12) or topic id (v13+) and per partition: index, error code,
HW, last stable offset, log start offset (v5+), aborted transactions (always empty here:
no transactions), preferred read replica (v11+) and the records. v12+ is the flexible
encoding: compact arrays, strings and bytes, and empty tagged-field sections.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from minikafka.protocol.kafka.wire import append_compact_length
from minikafka.protocol.transport import FileRegion

FIRST_FLEXIBLE_VERSION: Final = 12
FIRST_TOPIC_ID_VERSION: Final = 13

RecordsChunk = bytes | bytearray | memoryview | FileRegion
Chunk = bytes | bytearray | memoryview | FileRegion

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_PARTITION_HEAD: Final = struct.Struct(">ihqq")  # index, error code, HW, last stable offset
_I64: Final = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class FetchPartitionData:
    partition_index: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: RecordsChunk | None
    preferred_read_replica: int = -1  # v11+ (KIP-392); -1: none


@dataclass(frozen=True, slots=True)
class FetchTopicData:
    name: str
    topic_id: uuid.UUID
    partitions: Sequence[FetchPartitionData]


def _size(records: RecordsChunk) -> int:
    if isinstance(records, bytes | bytearray | memoryview):
        return len(records)
    return records.size


def encode_fetch_response(
    version: int,
    correlation_id: int,
    error_code: int,
    session_id: int,
    topics: Sequence[FetchTopicData],
) -> list[Chunk]:
    """The whole response frame (size prefix and header included) as chunks; records
    chunks are passed through untouched (the sender closes file regions)."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    chunks: list[Chunk] = []
    buf = bytearray()

    def array_size(n: int) -> None:
        if flexible:
            append_compact_length(buf, n)
        else:
            buf.extend(_I32.pack(n))

    buf += _I32.pack(correlation_id)
    if flexible:
        buf.append(0)  # response header v1: no tagged fields
    buf += _I32.pack(0)  # throttle_time_ms
    if version >= 7:
        buf += _I16.pack(error_code)
        buf += _I32.pack(session_id)
    array_size(len(topics))
    for t in topics:
        if version >= FIRST_TOPIC_ID_VERSION:
            buf += t.topic_id.bytes
        else:
            name = t.name.encode()
            if flexible:
                append_compact_length(buf, len(name))
            else:
                buf += _I16.pack(len(name))
            buf += name
        array_size(len(t.partitions))
        for p in t.partitions:
            # No transactions: the last stable offset is the HW.
            buf += _PARTITION_HEAD.pack(
                p.partition_index, p.error_code, p.high_watermark, p.high_watermark
            )
            if version >= 5:
                buf += _I64.pack(p.log_start_offset)
            array_size(0)  # aborted transactions
            if version >= 11:
                buf += _I32.pack(p.preferred_read_replica)
            records = p.records
            if records is None:
                buf += b"\x00" if flexible else _I32.pack(-1)
            else:
                size = _size(records)
                if flexible:
                    append_compact_length(buf, size)
                else:
                    buf += _I32.pack(size)
                if size:
                    chunks.append(bytes(buf))
                    chunks.append(records)
                    buf = bytearray()
                elif not isinstance(records, bytes | bytearray | memoryview):
                    records.close()  # an empty region: nothing to send, nobody else closes it
            if flexible:
                buf.append(0)  # partition tagged fields
        if flexible:
            buf.append(0)  # topic tagged fields
    if flexible:
        buf.append(0)  # response tagged fields
    chunks.append(bytes(buf))
    total = sum(_size(c) for c in chunks)
    chunks.insert(0, _I32.pack(total))
    return chunks
