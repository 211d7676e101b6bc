"""`kafka-consumer-perf-test`: read N records from the beginning of every partition of a
topic and report what was read per second, in Kafka's CSV columns.

The consumer (librdkafka) joins no group: it assigns all partitions from their beginning,
so there is no rebalance (`rebalance.time.ms` is 0) and the `fetch.*` columns equal the
totals. The clock starts at the first poll (after metadata and assignment) and stops at the
N-th record, or when no record has come for `timeout_ms` (Kafka's --timeout, default 10 s),
in which case Kafka's WARNING line is part of the output. Bytes are keys plus values;
exactly N records are counted even if the last poll returned more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.perf.produce import require_librdkafka
from minikafka.perf.shape import TopicShape, topic_shape

MB = 1024.0 * 1024.0
POLL_MS = 100  # Kafka's consumer perf polls with 100 ms
BATCH = 10_000  # records per consume() call at most
METADATA_TIMEOUT_S = 60.0
# librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (default 1000) whenever
# its prefetch queue is full, which a Python reader that is slower than the brokers keeps
# it: reader and brokers then both wait out most of each second (80 MB/s instead of 340 on
# one machine). Kafka's Java consumer has no such pause; the perf tool measures the brokers.
PERF_CONSUMER_DEFAULTS = {"fetch.queue.backoff.ms": 10}
DEFAULT_TIMEOUT_MS = 10000
REPORTING_INTERVAL_MS = 5000
_FETCH_COLUMNS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
CONSUMER_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
    + _FETCH_COLUMNS
)
CONSUMER_DETAILED_HEADER = (
    "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + _FETCH_COLUMNS
)

Clock = Callable[[], float]


def format_time(epoch_ms: float) -> str:
    """Kafka's default --date-format, `yyyy-MM-dd HH:mm:ss:SSS`, in local time."""
    ms = int(epoch_ms)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms // 1000)) + f":{ms % 1000:03d}"


