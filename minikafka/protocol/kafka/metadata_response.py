"""Metadata responses (v0-13) encoded by hand, each topic's partitions reusable as bytes.

kio's generic writer spent about 0.35 s of the broker's event loop on one answer naming
30,000 partitions, and every client asks again when leaders move: at a failover, every
producer and consumer at once. Here a topic's partitions array is written by
`encode_partitions`, whose bytes the caller may keep for as long as the topic's partitions
do not change (server/kafka_api/metadata.py keeps them with its answers), so that a
response is mostly the joining of kept bytes. The output is byte for byte kio's for the
same values, for every version (tests/unit/test_kafka_metadata_response.py checks it
against kio).

Layout (Kafka's MetadataResponse.json): throttle_time_ms (v3+); the brokers, each node id,
host, port and rack (v1+); cluster id (v2+); controller id (v1+); the topics, each error
code, name (nullable from v12), topic id (v10+), is_internal (v1+), the partitions and
topic_authorized_operations (v8+), a partition being error code, index, leader, leader
epoch (v7+), replicas, ISR and offline replicas (v5+); cluster_authorized_operations
(v8-10); error code (v13+). v9+ is the flexible encoding: compact arrays and strings, and
empty tagged-field sections.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from minikafka.protocol.kafka.wire import append_compact_length, append_nullable_string

LAST_VERSION: Final = 13
FIRST_FLEXIBLE_VERSION: Final = 9

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_HEAD: Final = struct.Struct(">hii")  # error code, index, leader
_HEAD_EPOCH: Final = struct.Struct(">hiii")  # ... and the leader epoch (v7+)
_ZERO_UUID: Final = bytes(16)


class PartitionLike(Protocol):
    @property
    def error_code(self) -> int: ...
    @property
    def partition_index(self) -> int: ...
    @property
    def leader_id(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def replica_nodes(self) -> tuple[int, ...]: ...
    @property
    def isr_nodes(self) -> tuple[int, ...]: ...
    @property
    def offline_replicas(self) -> tuple[int, ...]: ...


class TopicLike(Protocol):
    @property
    def error_code(self) -> int: ...
    @property
    def name(self) -> str | None: ...
    @property
    def topic_id(self) -> uuid.UUID | None: ...
    @property
    def is_internal(self) -> bool: ...
    @property
    def partitions(self) -> Sequence[PartitionLike]: ...
    @property
    def topic_authorized_operations(self) -> int: ...


class BrokerLike(Protocol):
    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def rack(self) -> str | None: ...


class ResponseLike(Protocol):
    @property
    def throttle_time(self) -> int: ...
    @property
    def brokers(self) -> Sequence[BrokerLike]: ...
    @property
    def cluster_id(self) -> str | None: ...
    @property
    def controller_id(self) -> int: ...
    @property
    def topics(self) -> Sequence[TopicLike]: ...
    @property
    def cluster_authorized_operations(self) -> int: ...
    @property
    def error_code(self) -> int: ...


def partitions_format(version: int) -> int:
    """Versions whose partitions arrays are the same bytes share a format: v0-4, v5-6 (with
    offline replicas), v7-8 (with leader epochs), v9+ (flexible)."""
    if version >= FIRST_FLEXIBLE_VERSION:
        return 9
    if version >= 7:
        return 7
    if version >= 5:
        return 5
    return 0


def _array_length(buf: bytearray, n: int, flexible: bool) -> None:
    if flexible:
        append_compact_length(buf, n)
    else:
        buf += _I32.pack(n)


def _int32s(buf: bytearray, values: tuple[int, ...], flexible: bool) -> None:
    _array_length(buf, len(values), flexible)
    if values:
        buf += struct.pack(f">{len(values)}i", *values)


def encode_partitions(version: int, partitions: Sequence[PartitionLike]) -> bytes:
    """One topic's partitions array, its length included: the same bytes for every version
    of one `partitions_format`."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    with_epoch = version >= 7
    with_offline = version >= 5
    buf = bytearray()
    _array_length(buf, len(partitions), flexible)
    for p in partitions:
        if with_epoch:
            buf += _HEAD_EPOCH.pack(p.error_code, p.partition_index, p.leader_id, p.leader_epoch)
        else:
            buf += _HEAD.pack(p.error_code, p.partition_index, p.leader_id)
        _int32s(buf, p.replica_nodes, flexible)
        _int32s(buf, p.isr_nodes, flexible)
        if with_offline:
            _int32s(buf, p.offline_replicas, flexible)
        if flexible:
            buf.append(0)  # partition tagged fields
    return bytes(buf)


def encode_metadata_response(
    version: int,
    correlation_id: int,
    response: ResponseLike,
    partitions_bytes: Callable[[TopicLike], bytes] | None = None,
) -> bytes:
    """The whole response frame, size prefix and header included. `partitions_bytes` gives
    a topic's partitions array as `encode_partitions(version, ...)` would (kept bytes);
    without it they are encoded here."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    buf = bytearray(_I32.pack(0))  # the size, patched at the end
    buf += _I32.pack(correlation_id)
    if flexible:
        buf.append(0)  # response header v1: no tagged fields
    if version >= 3:
        buf += _I32.pack(response.throttle_time)
    _array_length(buf, len(response.brokers), flexible)
    for b in response.brokers:
        buf += _I32.pack(b.node_id)
        append_nullable_string(buf, b.host, flexible)
        buf += _I32.pack(b.port)
        if version >= 1:
            append_nullable_string(buf, b.rack, flexible)
        if flexible:
            buf.append(0)  # broker tagged fields
    if version >= 2:
        append_nullable_string(buf, response.cluster_id, flexible)
    if version >= 1:
        buf += _I32.pack(response.controller_id)
    _array_length(buf, len(response.topics), flexible)
    for t in response.topics:
        buf += _I16.pack(t.error_code)
        if t.name is None and version < 12:
            raise ValueError(f"Metadata v{version} cannot answer a topic without a name")
        append_nullable_string(buf, t.name, flexible)
        if version >= 10:
            buf += _ZERO_UUID if t.topic_id is None else t.topic_id.bytes
        if version >= 1:
            buf.append(1 if t.is_internal else 0)
        if partitions_bytes is None:
            buf += encode_partitions(version, t.partitions)
        else:
            buf += partitions_bytes(t)
        if version >= 8:
            buf += _I32.pack(t.topic_authorized_operations)
        if flexible:
            buf.append(0)  # topic tagged fields
    if 8 <= version <= 10:
        buf += _I32.pack(response.cluster_authorized_operations)
    if version >= 13:
        buf += _I16.pack(response.error_code)
    if flexible:
        buf.append(0)  # response tagged fields
    buf[0:4] = _I32.pack(len(buf) - 4)
    return bytes(buf)
