#!/usr/bin/env python3
"""The Spark batch read on docker-compose's `spark` profile, next to `perf consume` in the
same network, in one run.

A compose project of its own (free host ports; the images built from this checkout if they
are missing): ZooKeeper, three brokers, a Spark master and two workers of one core each.
`perf produce` writes `--records` 1 KiB records (acks=all) to a 12-partition RF=3 topic
from the host; `perf consume` reads them inside spark-master, where the driver runs; then a
Spark batch read of the whole topic into Spark's `noop` sink runs on the cluster with
`spark.cores.max` 1 (one executor, on one worker) and 2 (both workers), each timed from the
action's start to its end once the executors are up and have run a small read. Every
container shares this machine's cores.

    .venv/bin/python scripts/bench_spark_compose.py --records 1000000 --out bench-out/spark-compose

Needs a Docker engine with Compose v2 (scripts/docker-setup.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minikafka.cli.signals import sigterm_as_interrupt  # noqa: E402
from minikafka.cluster.compose import ComposeCluster  # noqa: E402

TOPIC = "spark-bench"
PARTITIONS = 12
RECORD_BYTES = 1024
INTERNAL = "broker1:19092,broker2:19092,broker3:19092"

# Run by python3 in spark-master: argv[1] cores, argv[2] topic, argv[3] records, argv[4]
# the brokers.
READ = textwrap.dedent(
    """
    import json, sys, time
    from minikafka.spark.pipeline import spark_session

    cores, topic, records, brokers = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    spark = spark_session(
        app_name=f"bench-read-{cores}",
        master="spark://spark-master:7077",
        conf={
            "spark.cores.max": str(cores),
            "spark.executor.cores": "1",
            "spark.executor.memory": "512m",
            "spark.ui.enabled": "false",
        },
    )
    sc = spark.sparkContext
    deadline = time.monotonic() + 120
    # Executors plus the driver's own entry.
    while sc._jsc.sc().getExecutorMemoryStatus().size() < cores + 1:
        if time.monotonic() > deadline:
            raise SystemExit(f"{cores} executors did not start")
        time.sleep(0.2)

    def read():
        return (
            spark.read.format("minikafka")
            .option("kafka.bootstrap.servers", brokers)
            .option("subscribe", topic)
            .load()
        )

    read().limit(100).write.format("noop").mode("overwrite").save()  # warm-up
    started = time.monotonic()
    read().write.format("noop").mode("overwrite").save()
    seconds = time.monotonic() - started
    assert read().count() == records
    print(json.dumps({"cores": cores, "seconds": seconds}))
    spark.stop()
    """
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=Path("bench-out/spark-compose"))
    ap.add_argument("--keep", action="store_true", help="leave the compose project running")
    return ap.parse_args(argv)


def main() -> None:
    args = parse_args()
    cc = ComposeCluster(name="minikafka-bench-spark")
    mb = args.records * RECORD_BYTES / 1e6
    try:
        print(f"compose project {cc.name}: up with the spark profile ...", flush=True)
        cc.compose("--profile", "spark", "up", "-d", "--wait", timeout=1800)
        minikafka = [sys.executable, "-m", "minikafka"]
        env = {**os.environ, "MINIKAFKA_BOOTSTRAP_SERVERS": cc.bootstrap_servers}
        subprocess.run(
            [
                *(*minikafka, "topics", "--create", "--topic", TOPIC),
                *("--partitions", str(PARTITIONS), "--replication-factor", "3"),
            ],
            env=env,
            check=True,
        )
        subprocess.run(
            [
                *(*minikafka, "perf", "produce", "--topic", TOPIC),
                *("--num-records", str(args.records), "--record-size", str(RECORD_BYTES)),
                *("--throughput", "-1", "--acks", "all"),
                *("--producer-property", "linger.ms=5", "--producer-property", "batch.size=65536"),
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        consumed = cc.compose(
            *("exec", "-T", "spark-master", "minikafka", "perf", "consume"),
            *("--topic", TOPIC, "--messages", str(args.records)),
        )
        row = consumed.strip().splitlines()[-1].split(", ")
        perf_mb_s = float(row[3])
        print(f"perf consume in spark-master: {perf_mb_s:.1f} MB/s", flush=True)
        reads = {}
        for cores in (1, 2):
            printed = cc.compose(
                *("exec", "-T", "spark-master", "python3", "-c", READ),
                *(str(cores), TOPIC, str(args.records), INTERNAL),
                timeout=1800,
            )
            found = re.search(r"^\{.*\}$", printed, re.M)
            assert found is not None, printed
            seconds = json.loads(found[0])["seconds"]
            reads[cores] = {
                "seconds": seconds,
                "mb_per_s": mb / seconds,
                "vs_perf_consume": mb / seconds / perf_mb_s,
            }
            print(
                f"Spark read, {cores} worker(s): {mb / seconds:.1f} MB/s "
                f"({mb / seconds / perf_mb_s:.2f}x perf consume)",
                flush=True,
            )
    finally:
        if not args.keep:
            cc.compose("--profile", "spark", "down", "-v", timeout=300)
    args.out.mkdir(parents=True, exist_ok=True)
    figures = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "records": args.records,
        "record_bytes": RECORD_BYTES,
        "partitions": PARTITIONS,
        "perf_consume_mb_per_s": perf_mb_s,
        "spark_read": {str(k): v for k, v in reads.items()},
    }
    (args.out / "bench_spark_compose.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        main()
