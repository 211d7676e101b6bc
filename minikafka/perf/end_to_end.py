"""Kafka's EndToEndLatency on librdkafka (confluent-kafka): for each of N records, produce
it and wait for the acknowledgement, then poll a consumer positioned at the end of every
partition until the record arrives; the latency is send -> received. With acks=all a record
is readable once it is acknowledged (the HW has passed it); with acks=1 the consumer also
waits for the followers to advance the HW.

As in Kafka: a fresh payload of random upper-case letters per record (made before its clock
starts), linger.ms=0 (no batching on the producer), a progress line `i<TAB>latency_ms` every
1000 records, and a run that stops with an error if a poll finds nothing for 60 s, finds
another value, or finds more than the one record. Kafka's tool fetches with
fetch.max.wait.ms=0, which makes its consumer ask again at once after an empty answer; here
the consumer long-polls (fetch.wait.max.ms=100 unless set): the broker answers a waiting
fetch as soon as the record is committed, so nothing waits for the timeout, and the brokers
are not kept busy answering empty fetches.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.perf.histogram import LatencyHistogram, require_hdrhistogram
from minikafka.perf.produce import require_librdkafka
from minikafka.perf.shape import TopicShape, topic_shape

POLL_TIMEOUT_MS = 60000
PROGRESS_EVERY = 1000
METADATA_TIMEOUT_S = 60.0
FETCH_WAIT_MAX_MS = 100  # the consumer's long poll (fetch.wait.max.ms) unless set

Clock = Callable[[], float]


class EndToEndError(RuntimeError):
    """The consumer did not receive exactly the record just produced."""


@dataclass(frozen=True, slots=True)
class EndToEndResult:
    records: int
    avg_latency_ms: float
    p50_ms: int
    p99_ms: int
    p999_ms: int
    max_latency_ms: float
    shape: TopicShape | None = None

    def lines(self) -> list[str]:
        """Kafka's two result lines."""
        return [
            f"Avg latency: {self.avg_latency_ms:.4f} ms",
            f"Percentiles: 50th = {self.p50_ms}, 99th = {self.p99_ms}, 99.9th = {self.p999_ms}",
        ]


def check_received(sent: bytes, values: Sequence[bytes | None], timeout_ms: int) -> None:
    """Kafka's three checks on the values one poll returned (EndToEndError with its
    messages)."""
    if not values:
        raise EndToEndError(f"poll() timed out before finding a result (timeout:[{timeout_ms}])")
    read = values[0]
    if read != sent:
        shown = read if read is None else read.decode("utf-8", "replace")
        raise EndToEndError(
            f"The message read [{shown}] did not match the message sent "
            f"[{sent.decode('utf-8', 'replace')}]"
        )
    if len(values) > 1:
        raise EndToEndError(
            f"Only one result was expected during this test. We found [{len(values)}]"
        )


def e2e_consumer_config(props: Mapping[str, Any]) -> dict[str, Any]:
    """The consumer's properties: the long poll unless set, never committing."""
    return {"fetch.wait.max.ms": FETCH_WAIT_MAX_MS, **props, "enable.auto.commit": False}


