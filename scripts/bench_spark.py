#!/usr/bin/env python3
"""The Spark source and sink against minikafka's own perf tools, in one run.

1. A fresh LocalCluster (ZooKeeper + 3 brokers on loopback, free ports), topics of
   --partitions partitions (default 12: enough for two executors), RF 3,
   min.insync.replicas 2.
2. `perf produce`: --records records of --record-size bytes (default 1,000,000 x 1 KiB),
   acks=all, batch.size 65536, linger.ms 5 (minikafka.perf.run_producer_perf) into the read
   topic. This is the sink's reference.
3. `perf consume` of that topic from the start (minikafka.perf.run_consumer_perf): the
   source's reference.
Part `local` (Spark in local mode, local[--spark-partitions]):
4. Spark batch read of the same topic: `spark.read.format("minikafka")...load()` written to
   Spark's `noop` sink (every row and column is produced, nothing stored), timed from the
   action's start to its end; the JVM is started and warmed up by a small read first.
5. Spark batch write: `spark.range(N)` with a value of --record-size bytes per row, written
   with `df.write.format("minikafka")` (acks=all, the same batch.size and linger.ms) into an
   empty topic; --spark-partitions write tasks (default 2: local[2]).
6. One streaming micro-batch at a steady trickle: a librdkafka producer sends
   --trickle-rate records/s (1 KiB, acks=all, linger.ms 0) for --trickle-seconds while a
   query reads the topic (default trigger: the next micro-batch as soon as the last one
   ends) into the noop sink. From Spark's own progress figures of the non-empty
   micro-batches: their durations (triggerExecution: p50, p95, max) and the median time of
   each of Spark's phases.
Part `standalone` (a Spark standalone cluster, minikafka.spark.standalone, for each count of
--workers: a fresh master and that many workers of 1 core each, one executor of 1 core on
each; the workers share this machine's cores with the brokers and the driver):
7. The batch read of step 4 on the cluster, timed the same way once the executors are up and
   have run a small read (their start is not timed); MB/s beside perf consume's and local
   mode's.
Part `latency` (on each of --latency-on: the standalone cluster of the most workers, local):
8. The click pipeline (minikafka.spark.pipeline: start_pipeline, its 10 s windows with a 10 s
   watermark, append mode, 2 s trigger) fed --latency-rate clicks/s for --latency-seconds by
   pipeline.generate, each click's event time the wall clock when it is produced. A
   consumer of the output topic stamps each window count's arrival (wall clock: one machine,
   one clock). Per click of every window the run closed: arrival of its window's count -
   its event time (p50, p99), split into the floor the window and watermark set (window end
   + watermark delay - event time, then the wait until the micro-batch that acts on the
   advanced watermark starts: by Spark's progress, the first batch whose watermark is at
   the window's end or past it; that wait is, per window count, the wait for the batch
   that reads the click closing the window and that batch's run until the next starts) and
   the processing (that batch's start until the count is consumed). The counts are checked
   against the clicks produced.

MB = 2^20 bytes of keys and values (as Kafka's perf tools count). Prints a table and writes
bench_spark.json into --out.

Usage: .venv/bin/python scripts/bench_spark.py [--records 1000000] [--record-size 1024]
       [--out bench-out/spark] [--data-dir DIR] [--trickle-rate 100] [--trickle-seconds 30]
       [--parts local,standalone,latency] [--workers 1,2] [--latency-rate 1000]
       [--latency-seconds 90] [--latency-on standalone,local]
Needs: pip install -e '.[spark,perf]' and Java 17.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.librdkafka import client_config, new_admin, new_consumer, new_producer
from minikafka.cluster import LocalCluster
from minikafka.perf import run_consumer_perf, run_producer_perf
from minikafka.spark import pipeline
from minikafka.spark.standalone import StandaloneCluster

MB = 1024 * 1024
PRODUCER = {"acks": "all", "batch.size": 65536, "linger.ms": 5}


def create_topic(cluster: LocalCluster, name: str, partitions: int) -> None:
    """RF 3, min.insync.replicas 2, with librdkafka's AdminClient; returns once the
    controller answered (it waits up to 60 s for a leader of every partition)."""
    admin = new_admin(client_config(cluster.bootstrap_servers, {}))
    new = NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new], operation_timeout=60, request_timeout=90)[name].result(timeout=120)


class Producing:
    """A librdkafka producer (acks=all and `config`) that counts failed records, reported
    to its delivery callback in poll() and flush()."""

    def __init__(self, bootstrap: str, config: dict[str, Any] | None = None) -> None:
        self.failed: list[str] = []
        self.producer: Producer = new_producer(
            client_config(
                bootstrap, {"acks": "all", **(config or {}), "on_delivery": self._delivered}
            )
        )

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.failed.append(f"{msg.topic()}-{msg.partition()}: {err.name()}: {err.str()}")

    def send(self, topic: str, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(topic, value)
                break
            except BufferError:  # librdkafka's queue is full: wait for acknowledgements
                self.producer.poll(0.01)
        self.producer.poll(0)

    def flush(self, timeout_s: float = 60) -> None:
        undelivered = self.producer.flush(timeout_s)
        if self.failed or undelivered:
            raise RuntimeError(
                f"{len(self.failed)} records failed, {undelivered} undelivered; "
                f"first: {self.failed[:1]}"
            )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def figures(rows: int, nbytes: int, seconds: float) -> dict[str, float]:
    return {
        "rows": rows,
        "seconds": round(seconds, 3),
        "rows_per_s": round(rows / seconds, 1),
        "mb_per_s": round(nbytes / MB / seconds, 2),
    }


def trickle(
    spark: Any, cluster: LocalCluster, topic: str, rate: int, seconds: float, size: int
) -> dict[str, Any]:
    """Micro-batches of a query reading a topic that a producer feeds `rate` records/s."""
    query = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .load()
        .selectExpr("unix_millis(timestamp) AS ts")
        .writeStream.format("noop")
        .start()
    )
    stop = threading.Event()
    sent = [0]

    def produce() -> None:
        producer = Producing(cluster.bootstrap_servers, {"linger.ms": 0})
        payload = b"x" * size
        start = time.monotonic()
        while not stop.is_set():
            producer.send(topic, payload)
            sent[0] += 1
            delay = start + sent[0] / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        producer.flush()

    try:
        while query.lastProgress is None:  # the first (empty) batch: the query is running
            time.sleep(0.1)
        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        time.sleep(seconds)
        stop.set()
        thread.join()
        query.processAllAvailable()
        progress = list(query.recentProgress)
    finally:
        query.stop()
    batches = [p for p in progress if p["numInputRows"]]
    durations = sorted(p["durationMs"]["triggerExecution"] for p in batches)
    rows = sum(p["numInputRows"] for p in batches)
    return {
        "rate": rate,
        "seconds": seconds,
        "records_sent": sent[0],
        "records_read": rows,
        "micro_batches": len(batches),
        "rows_per_batch_median": statistics.median(p["numInputRows"] for p in batches),
        "batch_duration_ms_p50": statistics.median(durations),
        "batch_duration_ms_p95": durations[int(0.95 * (len(durations) - 1))],
        "batch_duration_ms_max": durations[-1],
        # where a batch's time goes, by Spark's own phases (median of each)
        "phase_ms_p50": {
            phase: statistics.median(p["durationMs"].get(phase, 0) for p in batches)
            for phase in sorted({k for p in batches for k in p["durationMs"]})
        },
    }


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of `values` by nearest rank."""
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(pct(values, 0.5), 1),
        "p99": round(pct(values, 0.99), 1),
        "max": round(max(values), 1),
    }


