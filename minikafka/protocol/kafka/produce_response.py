"""Produce responses (v3-13) encoded by hand, because kio's generic writer is too slow.

Every acknowledged produce request is answered with one of these, and kio's entity_writer
(a chain of per-field closures, plus building the kio entity with datetime and timedelta
fields first) cost about a tenth of a broker's CPU for them. This writer packs each
partition's fixed fields with one precomputed struct and appends constant tails, into one
bytearray. Its output is byte for byte kio's for the same values, for every version
(tests/unit/test_kafka_produce_response.py checks it against kio).

Layout (Kafka's ProduceResponse.json): the topics, each its name (v3-12) or topic id (v13+)
and per partition: index, error code, base offset, log append time, log start offset (v5+),
record errors (KIP-467: each refused record's batch index and message) and error message
(v8+); then throttle_time_ms. v9+ is the flexible encoding:
compact arrays and strings, and empty tagged-field sections (v10+'s tagged CurrentLeader
and NodeEndpoints are left at their defaults, which are not written).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from minikafka.protocol.kafka.wire import append_compact_length, append_nullable_string

FIRST_VERSION: Final = 3
LAST_VERSION: Final = 13
FIRST_FLEXIBLE_VERSION: Final = 9
FIRST_TOPIC_ID_VERSION: Final = 13

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_HEADER: Final = struct.Struct(">ii")  # size (patched at the end), correlation id
# index, error code, base offset, log append time (v2+), log start offset (v5+)
_PARTITION_V2: Final = struct.Struct(">ihqq")
_PARTITION_V5: Final = struct.Struct(">ihqqq")

# What follows log_start_offset when error_message is null: record_errors (empty), the
# null error message and (flexible) the partition's empty tagged fields.
_NULL_TAIL_LEGACY: Final = b"\x00\x00\x00\x00\xff\xff"  # int32 0, int16 -1
_NULL_TAIL_FLEXIBLE: Final = b"\x01\x00\x00"  # uvarint 0+1, uvarint 0 (null), no tags
# throttle_time_ms: never throttled (and, flexible, the body's empty tagged fields)
_THROTTLE_LEGACY: Final = b"\x00\x00\x00\x00"
_THROTTLE_FLEXIBLE: Final = b"\x00\x00\x00\x00\x00"


@dataclass(frozen=True, slots=True)
class ProducePartitionData:
    index: int
    error_code: int
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    # KIP-467 (v8+): (batch index, message) of each record the batch was refused for
    record_errors: Sequence[tuple[int, str | None]] = ()
    log_append_time: int = -1  # the leader's stamp for a LogAppendTime topic, else -1


@dataclass(frozen=True, slots=True)
class ProduceTopicData:
    name: str
    topic_id: uuid.UUID
    partitions: Sequence[ProducePartitionData]


def encode_produce_response(
    version: int, correlation_id: int, topics: Sequence[ProduceTopicData]
) -> bytes:
    """The whole response frame, size prefix and header included."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        raise ValueError(f"Produce response version {version} is not in 3..13")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    with_lso = version >= 5
    with_errors = version >= 8
    by_id = version >= FIRST_TOPIC_ID_VERSION
    pack = _PARTITION_V5.pack if with_lso else _PARTITION_V2.pack

    buf = bytearray(_HEADER.pack(0, correlation_id))
    if flexible:
        buf.append(0)  # response header v1: no tagged fields
        append_compact_length(buf, len(topics))
    else:
        buf += _I32.pack(len(topics))
    for t in topics:
        if by_id:
            buf += t.topic_id.bytes
        else:
            name = t.name.encode()
            if flexible:
                append_compact_length(buf, len(name))
            else:
                buf += _I16.pack(len(name))
            buf += name
        partitions = t.partitions
        if flexible:
            append_compact_length(buf, len(partitions))
        else:
            buf += _I32.pack(len(partitions))
        for p in partitions:
            if with_lso:
                buf += pack(
                    p.index, p.error_code, p.base_offset, p.log_append_time, p.log_start_offset
                )
            else:
                buf += pack(p.index, p.error_code, p.base_offset, p.log_append_time)
            if not with_errors:
                continue
            message, record_errors = p.error_message, p.record_errors
            if message is None and not record_errors:
                buf += _NULL_TAIL_FLEXIBLE if flexible else _NULL_TAIL_LEGACY
                continue
            if flexible:
                append_compact_length(buf, len(record_errors))
            else:
                buf += _I32.pack(len(record_errors))
            for batch_index, why in record_errors:
                buf += _I32.pack(batch_index)
                append_nullable_string(buf, why, flexible)
                if flexible:
                    buf.append(0)  # record error's tagged fields
            append_nullable_string(buf, message, flexible)
            if flexible:
                buf.append(0)  # partition tagged fields
        if flexible:
            buf.append(0)  # topic tagged fields
    buf += _THROTTLE_FLEXIBLE if flexible else _THROTTLE_LEGACY
    _I32.pack_into(buf, 0, len(buf) - 4)
    return bytes(buf)