async def run_end_to_end_latency(
    bootstrap_servers: str,
    topic: str,
    num_records: int,
    record_size: int,
    *,
    acks: str | int = "all",
    producer_config: Mapping[str, Any] | None = None,
    consumer_config: Mapping[str, Any] | None = None,
    poll_timeout_ms: int = POLL_TIMEOUT_MS,
    on_ready: Callable[[TopicShape], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
    clock: Clock = time.perf_counter,
) -> EndToEndResult:
    """Measure `num_records` send -> receive latencies on `topic` (which must exist);
    `producer_config`, `consumer_config`: librdkafka's properties by Kafka's names.

    `acks` must be 1 or all ("latency testing requires synchronous acknowledgement").
    Raises EndToEndError when a record does not come back as sent. The loop runs in a
    thread of its own."""
    require_hdrhistogram()  # before connecting, not after
    require_librdkafka()
    from minikafka.client.librdkafka import client_config

    if str(acks).strip().lower() not in ("all", "-1", "1"):
        raise ValueError(
            "Latency testing requires synchronous acknowledgement. Please use 1 or all"
        )
    if num_records < 0 or record_size < 0:
        raise ValueError("num_records and record_size must not be negative")
    pconfig = client_config(
        bootstrap_servers, {**dict(producer_config or {}), "linger.ms": 0, "acks": acks}
    )
    cconfig = client_config(bootstrap_servers, e2e_consumer_config(consumer_config or {}))
    return await asyncio.to_thread(
        _measure,
        pconfig,
        cconfig,
        topic,
        num_records,
        record_size,
        poll_timeout_ms,
        on_ready,
        on_progress,
        clock,
    )


def _measure(
    pconfig: dict[str, Any],
    cconfig: dict[str, Any],
    topic: str,
    num_records: int,
    record_size: int,
    poll_timeout_ms: int,
    on_ready: Callable[[TopicShape], None] | None,
    on_progress: Callable[[str], None] | None,
    clock: Clock,
) -> EndToEndResult:
    from confluent_kafka import KafkaException, TopicPartition

    from minikafka.client.librdkafka import (
        await_group_coordinator,
        new_consumer,
        new_producer,
        topic_metadata,
        watermarks,
    )

    producer = new_producer(pconfig)
    consumer = new_consumer(cconfig)
    histogram = LatencyHistogram()
    rng = random.Random(0)
    letters = range(65, 91)
    failures: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    try:
        md = topic_metadata(consumer, topic, METADATA_TIMEOUT_S)
        partitions = sorted(md.topics[topic].partitions)
        # Positioned at each partition's end, looked up before the first record is timed
        # (Kafka's seekToEnd then position): what it reads is only what is produced.
        ends = {p: watermarks(consumer, topic, p, METADATA_TIMEOUT_S)[1] for p in partitions}
        await_group_coordinator(consumer, topic, partitions[0], METADATA_TIMEOUT_S)
        consumer.assign([TopicPartition(topic, p, end) for p, end in ends.items()])
        shape = topic_shape(md, topic)
        if on_ready is not None:
            on_ready(shape)
        for i in range(num_records):
            message = bytes(rng.choices(letters, k=record_size))
            begin = clock()
            producer.produce(topic, message, on_delivery=delivered)
            producer.flush()
            if failures:
                raise KafkaException(failures[0])
            values = _poll_values(consumer, begin + poll_timeout_ms / 1000.0, clock)
            elapsed = clock() - begin
            check_received(message, values, poll_timeout_ms)
            if i % PROGRESS_EVERY == 0 and on_progress is not None:
                on_progress(f"{i}\t{elapsed * 1000.0}")
            histogram.record_seconds(elapsed)
    finally:
        consumer.close()
    return EndToEndResult(
        records=histogram.count,
        avg_latency_ms=histogram.mean_ms,
        p50_ms=histogram.percentile_ms(50),
        p99_ms=histogram.percentile_ms(99),
        p999_ms=histogram.percentile_ms(99.9),
        max_latency_ms=histogram.max_ms,
        shape=shape,
    )


def _poll_values(consumer: Any, deadline: float, clock: Clock) -> list[bytes | None]:
    """The values of the records the next poll finds (none by `deadline`: empty). Other
    events (a broker going away) are librdkafka's to retry; a fatal one ends the run."""
    from confluent_kafka import KafkaException

    from minikafka.client.librdkafka import consume_ready

    values: list[bytes | None] = []
    while not values and (remaining := deadline - clock()) > 0:
        for m in consume_ready(consumer, 2, remaining):
            if (error := m.error()) is None:
                values.append(m.value())
            elif error.fatal():
                raise KafkaException(error)
    return values
