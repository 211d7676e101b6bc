"""Every call the Spark source and sink make to a minikafka cluster, in one place: listing
partitions, earliest and latest offsets (driver side), reading an offset range and sending
records (executor side). They run on librdkafka (confluent-kafka) over Kafka's protocol;
should the tools move to another Kafka client, this file moves with them: nothing else in
`minikafka.spark` touches a client.

confluent-kafka is imported inside the functions, as everywhere in minikafka (the broker
image has no Kafka client).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from minikafka.client.librdkafka import (
    RETRY_BACKOFF_S,
    client_config,
    consume_ready,
    kafka_error_text,
    new_consumer,
    new_producer,
    position,
    retrying,
    transient_metadata_error,
    watermarks,
)
from minikafka.common import TopicPartition
from minikafka.spark.arrow import OutgoingRecord
from minikafka.spark.offsets import OffsetRange, report_data_loss
from minikafka.spark.options import SinkOptions, SourceOptions, Subscription, select_partitions

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, Message

log = logging.getLogger(__name__)


MAX_WAIT_S = 1.0  # a read waits this long at most per poll, to check its deadline


def _watermarks(consumer: Consumer, tp: TopicPartition, timeout_s: float) -> tuple[int, int]:
    return watermarks(consumer, tp.topic, tp.partition, timeout_s)


def _consumer_config(
    options: SourceOptions, props: Mapping[str, str], **fixed: Any
) -> dict[str, Any]:
    return client_config(
        options.bootstrap_servers,
        # The source commits nothing: Spark's checkpoint holds the offsets.
        {**props, "enable.auto.commit": False, **fixed},
    )


class OffsetsClient:
    """The driver's view of the cluster: which partitions a subscription reads, and where
    their logs start and end. Its consumer (which joins no group) is made on first use and
    closed by `close`."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._consumer: Consumer | None = None

    @property
    def _timeout_s(self) -> float:
        return self._options.api_timeout_ms / 1000

    def _client(self) -> Consumer:
        if self._consumer is None:
            options = self._options
            self._consumer = new_consumer(_consumer_config(options, options.driver_consumer_config))
        return self._consumer

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        consumer = self._client()
        md = retrying(
            "the cluster's metadata",
            self._timeout_s,
            lambda remaining: consumer.list_topics(timeout=remaining),
        )
        topics = {
            name: sorted(t.partitions)
            for name, t in md.topics.items()
            if t.error is None or t.partitions
        }
        return select_partitions(subscription, topics)

    def watermarks(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """Each partition's (log start offset, high watermark)."""
        consumer = self._client()
        return {tp: _watermarks(consumer, tp, self._timeout_s) for tp in tps}

    def earliest(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Each partition's log start offset."""
        return {tp: low for tp, (low, _) in self.watermarks(tps).items()}

    def latest(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Each partition's high watermark: what a consumer can read up to."""
        return {tp: high for tp, (_, high) in self.watermarks(tps).items()}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Kafka's ListOffsets by timestamp, from each partition's leader: the first offset
        whose record's timestamp is at or after the partition's timestamp, -1 where no
        record's is. Asked again after a transient error (a leader moving)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as RdTopicPartition

        if not timestamps:
            return {}
        consumer = self._client()
        asked = [RdTopicPartition(tp.topic, tp.partition, ts) for tp, ts in timestamps.items()]

        def ask(seconds: float) -> dict[TopicPartition, int]:
            found = consumer.offsets_for_times(asked, timeout=seconds)
            for r in found:
                if r.error is not None:
                    raise KafkaException(r.error)
            # librdkafka's OFFSET_END (-1): no record at or after the timestamp
            return {TopicPartition(r.topic, r.partition): r.offset for r in found}

        def refresh(seconds: float) -> None:
            consumer.list_topics(timeout=seconds)  # to learn of a new leader

        return retrying("offsets for timestamps", self._timeout_s, ask, refresh)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
        self._consumer = None


# Consumers kept between the reads of one Python worker (Spark reuses its workers), as
# spark-sql-kafka pools its consumers: a micro-batch then pays no connection set-up and
# metadata round trip per partition. A consumer is taken out while a read uses it. An idle
# librdkafka consumer still talks to its cluster (and keeps trying one that has gone), so
# one unused for IDLE_TIMEOUT_S is closed at the pool's next use (Spark ends a Python worker
# idle that long, and its consumers with it).
IDLE_TIMEOUT_S = 60.0
_idle_consumers: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[Consumer, float]]] = {}


def _close_long_idle(now: float) -> None:
    for idle in _idle_consumers.values():
        for entry in [e for e in idle if now - e[1] > IDLE_TIMEOUT_S]:
            idle.remove(entry)
            entry[0].close()


@contextlib.contextmanager
def _pooled_consumer(options: SourceOptions) -> Iterator[Consumer]:
    _close_long_idle(time.monotonic())
    key = (options.bootstrap_servers, tuple(sorted(options.consumer_config.items())))
    idle = _idle_consumers.setdefault(key, [])
    consumer = idle.pop()[0] if idle else None
    if consumer is None:
        # auto.offset.reset=error: an offset that is gone is never skipped silently; the
        # read sees an error event and decides (data loss, by failOnDataLoss).
        consumer = new_consumer(
            _consumer_config(
                options,
                options.consumer_config,
                **{"auto.offset.reset": "error", "enable.auto.offset.store": False},
            )
        )
    try:
        yield consumer
    except BaseException:
        consumer.close()  # a failed or abandoned read: start the next one afresh
        raise
    consumer.unassign()  # stops its fetching while it waits for the next read
    idle.append((consumer, time.monotonic()))


class ReadTimeoutError(TimeoutError):
    """A read made no progress for kafkaConsumer.pollTimeoutMs."""


def read_range(options: SourceOptions, rng: OffsetRange) -> Iterator[list[Message]]:
    """The records of one offset range, in chunks of at most kafka.max.poll.records, from
    whichever broker leads the partition (librdkafka follows leader changes). The range ends
    at or below the high watermark it was planned with, so reading it again gives the same
    records.

    An offset below the log start (retention deleted it meanwhile) is data loss: an error
    with failOnDataLoss, else a warning and a skip to the log start; so is a range past the
    end of a log that has shrunk (the rest of it is skipped). No progress for
    kafkaConsumer.pollTimeoutMs is an error.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka import TopicPartition as RdTopicPartition

    tp = rng.tp
    timeout_s = options.poll_timeout_ms / 1000
    with _pooled_consumer(options) as consumer:
        consumer.assign([RdTopicPartition(tp.topic, tp.partition, rng.from_offset)])
        next_offset = rng.from_offset
        last_progress = time.monotonic()
        while next_offset < rng.until_offset:
            records: list[Message] = []
            before = next_offset
            for msg in consume_ready(
                consumer, options.read_chunk_records, min(MAX_WAIT_S, timeout_s)
            ):
                err = msg.error()
                if err is None:
                    p, offset = position(msg)
                    if p != tp.partition or msg.topic() != tp.topic:
                        continue  # (never expected: a pooled consumer's previous partition)
                    if next_offset <= offset < rng.until_offset:
                        records.append(msg)
                    next_offset = max(next_offset, offset + 1)
                elif err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    # Fetching this partition has stopped: assigned again, it goes on.
                    next_offset = _after_out_of_range(consumer, options, rng, next_offset, err)
                    if next_offset < rng.until_offset:
                        consumer.assign([RdTopicPartition(tp.topic, tp.partition, next_offset)])
                    break
                elif err.fatal():
                    raise KafkaException(err)
                # Anything else (a broker down, a leader moving) librdkafka retries.
            now = time.monotonic()
            if next_offset > before:
                last_progress = now
            elif now - last_progress > timeout_s:
                raise ReadTimeoutError(
                    f"Cannot fetch records in [{next_offset}, {rng.until_offset}) of "
                    f"{tp.topic}-{tp.partition} within kafkaConsumer.pollTimeoutMs="
                    f"{options.poll_timeout_ms}"
                )
            if records:
                yield records


def _after_out_of_range(
    consumer: Consumer, options: SourceOptions, rng: OffsetRange, offset: int, err: KafkaError
) -> int:
    """Where a read goes on after its offset was out of range, by Spark's rules: below the
    log start, data loss and the log start; at or past the log's end (it has shrunk), data
    loss and the end of the range. Within the log (a stale leader answered), the same offset
    again."""
    tp = rng.tp
    low, high = _watermarks(consumer, tp, options.api_timeout_ms / 1000)
    if offset < low:
        report_data_loss(
            f"Cannot fetch offset {offset} of {tp.topic}-{tp.partition}: the log now starts "
            f"at {low} ({kafka_error_text(err)})",
            options.fail_on_data_loss,
        )
        return low
    if offset >= high:
        report_data_loss(
            f"Cannot fetch offsets [{offset}, {rng.until_offset}) of {tp.topic}-{tp.partition}: "
            f"the log now ends at {high}",
            options.fail_on_data_loss,
        )
        return rng.until_offset
    return offset


class DeliveryError(RuntimeError):
    """A record the cluster did not acknowledge."""


class RecordSender:
    """One write task's producer: sends the rows of each input batch and, at `finish`,
    waits until every record is acknowledged (or raises the first failure). `close` when
    done, failed or not."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options
        self._producer = new_producer(
            client_config(options.bootstrap_servers, options.producer_config)
        )
        self._known_topics: set[str] = set()
        self._failure: str | None = None
        self.sent = 0
        self.partitions: dict[str, int] = {}  # "topic-partition" -> records acknowledged

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        # librdkafka calls this inside poll() and flush(), on this thread.
        if err is not None:
            if self._failure is None:
                self._failure = (
                    f"Failed to send a record to {msg.topic()}-{msg.partition()}: "
                    f"{kafka_error_text(err)}"
                )
            return
        key = f"{msg.topic()}-{msg.partition()}"
        self.partitions[key] = self.partitions.get(key, 0) + 1

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise DeliveryError(self._failure)

    def _await_topic(self, topic: str) -> None:
        """Wait for the topic's metadata (creating it, if the brokers auto-create topics) up
        to kafka.max.block.ms, as Kafka's producer blocks its first send to a topic: a topic
        that cannot be had fails the task once, naming it, not once per record."""
        from confluent_kafka import KafkaException

        timeout_s = self._options.max_block_ms / 1000
        deadline = time.monotonic() + timeout_s
        last: str | None = None
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                md = self._producer.list_topics(topic, timeout=remaining)
            except KafkaException as e:
                last = kafka_error_text(e.args[0])
                continue
            t = md.topics.get(topic)
            if t is not None and t.error is None and t.partitions:
                self._known_topics.add(topic)
                return
            if t is not None and t.error is not None:
                # (Unknown after a producer's metadata request, which asks the brokers to
                # create it: they do not create topics, auto.create.topics.enable=false.)
                if not transient_metadata_error(t.error):
                    raise DeliveryError(f"Topic {topic}: {kafka_error_text(t.error)}")
                last = kafka_error_text(t.error)
            time.sleep(min(RETRY_BACKOFF_S, max(deadline - time.monotonic(), 0)))
        detail = f" (last error: {last})" if last is not None else ""
        raise DeliveryError(
            f"Topic {topic} not present in metadata after {self._options.max_block_ms} ms.{detail}"
        )

    def send(self, records: Sequence[OutgoingRecord]) -> None:
        producer = self._producer
        for r in records:
            if r.topic not in self._known_topics:
                self._await_topic(r.topic)
            partition = -1 if r.partition is None else r.partition  # -1: the partitioner's
            while True:
                try:
                    producer.produce(
                        r.topic,
                        value=r.value,
                        key=r.key,
                        partition=partition,
                        on_delivery=self._delivered,
                        headers=r.headers,
                    )
                    break
                except BufferError:  # librdkafka's queue is full: wait for acknowledgements
                    producer.poll(RETRY_BACKOFF_S)
            self.sent += 1
        producer.poll(0)
        # Surface a failure early instead of queueing the rest of the task behind it.
        self._raise_failure()

    def finish(self) -> Mapping[str, int]:
        self._producer.flush()
        self._raise_failure()
        return self.partitions

    def close(self) -> None:
        # Also after a failure: what was handed to the producer is still delivered (or fails
        # on its own, within delivery.timeout.ms) instead of being cut off mid-batch;
        # nothing is rolled back.
        self._producer.flush()
