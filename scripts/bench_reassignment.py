#!/usr/bin/env python3
"""Partition reassignment figures, measured on a real local cluster in one run.

A 3-broker cluster grows to four; a topic of 6 partitions (RF 3, min.insync.replicas 2)
holds `--megabytes` of 1 KiB records. An acks=all producer (librdkafka, linger.ms 0) sends
`--rate` records/s to it throughout and times each send until its acknowledgement:

1. at rest, for `--seconds`;
2. while half the partitions move (each gets broker 4 in place of its preferred leader, so
   the new replica copies the partition from the log start and leadership moves), from the
   AlterPartitionReassignments request until every move is complete.

It reports the produce latency (p50, p99, max) of both phases side by side, how long the
moves took, the bytes the new replicas copied and the copy rate.

Usage: .venv/bin/python scripts/bench_reassignment.py [--megabytes 1000] [--rate 500]
       [--seconds 15] [--data-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.controller_calls import ControllerClient
from minikafka.client.librdkafka import client_config, new_admin, new_producer
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition

TOPIC = "moving"
PARTITIONS = 6
RECORD = 1024
QUIET = {"log_level": 3}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--megabytes", type=int, default=1000, help="data in the topic before")
    ap.add_argument("--rate", type=int, default=500, help="probe records per second")
    ap.add_argument("--seconds", type=float, default=15.0, help="the at-rest phase")
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    return ap.parse_args(argv)


def preload(servers: str, megabytes: int) -> None:
    producer = new_producer(
        client_config(servers, {"acks": "all", "linger.ms": 20, "batch.size": 1 << 20, **QUIET})
    )
    value = os.urandom(RECORD)
    for i in range(megabytes * 1024):
        while True:
            try:
                producer.produce(TOPIC, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300):
        raise RuntimeError("preload not acknowledged")


@dataclass
class Send:
    at: float  # time.monotonic() when produced
    latency: float | None = None  # seconds to its acknowledgement; None: none (yet)


class Probe:
    """acks=all sends at a fixed rate; each one's send time and time to its
    acknowledgement. A phase is the sends made within its time window, whatever the
    thread's scheduling."""

    def __init__(self, servers: str, rate: int) -> None:
        self._producer = new_producer(
            client_config(
                servers, {"acks": "all", "linger.ms": 0, "enable.idempotence": True, **QUIET}
            )
        )
        self._interval = 1.0 / rate
        self._value = os.urandom(RECORD)
        self.sends: list[Send] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def between(self, start: float, end: float) -> tuple[int, list[float]]:
        """The sends made in [start, end): how many, and the latencies of those
        acknowledged."""
        window = [s for s in self.sends if start <= s.at < end]
        return len(window), [s.latency for s in window if s.latency is not None]

    def largest_gap(self, start: float, end: float) -> float:
        """The longest time in [start, end] without a send (a stalled probe shows here)."""
        times = [start, *(s.at for s in self.sends if start <= s.at < end), end]
        return max(b - a for a, b in itertools.pairwise(times))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            send = Send(time.monotonic())

            def report(err: object, _msg: object, send: Send = send) -> None:
                if err is None:
                    send.latency = time.monotonic() - send.at
                else:
                    self.failed += 1

            self._producer.produce(TOPIC, self._value, on_delivery=report)
            self.sends.append(send)
            # A fixed rate: a send late by more than a few intervals is not made up for
            # with a burst (which would skew the latencies after any stall).
            next_at = max(next_at + self._interval, time.monotonic() - 5 * self._interval)
            # poll returns as soon as it has served a delivery report: wait out the rest.
            while (delay := next_at - time.monotonic()) > 0:
                self._producer.poll(delay)
            self._producer.poll(0)
        self._producer.flush(60)


def percentiles(latencies: list[float]) -> dict[str, float]:
    ms = sorted(x * 1000 for x in latencies)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"count": len(ms), "p50_ms": q[49], "p99_ms": q[98], "max_ms": ms[-1]}


def partition_bytes(cluster: LocalCluster, broker_id: int, tp: TopicPartition) -> int:
    path = cluster.log_dir(broker_id) / f"{tp.topic}-{tp.partition}"
    return sum(f.stat().st_size for f in path.glob("*.log"))


