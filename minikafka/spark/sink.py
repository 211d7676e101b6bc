"""The `minikafka` sink: `df.write` / `df.writeStream .format("minikafka")`, as Spark's Kafka
sink: a `value` column (string or binary) is required; `key` (string or binary), `topic`
(string), `partition` (int) and `headers` (array<struct<key string, value binary>>) are
used when present; the `topic` option overrides the column; other columns are ignored.

Guarantee: at-least-once, like Spark's Kafka sink. Each write task sends its rows with
the producer (acks=all unless `kafka.acks` says otherwise) and succeeds once every record is
acknowledged. A failed task or job is not rolled back: records already acknowledged stay in
the log, and a retried task or micro-batch sends its rows again (duplicates, never gaps).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from minikafka.spark.arrow import SINK_COLUMN_TYPES, batch_to_records
from minikafka.spark.cluster_calls import RecordSender
from minikafka.spark.options import SinkOptions, SparkOptionError, parse_sink_options

log = logging.getLogger(__name__)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one write task sent: records acknowledged per "topic-partition"."""

    records: int = 0
    partitions: Mapping[str, int] = field(default_factory=dict)


def check_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """Spark's Kafka sink's checks of the input columns, before any task runs."""
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    if "value" not in types:
        raise SparkOptionError("Required attribute 'value' not found in the data to write")
    if topic_option is None and "topic" not in types:
        raise SparkOptionError(
            "topic option required when no 'topic' attribute is present. Use the topic "
            "option for setting a topic."
        )
    for name, allowed in SINK_COLUMN_TYPES.items():
        if name in types and types[name] not in allowed:
            raise SparkOptionError(
                f"{name} attribute type must be {' or '.join(allowed)}, not {types[name]}"
            )


def _write(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
    with contextlib.closing(RecordSender(options)) as sender:
        for batch in batches:
            if batch.num_rows:
                sender.send(batch_to_records(batch, options.topic))
        partitions = sender.finish()
        return SinkCommitMessage(sender.sent, dict(partitions))


def _summary(messages: list[WriterCommitMessage | None]) -> tuple[int, int]:
    done = [m for m in messages if isinstance(m, SinkCommitMessage)]
    return len(done), sum(m.records for m in done)


class MinikafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise SparkOptionError(
                "mode('overwrite') is not supported by the minikafka sink: a topic is an "
                "append-only log and cannot be truncated; use mode('append')"
            )
        self.options = parse_sink_options(options)
        check_sink_schema(schema, self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        return _write(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        tasks, records = _summary(messages)
        log.info("minikafka sink: %d records acknowledged by %d tasks", records, tasks)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        tasks, records = _summary(messages)
        log.warning(
            "minikafka sink: the write failed; %d records from %d tasks that finished stay in "
            "the log (at-least-once: nothing is rolled back, a rerun writes them again)",
            records,
            tasks,
        )


class MinikafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        # Streaming output modes (append, update, complete) all append records to the log.
        self.options = parse_sink_options(options)
        check_sink_schema(schema, self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        return _write(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _, records = _summary(messages)
        log.info("minikafka sink: batch %d: %d records acknowledged", batchId, records)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        tasks, records = _summary(messages)
        log.warning(
            "minikafka sink: micro-batch %d failed; %d records from %d tasks that finished "
            "stay in the log and are sent again when the batch is retried (at-least-once)",
            batchId,
            records,
            tasks,
        )
