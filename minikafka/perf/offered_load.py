"""End-to-end latency at a fixed offered load: a producer throttled to a target rate
(Kafka's ThroughputThrottler) while consumers at the end of the log time each record from
just before its send to its arrival. Kafka's EndToEndLatency (`run_end_to_end_latency`)
sends one record at a time; this measures the latency a steady stream of records sees.

The measuring loop (`measure_offered_load`) knows nothing of minikafka: it takes a `send`
(hand over one payload, get a future of its acknowledgement) and one or more `receive`
functions (the values that arrived, or none), so that another system can be measured the
same way (scripts/bench.py does so for NATS JetStream). `run_offered_load_latency` is the
minikafka one, on librdkafka.

Each payload is `record_size` bytes: the record's sequence number (8 bytes, big-endian),
then Kafka's upper-case letters. A value that is not one of this run's, or a duplicate,
is not timed (it is counted apart). Latency is from just before `send()` to the moment
the receive function returned the value (and, apart, send to acknowledgement: the
seconds a send's future resolves to, as the client measured them, or else until the
moment it resolved); when the producer cannot keep up with the target, the achieved rate
(`sent_records_per_sec`) says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.perf.histogram import LatencyHistogram, require_hdrhistogram
from minikafka.perf.produce import make_payload, require_librdkafka
from minikafka.perf.shape import TopicShape, topic_shape
from minikafka.perf.throttle import ThroughputThrottler

MB = 1024.0 * 1024.0
SEQ_BYTES = 8
POLL_MS = 100
DEFAULT_TIMEOUT_MS = 60000
METADATA_TIMEOUT_S = 60.0

Clock = Callable[[], float]
SendFn = Callable[[bytes], Awaitable["asyncio.Future[Any]"]]
ReceiveFn = Callable[[], Awaitable[Sequence[bytes]]]


class OfferedLoadError(RuntimeError):
    """Records were not acknowledged, or did not all arrive in time."""


@dataclass(frozen=True, slots=True)
class OfferedLoadResult:
    records: int  # received and timed
    sent: int
    failed: int  # sends whose acknowledgement failed
    unexpected: int  # values received that were not this run's, or duplicates
    record_size: int
    target_records_per_sec: float
    send_elapsed_s: float  # first send to last send
    elapsed_s: float  # first send to last record received
    avg_latency_ms: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_latency_ms: float
    first_error: str | None = None
    shape: TopicShape | None = None
    # Send -> acknowledgement of the same records (what the producer waits for).
    ack_p50_ms: float = 0.0
    ack_p99_ms: float = 0.0
    ack_p999_ms: float = 0.0

    @property
    def target_mb_per_sec(self) -> float:
        return self.target_records_per_sec * self.record_size / MB

    @property
    def sent_records_per_sec(self) -> float:
        return self.sent / self.send_elapsed_s if self.send_elapsed_s > 0 else 0.0

    @property
    def sent_mb_per_sec(self) -> float:
        return self.sent_records_per_sec * self.record_size / MB

    def lines(self) -> list[str]:
        return [
            f"{self.sent} records sent at {self.sent_records_per_sec:.1f} records/sec "
            f"({self.sent_mb_per_sec:.2f} MB/sec; target {self.target_mb_per_sec:.2f} MB/sec), "
            f"{self.records} received, {self.failed} failed",
            f"Avg latency: {self.avg_latency_ms:.4f} ms",
            f"Percentiles: 50th = {self.p50_ms:.3f}, 99th = {self.p99_ms:.3f}, "
            f"99.9th = {self.p999_ms:.3f} (ms), max = {self.max_latency_ms:.3f}",
            f"Send to ack: 50th = {self.ack_p50_ms:.3f}, 99th = {self.ack_p99_ms:.3f}, "
            f"99.9th = {self.ack_p999_ms:.3f} (ms)",
        ]


def make_sequenced_payload(filler: bytes, seq: int) -> bytes:
    """`filler` with its first 8 bytes replaced by `seq` (big-endian)."""
    return seq.to_bytes(SEQ_BYTES, "big") + filler[SEQ_BYTES:]


async def measure_offered_load(
    send: SendFn,
    receivers: Sequence[ReceiveFn],
    num_records: int,
    record_size: int,
    records_per_sec: float,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    clock: Clock = time.perf_counter,
) -> OfferedLoadResult:
    """Send `num_records` payloads of `record_size` bytes at `records_per_sec` (< 0: as
    fast as possible) through `send`, while each of `receivers` is called in a loop of its
    own; return once every record has arrived. Each receiver must return promptly (say
    within 100-500 ms) with what arrived, an empty sequence if nothing did.

    Raises OfferedLoadError when nothing arrives for `timeout_ms` while records are
    missing (the result so far is in its message)."""
    require_hdrhistogram()
    if record_size < SEQ_BYTES:
        raise ValueError(f"record_size must be at least {SEQ_BYTES} (the sequence number)")
    if num_records < 0:
        raise ValueError("num_records must not be negative")
    if not receivers:
        raise ValueError("at least one receive function is needed")
    filler = make_payload(record_size)
    sent_at = [0.0] * num_records
    seen = bytearray(num_records)
    histogram = LatencyHistogram()
    acked = LatencyHistogram()
    unexpected = failed = 0
    first_error: str | None = None
    all_received = asyncio.Event()
    if num_records == 0:
        all_received.set()
    last_arrival = clock()

    async def receive_loop(receive: ReceiveFn) -> None:
        nonlocal unexpected, last_arrival
        while not all_received.is_set():
            values = await receive()
            now = clock()
            if values:
                last_arrival = now
            for value in values:
                seq = int.from_bytes(value[:SEQ_BYTES], "big")
                if len(value) != record_size or seq >= num_records or seen[seq]:
                    unexpected += 1
                    continue
                seen[seq] = 1
                histogram.record_seconds(now - sent_at[seq])
            if histogram.count == num_records:
                all_received.set()

    # Acknowledgements still to come. Their futures are not kept: holding one per record
    # until the end grows the heap by hundreds of thousands of objects, and the collector's
    # full passes over them stop this process for up to 100 ms, delaying the delivery
    # reports that the acknowledgement latency is read from.
    unacked = 0
    all_acked = asyncio.Event()
    all_acked.set()

    def on_ack(seq: int, fut: asyncio.Future[Any]) -> None:
        nonlocal failed, first_error, unacked
        unacked -= 1
        if unacked == 0:
            all_acked.set()
        error = asyncio.CancelledError("cancelled") if fut.cancelled() else fut.exception()
        if error is None:
            measured = fut.result()
            acked.record_seconds(
                measured if isinstance(measured, float) else clock() - sent_at[seq]
            )
            return
        failed += 1
        if first_error is None:
            first_error = f"{type(error).__name__}: {error}"

    tasks = [asyncio.create_task(receive_loop(r)) for r in receivers]
    # What the process built before (earlier workloads, imports) is collected now and then
    # frozen out of the collector's reach: a full pass over it during the run stopped the
    # process for tens of milliseconds, and the acknowledgement latency is read in it.
    gc.collect()
    gc.freeze()
    start = clock()
    send_end = start
    try:
        throttler = ThroughputThrottler(records_per_sec, start)
        for i in range(num_records):
            now = clock()
            sent_at[i] = now
            fut = await send(make_sequenced_payload(filler, i))
            unacked += 1
            all_acked.clear()
            fut.add_done_callback(functools.partial(on_ack, i))
            if throttler.should_throttle(i, now):
                pause = throttler.sleep_time()
                if pause > 0:
                    await asyncio.sleep(pause)
        send_end = clock()
        await all_acked.wait()
        last_arrival = max(last_arrival, clock())
        while not all_received.is_set():
            if failed and histogram.count + failed >= num_records:
                break  # the failed ones will never arrive
            for t in tasks:
                if t.done():
                    t.result()  # a receiver that raised
            if (clock() - last_arrival) * 1000.0 > timeout_ms:
                raise OfferedLoadError(
                    f"{num_records - histogram.count} of {num_records} records did not "
                    f"arrive within {timeout_ms} ms ({failed} failed: {first_error})"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_received.wait(), 0.1)
    finally:
        gc.unfreeze()
        all_received.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    end = clock()
    return OfferedLoadResult(
        records=histogram.count,
        sent=num_records,
        failed=failed,
        unexpected=unexpected,
        record_size=record_size,
        target_records_per_sec=records_per_sec,
        send_elapsed_s=send_end - start,
        elapsed_s=end - start,
        avg_latency_ms=histogram.mean_ms,
        p50_ms=histogram.percentile_us(50) / 1000.0,
        p99_ms=histogram.percentile_us(99) / 1000.0,
        p999_ms=histogram.percentile_us(99.9) / 1000.0,
        max_latency_ms=histogram.max_ms,
        first_error=first_error,
        ack_p50_ms=acked.percentile_us(50) / 1000.0,
        ack_p99_ms=acked.percentile_us(99) / 1000.0,
        ack_p999_ms=acked.percentile_us(99.9) / 1000.0,
    )


async def run_offered_load_latency(
    bootstrap_servers: str,
    topic: str,
    num_records: int,
    record_size: int,
    records_per_sec: float,
    *,
    producer_config: Mapping[str, Any] | None = None,
    consumer_config: Mapping[str, Any] | None = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    on_ready: Callable[[TopicShape], None] | None = None,
    clock: Clock = time.perf_counter,
) -> OfferedLoadResult:
    """End-to-end latency on `topic` (which must exist) at `records_per_sec`, on librdkafka
    (confluent-kafka): one producer (`producer_config`: its properties by Kafka's names)
    and one consumer of every partition, positioned at each end before the first send
    (`consumer_config`; librdkafka's defaults, fetch.min.bytes=1 and fetch.wait.max.ms=500,
    a long poll the broker answers as soon as records are committed, unless given).

    librdkafka hands acknowledgements over in poll(): a thread polls the producer and
    passes each poll's to the event loop; the consumer is read in a thread too."""
    require_hdrhistogram()
    require_librdkafka()
    from minikafka.client.librdkafka import client_config, consume_ready

    pconfig = client_config(bootstrap_servers, producer_config or {})
    cconfig = client_config(
        bootstrap_servers, {**dict(consumer_config or {}), "enable.auto.commit": False}
    )
    producer, consumer, shape = await asyncio.to_thread(_connect, pconfig, cconfig, topic)
    loop = asyncio.get_running_loop()
    polling = threading.Event()
    polling.set()
    # Delivery reports of one poll(), handed to the event loop together: one wake-up of the
    # loop per poll rather than one per record, which at 10,000 records/s would cost the
    # measuring process more CPU than the brokers it measures can spare on a small machine.
    delivered: list[tuple[asyncio.Future[Any], Any, float | None]] = []

    def poll_producer() -> None:
        while polling.is_set():
            producer.poll(0.05)  # runs the delivery callbacks, in this thread
            if delivered:
                batch = delivered.copy()
                delivered.clear()
                loop.call_soon_threadsafe(settle_all, batch)

    # Send to acknowledgement as librdkafka reports it: Message.latency() is the time from
    # produce() to the call, taken in the delivery callback, which runs in this poll thread
    # as soon as poll() has the report (Kafka's producer times it in its callback too, on
    # its I/O thread). The hand-over to the event loop that follows is not included.
    def settle_all(batch: list[tuple[asyncio.Future[Any], Any, float | None]]) -> None:
        for fut, err, latency_s in batch:
            if fut.done():
                continue
            if err is None:
                fut.set_result(latency_s)
            else:
                fut.set_exception(RuntimeError(f"{err.name()}: {err.str()}"))

    poller = threading.Thread(target=poll_producer, name="offered-load-acks", daemon=True)
    poller.start()
    try:
        if on_ready is not None:
            on_ready(shape)

        async def send(value: bytes) -> asyncio.Future[Any]:
            fut: asyncio.Future[Any] = loop.create_future()
            producer.produce(
                topic,
                value,
                on_delivery=lambda err, msg: delivered.append((fut, err, msg.latency())),
            )
            return fut

        async def receive() -> list[bytes]:
            messages = await asyncio.to_thread(consume_ready, consumer, 500, POLL_MS / 1000.0)
            return [v for m in messages if m.error() is None and (v := m.value()) is not None]

        result = await measure_offered_load(
            send,
            [receive],
            num_records,
            record_size,
            records_per_sec,
            timeout_ms=timeout_ms,
            clock=clock,
        )
    finally:
        polling.clear()
        await asyncio.to_thread(poller.join)
        await asyncio.to_thread(producer.flush, 10)
        await asyncio.to_thread(consumer.close)
    return dataclasses.replace(result, shape=shape)


def _connect(
    pconfig: dict[str, Any], cconfig: dict[str, Any], topic: str
) -> tuple[Any, Any, TopicShape]:
    """The producer, and the consumer assigned every partition of `topic` at its end (the
    ends looked up first, as Kafka's seekToEnd then position), its group coordinator found."""
    from confluent_kafka import TopicPartition

    from minikafka.client.librdkafka import (
        await_group_coordinator,
        new_consumer,
        new_producer,
        topic_metadata,
        watermarks,
    )

    producer = new_producer(pconfig)
    consumer = new_consumer(cconfig)
    md = topic_metadata(consumer, topic, METADATA_TIMEOUT_S)
    ends = {
        p: watermarks(consumer, topic, p, METADATA_TIMEOUT_S)[1]
        for p in sorted(md.topics[topic].partitions)
    }
    await_group_coordinator(consumer, topic, next(iter(ends)), METADATA_TIMEOUT_S)
    consumer.assign([TopicPartition(topic, p, end) for p, end in ends.items()])
    return producer, consumer, topic_shape(md, topic)
