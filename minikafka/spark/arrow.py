"""Records <-> Arrow, in the Kafka source's schema (spark-sql-kafka's columns and types).

The source yields Arrow record batches, not Python rows: Spark takes them as they are, if
their Arrow schema is exactly the one it derives from the Spark schema (timestamps in
microseconds, UTC).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

if TYPE_CHECKING:
    from confluent_kafka import Message

# librdkafka's timestamp types -> Kafka's TimestampType ids, which Spark's timestampType
# column holds: NoTimestampType -1, CreateTime 0, LogAppendTime 1.
TIMESTAMP_TYPES = {0: -1, 1: 0, 2: 1}

_BASE_COLUMNS = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
_HEADERS_COLUMN = "headers array<struct<key: string, value: binary>>"

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]


def spark_schema_ddl(include_headers: bool) -> str:
    """The source's schema as Spark DDL."""
    return f"{_BASE_COLUMNS}, {_HEADERS_COLUMN}" if include_headers else _BASE_COLUMNS


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = list(_BASE_FIELDS)
    if include_headers:
        fields.append(pa.field("headers", pa.list_(HEADER_TYPE)))
    return pa.schema(fields)


def _header_items(record: Message) -> list[tuple[str, str | bytes | None]]:
    headers = record.headers()  # a list of (key, value) for a consumed record, or None
    if isinstance(headers, dict):
        return list(headers.items())
    return headers or []


def records_to_batch(records: Sequence[Message], include_headers: bool) -> pa.RecordBatch:
    """One Arrow record batch of librdkafka's records (all of one partition, none an error
    event)."""
    n = len(records)
    topic = records[0].topic() if n else ""
    partition = records[0].partition() if n else 0
    timestamps = [r.timestamp() for r in records]  # (librdkafka's type, ms)
    arrays: list[pa.Array] = [
        pa.array([r.key() for r in records], pa.binary()),
        pa.array([r.value() for r in records], pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array([r.offset() for r in records], pa.int64()),
        # Kafka timestamps are milliseconds; Spark's are microseconds.
        pa.array([ms * 1000 for _, ms in timestamps], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")
        ),
        pa.array([TIMESTAMP_TYPES.get(kind, -1) for kind, _ in timestamps], pa.int32()),
    ]
    if include_headers:
        arrays.append(
            pa.array(
                [[{"key": k, "value": v} for k, v in _header_items(r)] for r in records],
                pa.list_(HEADER_TYPE),
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


class SinkColumnError(ValueError):
    """A column of the sink's input that has the wrong type, or a row it cannot send."""


# Spark's Kafka sink: the columns it reads and the types each may have.
SINK_COLUMN_TYPES = {
    "topic": ("string",),
    "key": ("string", "binary"),
    "value": ("string", "binary"),
    "partition": ("int",),
    "headers": ("array<struct<key:string,value:binary>>",),
}


def _as_bytes(values: list[Any]) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in values]


class OutgoingRecord(NamedTuple):
    """One row of the sink's input as a record to send (partition None: the producer's
    partitioner picks it)."""

    topic: str
    value: bytes | None
    key: bytes | None
    partition: int | None
    headers: list[tuple[str, str | bytes | None]] | None  # librdkafka's type; values bytes


def _headers(entries: list[dict[str, Any]]) -> list[tuple[str, str | bytes | None]]:
    out: list[tuple[str, str | bytes | None]] = []
    for e in entries:
        if e["key"] is None:
            # A header's value may be null in Kafka, its key may not (RecordHeader refuses it).
            raise SinkColumnError("a header with a null key: Kafka's header keys are strings")
        out.append((e["key"], e["value"]))
    return out


def batch_to_records(batch: pa.RecordBatch, topic_option: str | None) -> list[OutgoingRecord]:
    """The rows of one input batch as records to send. The `topic` option overrides the
    column; a row that ends up with no topic is an error (as in Spark's Kafka sink)."""
    names = batch.schema.names
    n = batch.num_rows

    def column(name: str) -> list[Any] | None:
        return batch.column(names.index(name)).to_pylist() if name in names else None

    values = column("value")
    if values is None:
        raise SinkColumnError("Required attribute 'value' not found")
    keys = column("key")
    partitions = column("partition")
    headers = column("headers")
    if topic_option is not None:
        topics: list[Any] = [topic_option] * n
    else:
        topics = column("topic") or [None] * n
        if None in topics:
            raise SinkColumnError(
                "null topic present in the data. Use the topic option for setting a topic."
            )
    value_bytes = _as_bytes(values)
    key_bytes = _as_bytes(keys) if keys is not None else [None] * n
    out: list[OutgoingRecord] = []
    for i in range(n):
        h = headers[i] if headers is not None else None
        out.append(
            OutgoingRecord(
                topics[i],
                value_bytes[i],
                key_bytes[i],
                partitions[i] if partitions is not None else None,
                _headers(h) if h else None,
            )
        )
    return out
