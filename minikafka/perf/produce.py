"""`kafka-producer-perf-test`: send N records of S bytes as fast as allowed (or at a target
rate), and report throughput and send-to-acknowledgement latency the way Kafka prints it.

Like Kafka's tool: one payload of random upper-case letters (seed 0) generated once and sent
as every record's value (no key); the clock starts before the first send and stops once the
producer has flushed (every record acknowledged or failed); a progress line is printed when
an acknowledgement arrives 5 s or more after the window opened; latency is from just before
librdkafka's `produce()` to the record's delivery report. Unlike it, failed records are not
counted as sent: they are counted apart (and the command fails).
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minikafka.client.librdkafka import MissingClientError
from minikafka.client.librdkafka import require_librdkafka as require_client
from minikafka.perf.histogram import (
    LatencyHistogram,
    MissingDependencyError,
    require_hdrhistogram,
)
from minikafka.perf.shape import TopicShape, topic_shape
from minikafka.perf.throttle import ThroughputThrottler

if TYPE_CHECKING:  # confluent-kafka is imported only when used (client/librdkafka.py)
    from confluent_kafka import KafkaError

MB = 1024.0 * 1024.0
REPORTING_INTERVAL_S = 5.0
MAX_BLOCK_S = 60.0  # Kafka's max.block.ms: how long to wait for the topic's metadata
FLUSH_TIMEOUT_S = 300.0

Clock = Callable[[], float]


def require_librdkafka() -> None:
    """Raise MissingDependencyError (one line, with the pip command) if confluent-kafka,
    which `perf produce` and `perf consume` run on, is missing."""
    try:
        require_client("perf produce and consume run")
    except MissingClientError as e:
        raise MissingDependencyError(str(e)) from None


def make_payload(size: int, seed: int = 0) -> bytes:
    """`size` random upper-case ASCII letters, as Kafka's perf tools fill their payloads."""
    rng = random.Random(seed)
    return bytes(rng.choices(range(65, 91), k=size))


@dataclass(frozen=True, slots=True)
class ProducerWindow:
    """One progress line: the records acknowledged since the previous one."""

    records: int
    bytes: int
    elapsed_s: float
    avg_latency_ms: float
    max_latency_ms: float

    @property
    def records_per_sec(self) -> float:
        return self.records / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def mb_per_sec(self) -> float:
        return self.bytes / self.elapsed_s / MB if self.elapsed_s > 0 else 0.0

    def line(self) -> str:
        return (
            f"{self.records} records sent, {self.records_per_sec:.1f} records/sec "
            f"({self.mb_per_sec:.2f} MB/sec), {self.avg_latency_ms:.1f} ms avg latency, "
            f"{self.max_latency_ms:.1f} ms max latency."
        )


@dataclass(frozen=True, slots=True)
class ProducerPerfResult:
    records: int  # acknowledged
    failed: int
    bytes: int  # values of the acknowledged records
    elapsed_s: float
    avg_latency_ms: float
    max_latency_ms: float
    p50_ms: int
    p95_ms: int
    p99_ms: int
    p999_ms: int
    windows: tuple[ProducerWindow, ...] = ()
    first_error: str | None = None
    shape: TopicShape | None = None

    @property
    def records_per_sec(self) -> float:
        return self.records / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def mb_per_sec(self) -> float:
        return self.bytes / self.elapsed_s / MB if self.elapsed_s > 0 else 0.0

    def line(self) -> str:
        """Kafka's final line (ProducerPerformance.Stats.printTotal)."""
        return (
            f"{self.records} records sent, {self.records_per_sec:f} records/sec "
            f"({self.mb_per_sec:.2f} MB/sec), {self.avg_latency_ms:.2f} ms avg latency, "
            f"{self.max_latency_ms:.2f} ms max latency, {self.p50_ms} ms 50th, "
            f"{self.p95_ms} ms 95th, {self.p99_ms} ms 99th, {self.p999_ms} ms 99.9th."
        )