def epoch_ms(iso: str) -> int:
    """Spark's progress times (ISO 8601, UTC) as epoch milliseconds."""
    return round(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def watermark_of(progress: Any) -> int:
    """The event-time watermark a micro-batch ran with (epoch ms; 0 before there is one)."""
    return epoch_ms(progress["eventTime"].get("watermark", "1970-01-01T00:00:00Z"))


def live_clicks(count: int, sent: list[pipeline.Click]) -> Iterator[pipeline.Click]:
    """`count` clicks, each stamped with the wall clock when generate() takes it, that is
    just before it produces it (at its rate); each is kept in `sent`."""
    rng = random.Random(1)
    for _ in range(count):
        click = pipeline.Click(
            f"user-{rng.randrange(20)}", rng.choice(pipeline.PAGES), int(time.time() * 1000)
        )
        sent.append(click)
        yield click


class Arrivals:
    """A consumer of the output topic (from its start) in a thread: each window count's
    arrival time (wall clock, ms) as the consumer gets it, the first of each (window start
    ms, page), the sink being at-least-once."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.consumer = new_consumer(
            client_config(
                bootstrap,
                {
                    "enable.auto.commit": False,
                    "isolation.level": "read_uncommitted",
                    # The broker answers a waiting fetch when a record comes; this bounds
                    # the wait should it not.
                    "fetch.wait.max.ms": 100,
                },
            )
        )
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self.seen: dict[tuple[int, str], tuple[float, int]] = {}  # -> (arrival ms, clicks)
        self.duplicates = 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            msg = self.consumer.poll(0.05)
            if msg is None:
                continue
            arrived = time.time() * 1000
            if msg.error() is not None:
                self.errors.append(str(msg.error()))
                continue
            row = json.loads(msg.value() or b"{}")
            key = (epoch_ms(row["window_start"]), row["page"])
            if key in self.seen:
                self.duplicates += 1
            else:
                self.seen[key] = (arrived, int(row["clicks"]))

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.consumer.close()


def stop_between_batches(query: Any, timeout_s: float = 30.0) -> None:
    """Stop a query between micro-batches if it has one within `timeout_s`: stopping one
    mid-batch interrupts its tasks, which Spark logs as errors."""
    deadline = time.monotonic() + timeout_s
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def stream_latency(
    spark: Any, bootstrap: str, work: Path, name: str, rate: int, seconds: float
) -> dict[str, Any]:
    """The click pipeline's latency, click produced -> its window's count consumed from the
    output topic, at `rate` clicks/s for `seconds` (see the module's step 8)."""
    clicks_topic, counts_topic = f"clicks-{name}", f"page-counts-{name}"
    pipeline.ensure_topics(bootstrap, {clicks_topic: 3, counts_topic: 1})  # the CLI's layout
    arrivals = Arrivals(bootstrap, counts_topic)
    try:
        to_topic, to_parquet = pipeline.start_pipeline(
            spark,
            bootstrap,
            clicks_topic=clicks_topic,
            counts_topic=counts_topic,
            parquet_dir=work / "parquet",
            checkpoint_dir=work / "checkpoints",
        )
    except BaseException:
        arrivals.close()
        raise
    progress: dict[int, dict[str, Any]] = {}  # the topic query's micro-batches by batchId

    def collect() -> None:  # recentProgress keeps only the last 100
        for p in to_topic.recentProgress:
            progress[p["batchId"]] = p
        for q in (to_topic, to_parquet):
            if q.exception() is not None:
                raise RuntimeError(f"the pipeline's query failed: {q.exception()}")

    sent: list[pipeline.Click] = []
    failure: list[BaseException] = []

    def produce() -> None:
        try:
            pipeline.generate(bootstrap, clicks_topic, live_clicks(int(rate * seconds), sent), rate)
        except BaseException as e:  # raised in the main thread below
            failure.append(e)

    try:
        # Both queries have run their first (empty) micro-batch: clicks are read as they come.
        while to_topic.lastProgress is None or to_parquet.lastProgress is None:
            collect()
            time.sleep(0.1)
        generator = threading.Thread(target=produce, daemon=True)
        generator.start()
        while generator.is_alive():
            collect()
            generator.join(1.0)
        if failure:
            raise failure[0]
        # The windows the last click's event time closes (end + delay <= it).
        delay = pipeline.WINDOW_MS
        watermark = max(c.ts_ms for c in sent) - delay
        expected: dict[tuple[int, str], int] = {}
        for c in sent:
            start = c.ts_ms - c.ts_ms % pipeline.WINDOW_MS
            if start + pipeline.WINDOW_MS <= watermark:
                expected[(start, c.page)] = expected.get((start, c.page), 0) + 1
        last_end = max(start for start, _ in expected) + pipeline.WINDOW_MS

        def done() -> bool:
            # Every count consumed, and the progress of the batch that wrote the last one
            # reported (after the batch, so after its records are visible).
            if not set(expected) <= set(arrivals.seen):
                return False
            return any(watermark_of(p) >= last_end for p in progress.values())

        deadline = time.monotonic() + 120
        while not done():
            collect()
            if time.monotonic() > deadline:
                missing = sorted(set(expected) - set(arrivals.seen))
                raise RuntimeError(
                    f"{len(missing)} window counts never came ({missing[:3]}), or the "
                    "progress of the batch that wrote them"
                )
            time.sleep(0.2)
        collect()
    finally:
        for query in (to_topic, to_parquet):
            stop_between_batches(query)
        arrivals.close()
    wrong = {k: (n, arrivals.seen[k][1]) for k, n in expected.items() if arrivals.seen[k][1] != n}
    if wrong:
        raise RuntimeError(f"window counts differ from the clicks produced: {wrong}")
    # The batch that emits a window: the first whose watermark is at its end or past it
    # (append mode emits a window once end <= watermark).
    batches = sorted(progress.values(), key=lambda p: p["batchId"])
    marks = [
        (epoch_ms(p["eventTime"].get("watermark", "1970-01-01T00:00:00Z")), p) for p in batches
    ]

    def emitting_batch(window_end: int) -> dict[str, Any]:
        return next(p for mark, p in marks if mark >= window_end)

    def closing_batch(window_end: int) -> dict[str, Any]:
        """The batch that read the first click at the window's end + the delay or later:
        its end moved the watermark past the window."""
        return next(
            p
            for p in batches
            if "max" in p["eventTime"] and epoch_ms(p["eventTime"]["max"]) >= window_end + delay
        )

    total: list[float] = []
    event_time_floor: list[float] = []
    watermark_wait: list[float] = []
    processing: list[float] = []
    windows = []
    times: dict[tuple[int, str], list[int]] = {}
    for c in sent:
        times.setdefault((c.ts_ms - c.ts_ms % pipeline.WINDOW_MS, c.page), []).append(c.ts_ms)
    for (start, page), n in sorted(expected.items()):
        end = start + pipeline.WINDOW_MS
        batch = emitting_batch(end)
        began = epoch_ms(batch["timestamp"])
        closing = closing_batch(end)
        arrived = arrivals.seen[(start, page)][0]
        windows.append(
            {
                "window_start_ms": start,
                "page": page,
                "clicks": n,
                "batch_id": batch["batchId"],
                "watermark_wait_ms": began - (end + delay),
                # of which: until the batch that read the closing click started, then from
                # there until the batch acting on the watermark it set started
                "closing_read_wait_ms": epoch_ms(closing["timestamp"]) - (end + delay),
                "closing_batch_ms": began - epoch_ms(closing["timestamp"]),
                "processing_ms": round(arrived - began, 1),
            }
        )
        for ts in times[(start, page)]:
            total.append(arrived - ts)
            event_time_floor.append(end + delay - ts)
            watermark_wait.append(began - (end + delay))
            processing.append(arrived - began)
    floor = [f + w for f, w in zip(event_time_floor, watermark_wait, strict=True)]
    return {
        "rate": rate,
        "seconds": seconds,
        "clicks_sent": len(sent),
        "clicks_measured": len(total),
        "window_counts_measured": len(expected),
        "duplicate_window_counts": arrivals.duplicates,
        "consumer_errors": arrivals.errors,
        "window_ms": pipeline.WINDOW_MS,
        "watermark_delay_ms": delay,
        "latency_ms": spread(total),
        "floor_ms": spread(floor),
        "event_time_floor_ms": spread(event_time_floor),
        "watermark_wait_ms": spread(watermark_wait),
        # per window count, not per click: the batch that read the closing click
        "closing_read_wait_ms": spread([w["closing_read_wait_ms"] for w in windows]),
        "closing_batch_ms": spread([w["closing_batch_ms"] for w in windows]),
        "processing_ms": spread(processing),
        "micro_batches": len(batches),
        "batch_duration_ms": spread(
            [p["durationMs"]["triggerExecution"] for p in batches if p["batchId"] > 0]
        ),
        "windows": windows,
        # The topic query's micro-batches: id, start (epoch ms), watermark they ran with,
        # clicks read, counts written, duration (ms).
        "batches": [
            [
                p["batchId"],
                epoch_ms(p["timestamp"]),
                watermark_of(p),
                p["numInputRows"],
                p["sink"].get("numOutputRows"),
                p["durationMs"].get("triggerExecution"),
            ]
            for p in batches
        ],
    }


def executors(spark: Any) -> int:
    """How many executors the application has (the status tracker counts the driver too)."""
    return len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1


def standalone_session(cluster: StandaloneCluster, workers: int) -> Any:
    """A session on the cluster with one executor of 1 core on each worker, once they all
    run."""
    spark = pipeline.spark_session(
        "minikafka-bench-spark",
        master=cluster.master_url,
        conf={
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.cores": "1",
            "spark.executor.memory": "1g",
            "spark.cores.max": str(workers),
        },
    )
    deadline = time.monotonic() + 120
    while executors(spark) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{workers} executors did not start in 120 s")
        time.sleep(0.2)
    return spark


PARTS = ("local", "standalone", "latency")
LATENCY_ON = ("standalone", "local")


def names(value: str, allowed: Sequence[str]) -> list[str]:
    chosen = [v for v in value.split(",") if v]
    if not chosen:
        raise argparse.ArgumentTypeError(f"{value!r}: name one or more of {', '.join(allowed)}")
    for v in chosen:
        if v not in allowed:
            raise argparse.ArgumentTypeError(f"{v!r}: not one of {', '.join(allowed)}")
    return chosen


def counts(value: str) -> list[int]:
    try:
        chosen = [int(v) for v in value.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: not a list of worker counts") from None
    if not chosen or min(chosen) < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: worker counts are 1 or more")
    return chosen


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--spark-partitions", type=int, default=2)
    ap.add_argument("--trickle-rate", type=int, default=100)
    ap.add_argument("--trickle-seconds", type=float, default=30.0)
    ap.add_argument(
        "--parts",
        type=lambda v: names(v, PARTS),
        default=list(PARTS),
        help=f"which parts to run, comma-separated (default: {','.join(PARTS)})",
    )
    ap.add_argument(
        "--workers",
        type=counts,
        default=[1, 2],
        help="standalone clusters to read on: their worker counts (default 1,2)",
    )
    ap.add_argument("--latency-rate", type=int, default=1000)
    ap.add_argument("--latency-seconds", type=float, default=90.0)
    ap.add_argument(
        "--latency-on",
        type=lambda v: names(v, LATENCY_ON),
        default=list(LATENCY_ON),
        help="where the latency part runs: standalone (the cluster of the most --workers), local",
    )
    ap.add_argument("--out", type=Path, default=Path("bench-out/spark"))
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    if "latency" in args.parts and not args.latency_on:
        ap.error("--latency-on: the latency part needs somewhere to run")
    return args


def main() -> int:
    args = parse_args()
    console = Console()
    args.out.mkdir(parents=True, exist_ok=True)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-spark-"))
    n, size = args.records, args.record_size
    reads = "local" in args.parts or "standalone" in args.parts
    latency_on = args.latency_on if "latency" in args.parts else []
    cluster = LocalCluster(
        data_dir / "kafka",
        3,
        base_port=0,
        zookeeper_port=0,
        overrides={"auto.leader.rebalance.enable": "false"},
    )
    cluster.start(timeout=120)
    out: dict[str, Any] = {
        "parts": args.parts,
        "records": n,
        "record_size": size,
        "partitions": args.partitions,
        "producer": PRODUCER,
    }
    try:
        bs = cluster.bootstrap_servers
        for name in ("bench-read", "bench-sink", "bench-trickle", "bench-warmup"):
            create_topic(cluster, name, args.partitions)
        warm_up = Producing(bs)
        for _ in range(1000):
            warm_up.send("bench-warmup", b"w" * size)
        warm_up.flush()
        del warm_up  # librdkafka's client goes with its last reference, before the cluster
        if reads:
            console.print(f"perf produce: {n:,} x {size} B ...")
            produced = asyncio.run(
                run_producer_perf(bs, "bench-read", n, size, producer_config=PRODUCER)
            )
            assert produced.failed == 0, produced.first_error
            out["perf_produce"] = figures(produced.records, produced.bytes, produced.elapsed_s)
            console.print("perf consume ...")
            consumed = asyncio.run(run_consumer_perf(bs, "bench-read", n))
            out["perf_consume"] = figures(consumed.messages, consumed.bytes, consumed.elapsed_s)
            read_bytes = consumed.bytes

        def read(spark: Any, topic: str) -> Any:
            return (
                spark.read.format("minikafka")
                .option("kafka.bootstrap.servers", bs)
                .option("subscribe", topic)
                .load()
            )

        def timed_read(spark: Any) -> dict[str, float]:
            seconds = timed(
                lambda: read(spark, "bench-read").write.format("noop").mode("overwrite").save()
            )
            return figures(n, read_bytes, seconds)

        if "local" in args.parts or "local" in latency_on:
            console.print("Spark (local): start and warm up ...")
            spark = pipeline.spark_session(
                "minikafka-bench-spark", cores=args.spark_partitions, driver_memory="4g"
            )
            read(spark, "bench-warmup").write.format("noop").mode("overwrite").save()
            if "local" in args.parts:
                console.print("Spark batch read ...")
                out["spark_read"] = timed_read(spark)
                console.print("Spark batch write ...")
                df = spark.range(0, n, 1, args.spark_partitions).selectExpr(
                    f"repeat('x', {size}) AS value"
                )
                writer = (
                    df.write.format("minikafka")
                    .option("kafka.bootstrap.servers", bs)
                    .option("topic", "bench-sink")
                    .option("kafka.acks", "all")
                    .option("kafka.batch.size", str(PRODUCER["batch.size"]))
                    .option("kafka.linger.ms", str(PRODUCER["linger.ms"]))
                    .mode("append")
                )
                seconds = timed(writer.save)
                written = read(spark, "bench-sink").count()
                assert written == n, f"the sink wrote {written} records, not {n}"
                out["spark_write"] = figures(n, n * size, seconds)
                console.print(f"Spark streaming at {args.trickle_rate} records/s ...")
                out["spark_trickle"] = trickle(
                    spark, cluster, "bench-trickle", args.trickle_rate, args.trickle_seconds, size
                )
            if "local" in latency_on:
                console.print(
                    f"click pipeline (local) at {args.latency_rate} clicks/s for "
                    f"{args.latency_seconds:g} s ..."
                )
                out["latency_local"] = stream_latency(
                    spark,
                    bs,
                    data_dir / "latency-local",
                    "local",
                    args.latency_rate,
                    args.latency_seconds,
                )
            spark.stop()

        standalone_runs = args.workers if "standalone" in args.parts else []
        if "standalone" in latency_on and not standalone_runs:
            standalone_runs = [max(args.workers)]
        for i, workers in enumerate(standalone_runs):
            console.print(f"Spark standalone, {workers} worker(s) of 1 core: start ...")
            sa = StandaloneCluster(data_dir / f"standalone-{workers}", workers, worker_memory="2g")
            sa.start()
            try:
                spark = standalone_session(sa, workers)
                try:
                    # Its tasks spread over every executor: their Python workers start and
                    # import minikafka.
                    read(spark, "bench-warmup").write.format("noop").mode("overwrite").save()
                    if "standalone" in args.parts:
                        console.print(f"Spark batch read on {workers} worker(s) ...")
                        out.setdefault("standalone_read", {})[str(workers)] = timed_read(spark)
                    if "standalone" in latency_on and i == len(standalone_runs) - 1:
                        console.print(
                            f"click pipeline ({workers} worker(s)) at {args.latency_rate} "
                            f"clicks/s for {args.latency_seconds:g} s ..."
                        )
                        result = stream_latency(
                            spark,
                            bs,
                            data_dir / "latency-standalone",
                            "standalone",
                            args.latency_rate,
                            args.latency_seconds,
                        )
                        out["latency_standalone"] = {"workers": workers, **result}
                finally:
                    spark.stop()  # before its executors go
            finally:
                sa.stop()
    finally:
        cluster.stop(timeout=60)

    report(console, args, out)
    (args.out / "bench_spark.json").write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"figures: {args.out / 'bench_spark.json'}")
    return 0


def report(console: Console, args: argparse.Namespace, out: dict[str, Any]) -> None:
    """The ratios into `out`, and the table and lines printed."""
    n, size = out["records"], out["record_size"]
    rows: list[tuple[str, dict[str, float], str, str]] = []
    if "perf_consume" in out:
        consume = out["perf_consume"]["mb_per_s"]
        rows.append(("perf consume", out["perf_consume"], "", ""))
        if "spark_read" in out:
            out["read_vs_perf_consume"] = round(out["spark_read"]["mb_per_s"] / consume, 2)
            rows.append(
                (
                    "Spark batch read, local[2]"
                    if args.spark_partitions == 2
                    else f"Spark batch read, local[{args.spark_partitions}]",
                    out["spark_read"],
                    f"{out['read_vs_perf_consume']}x",
                    "",
                )
            )
        for workers, f in out.get("standalone_read", {}).items():
            f["vs_perf_consume"] = round(f["mb_per_s"] / consume, 2)
            vs_local = ""
            if "spark_read" in out:
                f["vs_local"] = round(f["mb_per_s"] / out["spark_read"]["mb_per_s"], 2)
                vs_local = f"{f['vs_local']}x"
            rows.append(
                (
                    f"Spark batch read, standalone {workers} worker(s)",
                    f,
                    f"{f['vs_perf_consume']}x",
                    vs_local,
                )
            )
        rows.append(("perf produce (acks=all)", out["perf_produce"], "", ""))
    if "spark_write" in out:
        out["write_vs_perf_produce"] = round(
            out["spark_write"]["mb_per_s"] / out["perf_produce"]["mb_per_s"], 2
        )
        rows.append(
            (
                "Spark batch write (acks=all)",
                out["spark_write"],
                f"{out['write_vs_perf_produce']}x",
                "",
            )
        )
    if rows:
        table = Table(
            title=f"Spark and minikafka: {n:,} records of {size} B, {args.partitions} partitions"
        )
        for col in ("workload", "rows/s", "MB/s", "seconds", "vs perf tool", "vs local"):
            table.add_column(col, justify="right" if col != "workload" else "left")
        for label, f, ratio, vs_local in rows:
            table.add_row(
                label,
                f"{f['rows_per_s']:,.0f}",
                f"{f['mb_per_s']:.1f}",
                f"{f['seconds']:.1f}",
                ratio,
                vs_local,
            )
        console.print(table)
    if "standalone_read" in out:
        out["standalone_note"] = (
            f"each worker runs one executor of 1 core; this machine has {os.cpu_count()} "
            "cores, which the workers share with the brokers, ZooKeeper and the driver"
        )
        console.print(f"standalone: {out['standalone_note']}")
    if "spark_trickle" in out:
        t = out["spark_trickle"]
        console.print(
            f"streaming at {t['rate']} records/s: {t['micro_batches']} micro-batches, "
            f"{t['rows_per_batch_median']} rows each (median); batch duration p50 "
            f"{t['batch_duration_ms_p50']} ms, p95 {t['batch_duration_ms_p95']} ms, "
            f"max {t['batch_duration_ms_max']} ms; {t['records_read']} of {t['records_sent']} read"
        )
        console.print(f"  phases (median ms): {t['phase_ms_p50']}")
    for where in ("standalone", "local"):
        lat = out.get(f"latency_{where}")
        if lat is None:
            continue
        on = f"{lat['workers']} worker(s)" if where == "standalone" else "local"
        console.print(
            f"click pipeline ({on}) at {lat['rate']} clicks/s: click produced -> its window's "
            f"count consumed, over {lat['clicks_measured']:,} clicks in "
            f"{lat['window_counts_measured']} window counts: p50 {ms(lat['latency_ms']['p50'])}, "
            f"p99 {ms(lat['latency_ms']['p99'])}"
        )
        console.print(
            f"  floor of the window and watermark: p50 {ms(lat['floor_ms']['p50'])}, p99 "
            f"{ms(lat['floor_ms']['p99'])} (window end + 10 s - event time: p50 "
            f"{ms(lat['event_time_floor_ms']['p50'])}; then until the batch acting on the "
            f"watermark starts: p50 {ms(lat['watermark_wait_ms']['p50'])}, p99 "
            f"{ms(lat['watermark_wait_ms']['p99'])}: to the start of the batch reading the "
            f"click that closes the window p50 {ms(lat['closing_read_wait_ms']['p50'])}, "
            f"then that batch until the next starts p50 "
            f"{ms(lat['closing_batch_ms']['p50'])})"
        )
        console.print(
            f"  processing, that batch's start -> consumed: p50 "
            f"{ms(lat['processing_ms']['p50'])}, p99 {ms(lat['processing_ms']['p99'])}; "
            f"the topic query's micro-batches (after the first) took p50 "
            f"{ms(lat['batch_duration_ms']['p50'])}, max {ms(lat['batch_duration_ms']['max'])}"
        )


def ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        sys.exit(main())
