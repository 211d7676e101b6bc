#!/usr/bin/env python3
"""The Spark source and sink against minikafka's own perf tools, in one run.

1. A fresh LocalCluster (ZooKeeper + 3 brokers on loopback, free ports), topics of
   --partitions partitions (default 3), RF 3, min.insync.replicas 2.
2. `perf produce`: --records records of --record-size bytes (default 1,000,000 x 1 KiB),
   acks=all, batch.size 65536, linger.ms 5 (minikafka.perf.run_producer_perf) into the read
   topic. This is the sink's reference.
3. `perf consume` of that topic from the start (minikafka.perf.run_consumer_perf): the
   source's reference.
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

MB = 2^20 bytes of keys and values (as Kafka's perf tools count). Prints a table and writes
bench_spark.json into --out.

Usage: .venv/bin/python scripts/bench_spark.py [--records 1000000] [--record-size 1024]
       [--out bench-out/spark] [--data-dir DIR] [--trickle-rate 100] [--trickle-seconds 30]
Needs: pip install -e '.[spark,perf]' and Java 17.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table

from minikafka.client.librdkafka import client_config, new_admin, new_producer
from minikafka.cluster import LocalCluster
from minikafka.perf import run_consumer_perf, run_producer_perf
from minikafka.spark import pipeline

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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--spark-partitions", type=int, default=2)
    ap.add_argument("--trickle-rate", type=int, default=100)
    ap.add_argument("--trickle-seconds", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=Path("bench-out/spark"))
    ap.add_argument("--data-dir", type=Path, default=None)
    return ap.parse_args(argv)


def main() -> int:
    args = parse_args()
    console = Console()
    args.out.mkdir(parents=True, exist_ok=True)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-spark-"))
    n, size = args.records, args.record_size
    cluster = LocalCluster(
        data_dir,
        3,
        base_port=0,
        zookeeper_port=0,
        overrides={"auto.leader.rebalance.enable": "false"},
    )
    cluster.start(timeout=120)
    out: dict[str, Any] = {
        "records": n,
        "record_size": size,
        "partitions": args.partitions,
        "producer": PRODUCER,
    }
    try:
        bs = cluster.bootstrap_servers
        for name in ("bench-read", "bench-sink", "bench-trickle", "bench-warmup"):
            create_topic(cluster, name, args.partitions)
        console.print(f"perf produce: {n:,} x {size} B ...")
        produced = asyncio.run(
            run_producer_perf(bs, "bench-read", n, size, producer_config=PRODUCER)
        )
        assert produced.failed == 0, produced.first_error
        out["perf_produce"] = figures(produced.records, produced.bytes, produced.elapsed_s)
        console.print("perf consume ...")
        consumed = asyncio.run(run_consumer_perf(bs, "bench-read", n))
        out["perf_consume"] = figures(consumed.messages, consumed.bytes, consumed.elapsed_s)

        console.print("Spark: start and warm up ...")
        spark = pipeline.spark_session(
            "minikafka-bench-spark", cores=args.spark_partitions, driver_memory="4g"
        )

        def read(topic: str) -> Any:
            return (
                spark.read.format("minikafka")
                .option("kafka.bootstrap.servers", bs)
                .option("subscribe", topic)
                .load()
            )

        warm_up = Producing(bs)
        for _ in range(1000):
            warm_up.send("bench-warmup", b"w" * size)
        warm_up.flush()
        del warm_up  # librdkafka's client goes with its last reference, before the cluster
        read("bench-warmup").write.format("noop").mode("overwrite").save()

        console.print("Spark batch read ...")
        seconds = timed(lambda: read("bench-read").write.format("noop").mode("overwrite").save())
        out["spark_read"] = figures(n, consumed.bytes, seconds)

        console.print("Spark batch write ...")
        df = spark.range(0, n, 1, args.spark_partitions).selectExpr(f"repeat('x', {size}) AS value")
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
        written = read("bench-sink").count()
        assert written == n, f"the sink wrote {written} records, not {n}"
        out["spark_write"] = figures(n, n * size, seconds)

        console.print(f"Spark streaming at {args.trickle_rate} records/s ...")
        out["spark_trickle"] = trickle(
            spark, cluster, "bench-trickle", args.trickle_rate, args.trickle_seconds, size
        )
        spark.stop()
    finally:
        cluster.stop(timeout=60)

    out["read_vs_perf_consume"] = round(
        out["spark_read"]["mb_per_s"] / out["perf_consume"]["mb_per_s"], 2
    )
    out["write_vs_perf_produce"] = round(
        out["spark_write"]["mb_per_s"] / out["perf_produce"]["mb_per_s"], 2
    )
    table = Table(
        title=f"Spark and minikafka: {n:,} records of {size} B, {args.partitions} partitions"
    )
    for col in ("workload", "rows/s", "MB/s", "seconds", "vs perf tool"):
        table.add_column(col, justify="right" if col != "workload" else "left")
    rows = [
        ("perf consume", out["perf_consume"], ""),
        ("Spark batch read", out["spark_read"], f"{out['read_vs_perf_consume']}x"),
        ("perf produce (acks=all)", out["perf_produce"], ""),
        ("Spark batch write (acks=all)", out["spark_write"], f"{out['write_vs_perf_produce']}x"),
    ]
    for label, f, ratio in rows:
        table.add_row(
            label, f"{f['rows_per_s']:,.0f}", f"{f['mb_per_s']:.1f}", f"{f['seconds']:.1f}", ratio
        )
    console.print(table)
    t = out["spark_trickle"]
    console.print(
        f"streaming at {t['rate']} records/s: {t['micro_batches']} micro-batches, "
        f"{t['rows_per_batch_median']} rows each (median); batch duration p50 "
        f"{t['batch_duration_ms_p50']} ms, p95 {t['batch_duration_ms_p95']} ms, "
        f"max {t['batch_duration_ms_max']} ms; {t['records_read']} of {t['records_sent']} read"
    )
    console.print(f"  phases (median ms): {t['phase_ms_p50']}")
    (args.out / "bench_spark.json").write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"figures: {args.out / 'bench_spark.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