class ProducerStats:
    """Kafka's ProducerPerformance.Stats, with an HdrHistogram of every latency (Kafka
    samples at most 500,000). Times are the caller's clock, in seconds."""

    def __init__(self, start: float, reporting_interval_s: float = REPORTING_INTERVAL_S) -> None:
        self.start = start
        self.reporting_interval_s = reporting_interval_s
        self.histogram = LatencyHistogram()
        self.bytes = 0
        self.windows: list[ProducerWindow] = []
        self._new_window(start)

    def _new_window(self, now: float) -> None:
        self._window_start = now
        self._window_count = 0
        self._window_bytes = 0
        self._window_total_s = 0.0
        self._window_max_s = 0.0

    @property
    def count(self) -> int:
        return self.histogram.count

    def record(self, latency_s: float, nbytes: int, now: float) -> ProducerWindow | None:
        """Count an acknowledged record; returns the window it closed, if it closed one."""
        self.histogram.record_seconds(latency_s)
        self.bytes += nbytes
        self._window_count += 1
        self._window_bytes += nbytes
        self._window_total_s += latency_s
        self._window_max_s = max(self._window_max_s, latency_s)
        if now - self._window_start < self.reporting_interval_s:
            return None
        window = ProducerWindow(
            records=self._window_count,
            bytes=self._window_bytes,
            elapsed_s=now - self._window_start,
            avg_latency_ms=1000.0 * self._window_total_s / self._window_count,
            max_latency_ms=1000.0 * self._window_max_s,
        )
        self.windows.append(window)
        self._new_window(now)
        return window

    def result(
        self,
        now: float,
        *,
        failed: int = 0,
        first_error: str | None = None,
        shape: TopicShape | None = None,
    ) -> ProducerPerfResult:
        h = self.histogram
        return ProducerPerfResult(
            records=h.count,
            failed=failed,
            bytes=self.bytes,
            elapsed_s=now - self.start,
            avg_latency_ms=h.mean_ms,
            max_latency_ms=h.max_ms,
            p50_ms=h.percentile_ms(50),
            p95_ms=h.percentile_ms(95),
            p99_ms=h.percentile_ms(99),
            p999_ms=h.percentile_ms(99.9),
            windows=tuple(self.windows),
            first_error=first_error,
            shape=shape,
        )