def _rate(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class ConsumerProgress:
    """One --show-detailed-stats row: totals so far, rates over the interval."""

    end_wall_ms: float
    bytes: int  # total so far
    messages: int  # total so far
    interval_bytes: int
    interval_messages: int
    interval_s: float

    def line(self) -> str:
        mb = self.bytes / MB
        mb_sec = _rate(self.interval_bytes / MB, self.interval_s)
        msg_sec = _rate(self.interval_messages, self.interval_s)
        return (
            f"{format_time(self.end_wall_ms)}, 0, {mb:.4f}, {mb_sec:.4f}, {self.messages}, "
            f"{msg_sec:.4f}, 0, {round(self.interval_s * 1000)}, {mb_sec:.4f}, {msg_sec:.4f}"
        )


@dataclass(frozen=True, slots=True)
class ConsumerPerfResult:
    start_wall_ms: float
    end_wall_ms: float
    messages: int
    bytes: int
    elapsed_s: float
    timed_out: bool  # stopped before `messages` because nothing came for timeout_ms
    timeout_ms: int
    rebalance_ms: int = 0  # it joins no group: no rebalance
    progress: tuple[ConsumerProgress, ...] = ()
    shape: TopicShape | None = None

    @property
    def mb(self) -> float:
        return self.bytes / MB

    @property
    def mb_per_sec(self) -> float:
        return _rate(self.mb, self.elapsed_s)

    @property
    def messages_per_sec(self) -> float:
        return _rate(self.messages, self.elapsed_s)

    @property
    def fetch_ms(self) -> int:
        return round(self.elapsed_s * 1000) - self.rebalance_ms

    @property
    def fetch_s(self) -> float:
        return self.elapsed_s - self.rebalance_ms / 1000.0

    def warning(self) -> str | None:
        """Kafka's line when it stopped early, else None."""
        if not self.timed_out:
            return None
        return (
            "WARNING: Exiting before consuming the expected number of messages: timeout "
            f"({self.timeout_ms} ms) exceeded. You can use the --timeout option to increase "
            "the timeout."
        )

    def line(self) -> str:
        """Kafka's summary row under CONSUMER_HEADER."""
        return (
            f"{format_time(self.start_wall_ms)}, {format_time(self.end_wall_ms)}, "
            f"{self.mb:.4f}, {self.mb_per_sec:.4f}, {self.messages}, "
            f"{self.messages_per_sec:.4f}, {self.rebalance_ms}, {self.fetch_ms}, "
            f"{_rate(self.mb, self.fetch_s):.4f}, {_rate(self.messages, self.fetch_s):.4f}"
        )


async def run_consumer_perf(
    bootstrap_servers: str,
    topic: str,
    messages: int,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    consumer_config: Mapping[str, Any] | None = None,
    reporting_interval_ms: int = REPORTING_INTERVAL_MS,
    on_ready: Callable[[TopicShape], None] | None = None,
    on_progress: Callable[[ConsumerProgress], None] | None = None,
    clock: Clock = time.perf_counter,
) -> ConsumerPerfResult:
    """Read `messages` records from the beginning of every partition of `topic` with
    librdkafka (confluent-kafka; `consumer_config`: its properties by Kafka's names).

    `on_ready(shape)` is called once the partitions are assigned, before the clock starts;
    `on_progress(row)` every `reporting_interval_ms` while records arrive (Kafka's
    --show-detailed-stats rows). The reading loop runs in a thread of its own.
    """
    require_librdkafka()
    from minikafka.client.librdkafka import client_config

    if messages < 0:
        raise ValueError("messages must not be negative")
    config = client_config(
        bootstrap_servers, {**PERF_CONSUMER_DEFAULTS, **dict(consumer_config or {})}
    )
    return await asyncio.to_thread(
        _consume,
        config,
        topic,
        messages,
        timeout_ms,
        reporting_interval_ms,
        on_ready,
        on_progress,
        clock,
    )


def _consume(
    config: dict[str, Any],
    topic: str,
    messages: int,
    timeout_ms: int,
    reporting_interval_ms: int,
    on_ready: Callable[[TopicShape], None] | None,
    on_progress: Callable[[ConsumerProgress], None] | None,
    clock: Clock,
) -> ConsumerPerfResult:
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

    from minikafka.client.librdkafka import (
        await_group_coordinator,
        consume_ready,
        new_consumer,
        topic_metadata,
    )

    consumer = new_consumer({"enable.auto.commit": False, **config})
    try:
        md = topic_metadata(consumer, topic, METADATA_TIMEOUT_S)
        partitions = sorted(md.topics[topic].partitions)
        await_group_coordinator(consumer, topic, partitions[0], METADATA_TIMEOUT_S)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        shape = topic_shape(md, topic)
        if on_ready is not None:
            on_ready(shape)
        start_wall_ms = time.time() * 1000.0
        start = now = last_consumed = last_report = clock()
        read = nbytes = last_read = last_bytes = 0
        progress: list[ConsumerProgress] = []
        while read < messages and (now - last_consumed) * 1000.0 <= timeout_ms:
            records = consume_ready(consumer, min(BATCH, messages - read), POLL_MS / 1000.0)
            now = clock()
            if records:
                last_consumed = now
            for r in records:
                if (error := r.error()) is not None:
                    raise KafkaException(error)
                read += 1
                nbytes += len(r.key() or b"") + len(r.value() or b"")
            if records and (now - last_report) * 1000.0 >= reporting_interval_ms:
                row = ConsumerProgress(
                    end_wall_ms=start_wall_ms + (now - start) * 1000.0,
                    bytes=nbytes,
                    messages=read,
                    interval_bytes=nbytes - last_bytes,
                    interval_messages=read - last_read,
                    interval_s=now - last_report,
                )
                progress.append(row)
                if on_progress is not None:
                    on_progress(row)
                last_report, last_read, last_bytes = now, read, nbytes
        elapsed = now - start
    finally:
        consumer.close()
    return ConsumerPerfResult(
        start_wall_ms=start_wall_ms,
        end_wall_ms=start_wall_ms + elapsed * 1000.0,
        messages=read,
        bytes=nbytes,
        elapsed_s=elapsed,
        timed_out=read < messages,
        timeout_ms=timeout_ms,
        progress=tuple(progress),
        shape=shape,
    )
