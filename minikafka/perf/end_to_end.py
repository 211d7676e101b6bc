"""Kafka's EndToEndLatency: for each of N records, produce it and wait for the
acknowledgement, then poll a consumer positioned at the end of every partition until the
record arrives; the latency is send -> received. With acks=all a record is readable once it
is acknowledged (the HW has passed it); with acks=1 the consumer also waits for the
followers to advance the HW.

As in Kafka: a fresh payload of random upper-case letters per record (made before its clock
starts), linger.ms=0 and fetch.max.wait.ms=0 (no temporal batching on either side, so the
consumer asks again at once), a progress line `i<TAB>latency_ms` every 1000 records, and a
run that stops with an error if a poll finds nothing for 60 s, finds another value, or finds
more than the one record.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.client.consumer import Consumer, ConsumerRecord
from minikafka.client.producer import Producer, parse_acks
from minikafka.perf.histogram import LatencyHistogram, require_hdrhistogram
from minikafka.perf.shape import TopicShape, topic_shape

POLL_TIMEOUT_MS = 60000
PROGRESS_EVERY = 1000

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


def check_received(sent: bytes, records: Sequence[ConsumerRecord], timeout_ms: int) -> None:
    """Kafka's three checks on what one poll returned (EndToEndError with its messages)."""
    if not records:
        raise EndToEndError(f"poll() timed out before finding a result (timeout:[{timeout_ms}])")
    read = records[0].value
    if read != sent:
        shown = read if read is None else read.decode("utf-8", "replace")
        raise EndToEndError(
            f"The message read [{shown}] did not match the message sent "
            f"[{sent.decode('utf-8', 'replace')}]"
        )
    if len(records) > 1:
        raise EndToEndError(
            f"Only one result was expected during this test. We found [{len(records)}]"
        )


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
    """Measure `num_records` send -> receive latencies on `topic` (which must exist).

    `acks` must be 1 or all ("latency testing requires synchronous acknowledgement").
    Raises EndToEndError when a record does not come back as sent."""
    require_hdrhistogram()  # before connecting, not after
    if parse_acks(acks) == 0:
        raise ValueError(
            "Latency testing requires synchronous acknowledgement. Please use 1 or all"
        )
    if num_records < 0 or record_size < 0:
        raise ValueError("num_records and record_size must not be negative")
    pconfig = {**dict(producer_config or {}), "linger_ms": 0, "acks": acks}
    cconfig = {"fetch_max_wait_ms": 0, **dict(consumer_config or {})}
    cconfig["auto_offset_reset"] = "latest"
    histogram = LatencyHistogram()
    rng = random.Random(0)
    letters = range(65, 91)
    async with (
        Producer(bootstrap_servers, **pconfig) as producer,
        Consumer(bootstrap_servers, **cconfig) as consumer,
    ):
        await producer.partitions_for(topic)
        tps = await consumer.assign_topic(topic)
        consumer.seek_to_end()
        for tp in tps:
            await consumer.position(tp)
        shape = topic_shape(consumer.cluster.metadata, topic)
        if on_ready is not None:
            on_ready(shape)
        for i in range(num_records):
            message = bytes(rng.choices(letters, k=record_size))
            begin = clock()
            await producer.send_and_wait(topic, message)
            records = await consumer.poll(poll_timeout_ms)
            elapsed = clock() - begin
            check_received(message, records, poll_timeout_ms)
            if i % PROGRESS_EVERY == 0 and on_progress is not None:
                on_progress(f"{i}\t{elapsed * 1000.0}")
            histogram.record_seconds(elapsed)
    return EndToEndResult(
        records=histogram.count,
        avg_latency_ms=histogram.mean_ms,
        p50_ms=histogram.percentile_ms(50),
        p99_ms=histogram.percentile_ms(99),
        p999_ms=histogram.percentile_ms(99.9),
        max_latency_ms=histogram.max_ms,
        shape=shape,
    )