class SendCompletions:
    """Kafka's PerfCallback: what each send's completion does (count it, or count the
    failure; record the latency; print a progress line when a window closes), and an event
    set once all `num_records` completed. For any client whose sends return asyncio futures
    (scripts/bench.py's JetStream publishes)."""

    def __init__(
        self,
        num_records: int,
        record_size: int,
        clock: Clock,
        *,
        reporting_interval_s: float = REPORTING_INTERVAL_S,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        self.num_records = num_records
        self.record_size = record_size
        self.clock = clock
        self.on_progress = on_progress
        self.stats = ProducerStats(clock(), reporting_interval_s)
        self.completed = 0
        self.failed = 0
        self.first_error: str | None = None
        self.all_done = asyncio.Event()
        if num_records == 0:
            self.all_done.set()

    def track(self, fut: asyncio.Future[Any], send_start: float) -> None:
        fut.add_done_callback(functools.partial(self._on_done, send_start))

    def _on_done(self, send_start: float, fut: asyncio.Future[Any]) -> None:
        now = self.clock()
        self.completed += 1
        if self.completed == self.num_records:
            self.all_done.set()
        error = asyncio.CancelledError("cancelled") if fut.cancelled() else fut.exception()
        if error is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = f"{type(error).__name__}: {error}"
            return
        window = self.stats.record(now - send_start, self.record_size, now)
        if window is not None and self.on_progress is not None:
            self.on_progress(window.line())

    async def result(self, shape: TopicShape | None = None) -> ProducerPerfResult:
        """Once every send completed (callbacks run as their futures complete)."""
        await self.all_done.wait()
        return self.stats.result(
            self.clock(), failed=self.failed, first_error=self.first_error, shape=shape
        )


async def run_producer_perf(
    bootstrap_servers: str,
    topic: str,
    num_records: int,
    record_size: int,
    *,
    throughput: float = -1,
    producer_config: Mapping[str, Any] | None = None,
    reporting_interval_s: float = REPORTING_INTERVAL_S,
    on_ready: Callable[[TopicShape], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
    clock: Clock = time.perf_counter,
) -> ProducerPerfResult:
    """Send `num_records` records of `record_size` bytes to `topic` (which must exist)
    with librdkafka (confluent-kafka), as kafka-producer-perf-test does with Kafka's
    producer.

    `throughput` > 0 throttles to about that many records/s (Kafka's ThroughputThrottler),
    < 0 does not. `producer_config`: librdkafka properties by Kafka's names (`acks`,
    `batch.size`, `linger.ms`, ...; ClientConfigError for one it refuses).
    `on_ready(shape)` is called once the topic's metadata is known, before the clock
    starts; `on_progress(line)` with each 5-second line. Failed records do not raise: see
    `result.failed` and `first_error`. The sending loop runs in a thread of its own (the
    producer's delivery reports are served by the same thread, as in Kafka's tool).
    """
    require_hdrhistogram()  # before connecting, not after
    require_librdkafka()
    from minikafka.client.librdkafka import client_config

    if num_records < 0 or record_size < 0:
        raise ValueError("num_records and record_size must not be negative")
    if throughput == 0:
        raise ValueError("throughput must be positive, or negative (-1) for no throttling")
    config = client_config(bootstrap_servers, producer_config or {})
    return await asyncio.to_thread(
        _produce,
        config,
        topic,
        num_records,
        make_payload(record_size),
        throughput,
        reporting_interval_s,
        on_ready,
        on_progress,
        clock,
    )


def _produce(
    config: dict[str, Any],
    topic: str,
    num_records: int,
    payload: bytes,
    throughput: float,
    reporting_interval_s: float,
    on_ready: Callable[[TopicShape], None] | None,
    on_progress: Callable[[str], None] | None,
    clock: Clock,
) -> ProducerPerfResult:
    from minikafka.client.librdkafka import new_producer, topic_metadata

    producer = new_producer(config)
    # The topic must exist (Kafka's tool waits max.block.ms for its metadata).
    shape = topic_shape(topic_metadata(producer, topic, MAX_BLOCK_S), topic)
    if on_ready is not None:
        on_ready(shape)
    stats = ProducerStats(clock(), reporting_interval_s)
    failures: list[str] = []  # each failed record's error
    size = len(payload)

    def delivered(send_start: float, err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            failures.append(f"{err.name()}: {err.str()}")
            return
        now = clock()
        window = stats.record(now - send_start, size, now)
        if window is not None and on_progress is not None:
            on_progress(window.line())

    throttler = ThroughputThrottler(throughput, stats.start)
    for i in range(num_records):
        send_start = clock()
        callback = functools.partial(delivered, send_start)
        while True:
            try:
                producer.produce(topic, payload, on_delivery=callback)
                break
            except BufferError:  # librdkafka's queue is full: serve deliveries, then retry
                producer.poll(0.001)
        producer.poll(0)
        if throttler.should_throttle(i, send_start):
            pause = throttler.sleep_time()
            if pause > 0:
                time.sleep(pause)
    undelivered = producer.flush(FLUSH_TIMEOUT_S)
    first_error = failures[0] if failures else None
    if first_error is None and undelivered:
        first_error = f"undelivered after {FLUSH_TIMEOUT_S:.0f} s"
    return stats.result(
        clock(), failed=len(failures) + undelivered, first_error=first_error, shape=shape
    )