async def move(cluster: LocalCluster, targets: dict[TopicPartition, list[int]]) -> float:
    client = ControllerClient(cluster.bootstrap_servers, client_id="bench-reassignment")
    zk = cluster.zk_client()
    try:
        started = time.monotonic()
        errors = await client.alter_partition_reassignments(targets)
        assert not any(errors.values()), errors
        while True:
            assignment = zk.get_assignment(TOPIC) or {}
            if all(list(assignment[tp.partition]) == t for tp, t in targets.items()):
                return time.monotonic() - started
            if time.monotonic() - started > 1800:
                raise TimeoutError("the moves did not complete in 30 minutes")
            await asyncio.sleep(0.05)
    finally:
        await client.close()


async def main() -> None:
    args = parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-reassignment-"))
    cluster = LocalCluster(data_dir, 3, overrides={"auto.leader.rebalance.enable": "false"})
    console = Console()
    cluster.start(timeout=120)
    try:
        servers = cluster.bootstrap_servers
        admin = new_admin(client_config(servers, QUIET))
        assignment = [[1 + (p + i) % 3 for i in range(3)] for p in range(PARTITIONS)]
        new = NewTopic(
            TOPIC, PARTITIONS, replica_assignment=assignment, config={"min.insync.replicas": "2"}
        )
        for f in admin.create_topics([new]).values():
            f.result(60)
        console.print(f"cluster up in {data_dir}; writing {args.megabytes} MB…")
        preload(servers, args.megabytes)
        cluster.add_broker(timeout=120)
        probe = Probe(cluster.bootstrap_servers, args.rate)
        probe.start()
        time.sleep(2)  # connected, metadata known: not part of either phase
        rest_start = time.monotonic()
        time.sleep(args.seconds)
        targets = {
            TopicPartition(TOPIC, p): [4, *assignment[p][1:]] for p in range(0, PARTITIONS, 2)
        }
        moves_start = time.monotonic()
        move_s = await move(cluster, targets)
        moves_end = time.monotonic()
        probe.stop()
        copied = sum(partition_bytes(cluster, 4, tp) for tp in targets)
    finally:
        cluster.stop(timeout=120)
    sent_at_rest, at_rest = probe.between(rest_start, moves_start)
    sent_during, during = probe.between(moves_start, moves_end)
    for phase, latencies, sent, window in (
        ("at rest", at_rest, sent_at_rest, (rest_start, moves_start)),
        ("during the moves", during, sent_during, (moves_start, moves_end)),
    ):
        if len(latencies) < 2:
            # Too few to take percentiles of: say how the probe fared instead.
            raise SystemExit(
                f"{len(latencies)} probe sends acknowledged {phase} of {sent} sent"
                f" ({probe.failed} failed in all) in {window[1] - window[0]:.2f} s,"
                f" the longest without a send {probe.largest_gap(*window):.2f} s:"
                " too few for percentiles"
            )
    figures = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "cluster": "3 brokers + 1 added, ZooKeeper, loopback; topic 6 partitions RF 3",
        "megabytes_in_topic": args.megabytes,
        "probe_rate_per_second": args.rate,
        "at_rest": percentiles(at_rest),
        "during_reassignment": percentiles(during),
        "partitions_moved": len(targets),
        "move_seconds": move_s,
        "bytes_copied": copied,
        "copy_megabytes_per_second": copied / 1e6 / move_s,
        "probe_sent_during_moves": sent_during,
        "probe_longest_without_a_send_during_moves_ms": probe.largest_gap(moves_start, moves_end)
        * 1000,
        "probe_failed_sends": probe.failed,
    }
    table = Table(title="partition reassignment under an acks=all producer")
    table.add_column("measure")
    table.add_column("at rest", justify="right")
    table.add_column("during the moves", justify="right")
    for key, label in (("p50_ms", "produce p50"), ("p99_ms", "produce p99"), ("max_ms", "max")):
        table.add_row(
            label,
            f"{figures['at_rest'][key]:.1f} ms",
            f"{figures['during_reassignment'][key]:.1f} ms",
        )
    console.print(table)
    console.print(f"{figures['at_rest']['count']} sends at rest, {sent_during} during the moves")
    console.print(
        f"{len(targets)} partitions moved onto broker 4 in {move_s:.1f} s: "
        f"{copied / 1e6:.0f} MB copied, {copied / 1e6 / move_s:.0f} MB/s; "
        f"{probe.failed} probe sends failed"
    )
    console.print(f"{os.cpu_count()} cores, Python {platform.python_version()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        asyncio.run(main())
