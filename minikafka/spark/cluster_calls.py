"""Every call the Spark source and sink make to a minikafka cluster, in one place: listing
partitions, earliest and latest offsets (driver side), reading an offset range and sending
records (executor side). Should the tools move to another Kafka client, this file moves
with them; nothing else in `minikafka.spark` touches a client.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from minikafka.client.consumer import ConsumerRecord
from minikafka.client.errors import KafkaTimeoutError
from minikafka.client.sync import ProducerRecord, SyncAdmin, SyncConsumer, SyncProducer
from minikafka.common import TopicPartition
from minikafka.protocol.errors import OffsetOutOfRangeError
from minikafka.spark.offsets import OffsetRange, report_data_loss
from minikafka.spark.options import SinkOptions, SourceOptions, Subscription, select_partitions

log = logging.getLogger(__name__)


class OffsetsClient:
    """The driver's view of the cluster: which partitions a subscription reads, and where
    their logs start and end. Clients are made on first use and closed by `close`."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._admin: SyncAdmin | None = None
        self._consumer: SyncConsumer | None = None

    def _clients(self) -> tuple[SyncAdmin, SyncConsumer]:
        if self._admin is None:
            self._admin = SyncAdmin(self._options.bootstrap_servers)
        if self._consumer is None:
            self._consumer = SyncConsumer(
                self._options.bootstrap_servers, **self._options.consumer_config
            )
        return self._admin, self._consumer

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        admin, _ = self._clients()
        topics = {t.name: [p.partition for p in t.partitions] for t in admin.describe_topics(None)}
        return select_partitions(subscription, topics)

    def earliest(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Each partition's log start offset."""
        return self._clients()[1].beginning_offsets(tps) if tps else {}

    def latest(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Each partition's high watermark: what a consumer can read up to."""
        return self._clients()[1].end_offsets(tps) if tps else {}

    def close(self) -> None:
        for client in (self._consumer, self._admin):
            if client is not None:
                client.close()
        self._admin = self._consumer = None


# Consumers kept between the reads of one Python worker (Spark reuses its workers), as
# spark-sql-kafka pools its consumers: a micro-batch then pays no connection set-up and
# metadata round trip per partition. A consumer is taken out while a read uses it.
_idle_consumers: dict[tuple[str, tuple[tuple[str, Any], ...]], list[SyncConsumer]] = {}


@contextlib.contextmanager
def _pooled_consumer(options: SourceOptions) -> Iterator[SyncConsumer]:
    key = (options.bootstrap_servers, tuple(sorted(options.consumer_config.items())))
    idle = _idle_consumers.setdefault(key, [])
    consumer = idle.pop() if idle else None
    if consumer is None:
        consumer = SyncConsumer(
            options.bootstrap_servers, auto_offset_reset="none", **options.consumer_config
        )
    try:
        yield consumer
    except BaseException:
        consumer.close()  # a failed or abandoned read: start the next one afresh
        raise
    idle.append(consumer)


def read_range(options: SourceOptions, rng: OffsetRange) -> Iterator[list[ConsumerRecord]]:
    """The records of one offset range, in chunks, from whichever broker leads the partition
    (the consumer follows leader changes). The range ends at or below the high watermark it
    was planned with, so reading it again gives the same records.

    An offset below the log start (retention deleted it meanwhile) is data loss: an error
    with failOnDataLoss, else a warning and a skip to the log start. No progress for
    kafkaConsumer.pollTimeoutMs is an error.
    """
    tp = rng.tp
    with _pooled_consumer(options) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, rng.from_offset)
        position = rng.from_offset
        last_progress = time.monotonic()
        while position < rng.until_offset:
            try:
                records = consumer.poll(min(1000, options.poll_timeout_ms))
            except OffsetOutOfRangeError:
                log_start = consumer.beginning_offsets([tp])[tp]
                if position >= log_start:
                    raise
                report_data_loss(
                    f"Cannot fetch offset {position} of {tp.topic}-{tp.partition}: the log "
                    f"now starts at {log_start}",
                    options.fail_on_data_loss,
                )
                consumer.seek(tp, log_start)
                position = log_start
                continue
            new_position = consumer.position(tp)
            if new_position > position:
                last_progress = time.monotonic()
                position = new_position
            elif time.monotonic() - last_progress > options.poll_timeout_ms / 1000:
                raise KafkaTimeoutError(
                    f"Cannot fetch records in [{position}, {rng.until_offset}) of "
                    f"{tp.topic}-{tp.partition} within kafkaConsumer.pollTimeoutMs="
                    f"{options.poll_timeout_ms}"
                )
            if records and records[-1].offset >= rng.until_offset:
                records = [r for r in records if r.offset < rng.until_offset]
            if records:
                yield records


class RecordSender:
    """One write task's producer: sends the rows of each input batch and, at `finish`,
    waits until every record is acknowledged (or raises the first failure). `close` when
    done, failed or not."""

    def __init__(self, options: SinkOptions) -> None:
        self._producer = SyncProducer(options.bootstrap_servers, **options.producer_config)
        self._pending: list[concurrent.futures.Future[list[Any]]] = []
        self.sent = 0
        self.partitions: dict[str, int] = {}  # "topic-partition" -> records acknowledged

    def send(self, records: Sequence[ProducerRecord]) -> None:
        self._pending.append(self._producer.send_many(records))
        self.sent += len(records)
        # Surface a failure early instead of queueing the rest of the task behind it.
        if self._pending[0].done():
            self._collect(self._pending.pop(0))

    def _collect(self, fut: concurrent.futures.Future[list[Any]]) -> None:
        for md in fut.result():
            key = f"{md.topic}-{md.partition}"
            self.partitions[key] = self.partitions.get(key, 0) + 1

    def finish(self) -> Mapping[str, int]:
        self._producer.flush()
        while self._pending:
            self._collect(self._pending.pop(0))
        return self.partitions

    def close(self) -> None:
        # Also after a failure: what was handed to the producer is still delivered (or fails
        # on its own) instead of being cut off mid-batch; nothing is rolled back.
        self._producer.close()
