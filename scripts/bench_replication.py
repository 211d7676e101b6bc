#!/usr/bin/env python3
"""Replication figures, measured on a real local cluster (3 brokers + ZooKeeper, loopback).

Topic `isr`: 1 partition, RF=3, min.insync.replicas=2; brokers run with
replica.lag.time.max.ms=3000 and Kafka's ISR change propagation timings (checked every
2500 ms, sent once no change happened for 5000 ms, at the latest 60000 ms after the last).
Per run:

1. ISR shrink: SIGSTOP a follower (not the controller), produce one record (acks=1, a
   librdkafka producer bootstrapped from the leader) so that it falls behind, and poll the
   state znode (every 10 ms) until its ISR no longer holds it.
2. Shrink propagation: from that znode write (its mtime; ZooKeeper runs on this machine)
   until every live broker's Metadata response shows the new ISR.
3. ISR expand: SIGCONT (after a random 0-2.5 s more, so that the expansion does not always
   fall in the same phase of the leader's 2.5 s propagation cycle), poll until the ISR holds
   it again; then the same propagation time.
4. Produce throughput, acks=all vs acks=1, one after the other (order alternating between
   runs) on topic `tput` (3 partitions, one led by each broker, RF=3, min.insync.replicas=2),
   200,000 records of 1 KiB per mode, batch.size 64 KiB, linger.ms 5, with a librdkafka
   producer (confluent-kafka; it replaced minikafka's own asyncio Producer, so figures of
   earlier runs, about 10 s per mode on 2 cores, are not comparable); timed from the first
   produce() to the end of flush(), when every record is acknowledged.

The paused broker stays stopped until step 2 is done (up to ~15 s), so the brokers run with
zookeeper.session.timeout.ms=18000 (Kafka's default) rather than bench_cluster.py's 6000: an
expired session would make the controller announce the shrink itself (broker failure path)
instead of the ISR change notification that step 2 times.

Usage: .venv/bin/python scripts/bench_replication.py [--runs 3] [--records 200000]
       [--data-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.cimpl import NewTopic
from kazoo.client import KazooClient
from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import client_config, new_admin, new_producer, topic_metadata
from minikafka.cluster import LocalCluster

ISR_TOPIC = "isr"
TPUT_TOPIC = "tput"
LAG_MS = 3000
POLL_S = 0.010
DEFAULT_SESSION_TIMEOUT_MS = 18000
PROPAGATION_CHECK_S = 2.5  # isr.change.propagation.check.interval.ms (Kafka's, the default)
RECORD_SIZE = 1024
BATCH_SIZE = 64 * 1024
LINGER_MS = 5


class Probe:
    """Reads the partition state znode (data and stat in one read) and each broker's
    Metadata answer for a partition."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
        self.zk.start(timeout=15)
        self._conns: dict[int, KafkaConnection] = {}

    def state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], float]:
        """(state JSON, mtime in wall-clock seconds)."""
        data, stat = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        return json.loads(data), stat.mtime / 1000.0

    async def metadata_isr(self, broker_id: int, topic: str, partition: int = 0) -> list[int]:
        conn = self._conns.get(broker_id)
        if conn is None:
            # One connection per broker, kept: it connects again by itself after a failure.
            port = self.cluster.broker_ports[broker_id]
            conn = KafkaConnection(self.cluster.host, port, client_id="bench-probe")
            self._conns[broker_id] = conn
        resp = await conn.call(metadata_request([topic]), timeout_s=2.0)
        for t in resp.topics:
            for p in t.partitions:
                if t.name == topic and p.partition_index == partition:
                    return list(p.isr_nodes)
        return []

    async def wait_zk(
        self, topic: str, cond: Callable[[list[int]], bool], timeout: float, partition: int = 0
    ) -> tuple[float, float]:
        """Poll the state znode until `cond(isr)`: (wall time seen, znode mtime)."""
        deadline = time.monotonic() + timeout
        while True:
            st, mtime = self.state(topic, partition)
            if cond(st["isr"]):
                return time.time(), mtime
            if time.monotonic() > deadline:
                raise TimeoutError(f"ISR of {topic} stayed {st['isr']} for {timeout}s")
            await asyncio.sleep(POLL_S)

    async def wait_metadata(
        self, brokers: Sequence[int], topic: str, cond: Callable[[list[int]], bool], timeout: float
    ) -> dict[int, float]:
        """Poll each broker's Metadata until `cond(isr)`: wall time first seen, per broker."""
        deadline = time.monotonic() + timeout

        async def first_seen(bid: int) -> float:
            while True:
                isr = await self.metadata_isr(bid, topic)
                if cond(isr):
                    return time.time()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {bid}'s metadata kept ISR {isr} for {timeout}s")
                await asyncio.sleep(POLL_S)

        seen = await asyncio.gather(*(first_seen(b) for b in brokers))
        return dict(zip(brokers, seen, strict=True))

    async def close(self) -> None:
        for conn in self._conns.values():
            await conn.close()
        self.zk.stop()
        self.zk.close()


# librdkafka logs every connection to the paused broker that times out: not a failure here.
QUIET = {"log_level": 2, "log.connection.close": False}


async def create(cluster: LocalCluster, topic: NewTopic) -> None:
    """Create a topic with librdkafka's AdminClient; returns once the controller answered
    (it waits up to 60 s for a leader of every partition)."""
    admin = new_admin(client_config(cluster.bootstrap_servers, QUIET))
    (future,) = admin.create_topics([topic], operation_timeout=60, request_timeout=90).values()
    await asyncio.wrap_future(future)


class DeliveryFailures:
    """A delivery callback keeping each failed record's error (librdkafka reports a record's
    fate to the callback, in poll() or flush())."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.errors.append(f"{msg.topic()}-{msg.partition()}: {err.name()}: {err.str()}")

    def check(self, undelivered: int, what: str) -> None:
        if self.errors or undelivered:
            raise RuntimeError(
                f"{what}: {len(self.errors)} failed, {undelivered} undelivered; "
                f"first: {self.errors[:1]}"
            )


def send_and_wait(producer: Producer, topic: str, value: bytes, timeout_s: float = 60) -> None:
    """One record, acknowledged (or RuntimeError)."""
    failures = DeliveryFailures()
    producer.produce(topic, value, on_delivery=failures)
    failures.check(producer.flush(timeout_s), f"a record to {topic}")


async def isr_run(
    cluster: LocalCluster, probe: Probe, i: int, rng: random.Random
) -> dict[str, Any]:
    everyone = cluster.broker_ids
    full = len(everyone)
    # The previous run's expansion must have reached every broker first.
    await probe.wait_zk(ISR_TOPIC, lambda isr: len(isr) == full, 60)
    await probe.wait_metadata(everyone, ISR_TOPIC, lambda isr: len(isr) == full, 60)
    st, _ = probe.state(ISR_TOPIC)
    leader = st["leader"]
    ctrl = cluster.controller()
    controller = ctrl[0] if ctrl else None
    followers = [b for b in st["isr"] if b != leader]
    victim = next((b for b in followers if b != controller), followers[0])
    live = [b for b in everyone if b != victim]
    epoch_before = cluster.registrations()[victim].epoch
    leader_addr = f"{cluster.host}:{cluster.broker_ports[leader]}"
    producer = new_producer(client_config(leader_addr, {"acks": 1, **QUIET}))
    send_and_wait(producer, ISR_TOPIC, b"warm-up")  # metadata and connection ready
    paused_at = time.time()
    cluster.pause(victim)
    try:
        # A follower with the leader's LEO is never out of sync (design §7.3).
        send_and_wait(producer, ISR_TOPIC, b"behind")
        shrink_seen, shrink_mtime = await probe.wait_zk(
            ISR_TOPIC, lambda isr: victim not in isr, 60
        )
        shrink_md = await probe.wait_metadata(live, ISR_TOPIC, lambda isr: victim not in isr, 60)
        # The shrink reached the brokers right after one of the leader's propagation
        # ticks; resuming at once would put the expansion in the same phase of that
        # 2.5 s cycle every run (always ~7.5 s to propagate). Resume at a random phase.
        hold_s = rng.uniform(0, PROPAGATION_CHECK_S)
        await asyncio.sleep(hold_s)
    finally:
        resumed_at = time.time()
        cluster.resume(victim)
    del producer
    expand_seen, expand_mtime = await probe.wait_zk(ISR_TOPIC, lambda isr: victim in isr, 60)
    expand_md = await probe.wait_metadata(everyone, ISR_TOPIC, lambda isr: victim in isr, 60)
    epoch_after = cluster.registrations().get(victim)
    session_kept = epoch_after is not None and epoch_after.epoch == epoch_before
    r = {
        "leader": leader,
        "controller": controller,
        "paused": victim,
        "paused_s": resumed_at - paused_at,
        "extra_hold_before_sigcont_s": hold_s,
        "session_kept": session_kept,
        "shrink_s": shrink_seen - paused_at,
        "shrink_write_s": shrink_mtime - paused_at,
        "shrink_propagation_s": max(shrink_md.values()) - shrink_mtime,
        "shrink_propagation_per_broker_s": {b: t - shrink_mtime for b, t in shrink_md.items()},
        "expand_s": expand_seen - resumed_at,
        "expand_write_s": expand_mtime - resumed_at,
        "expand_propagation_s": max(expand_md.values()) - expand_mtime,
        "expand_propagation_per_broker_s": {b: t - expand_mtime for b, t in expand_md.items()},
    }
    per_broker = ", ".join(
        f"{b}: {t:.2f}" for b, t in sorted(r["shrink_propagation_per_broker_s"].items())
    )
    print(
        f"  run {i + 1}: leader {leader}, controller {controller}, paused {victim} for "
        f"{r['paused_s']:.1f}s (held {hold_s:.2f}s after the shrink reached metadata); "
        f"shrink written {r['shrink_write_s']:.2f}s after SIGSTOP "
        f"(seen {r['shrink_s']:.2f}s), in metadata {r['shrink_propagation_s']:.2f}s later "
        f"(per broker {per_broker}); expand written {r['expand_write_s']:.2f}s after SIGCONT "
        f"(seen {r['expand_s']:.2f}s), in metadata {r['expand_propagation_s']:.2f}s later"
        + ("" if session_kept else "; WARNING: its ZooKeeper session expired")
    )
    return r


def produce_rate(bootstrap: str, acks: str, records: int) -> dict[str, float]:
    value = os.urandom(RECORD_SIZE)
    failures = DeliveryFailures()
    producer = new_producer(
        client_config(
            bootstrap,
            {
                "acks": acks,
                "batch.size": BATCH_SIZE,
                "linger.ms": LINGER_MS,
                "on_delivery": failures,
                # A delivery report only for a failure: no Python call per record.
                "delivery.report.only.error": True,
            },
        )
    )
    # Metadata known and a connection to every leader before the clock starts.
    for p in topic_metadata(producer, TPUT_TOPIC, 60).topics[TPUT_TOPIC].partitions:
        producer.produce(TPUT_TOPIC, b"warm-up", partition=p)
    failures.check(producer.flush(60), "warm-up")
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(TPUT_TOPIC, value)
                break
            except BufferError:  # librdkafka's queue is full: wait for acknowledgements
                producer.poll(0.001)
    undelivered = producer.flush(300)
    elapsed = time.perf_counter() - started
    failures.check(undelivered, f"acks={acks}")
    rate = records / elapsed
    return {
        "seconds": elapsed,
        "records_per_s": rate,
        "mb_per_s": rate * RECORD_SIZE / (1024 * 1024),  # Kafka's perf tool: MB = 2^20 bytes
    }


async def throughput_run(
    cluster: LocalCluster, probe: Probe, i: int, records: int
) -> dict[str, dict[str, float]]:
    full = len(cluster.broker_ids)
    order = ["all", "1"] if i % 2 == 0 else ["1", "all"]
    out: dict[str, dict[str, float]] = {}
    for acks in order:
        for p in range(full):  # every follower back in sync after the previous mode
            await probe.wait_zk(TPUT_TOPIC, lambda isr: len(isr) == full, 60, partition=p)
        out[acks] = await asyncio.to_thread(produce_rate, cluster.bootstrap_servers, acks, records)
        f = out[acks]
        print(
            f"  run {i + 1}: acks={acks}: {records} records sent, {f['records_per_s']:.0f} "
            f"records/sec ({f['mb_per_s']:.2f} MB/sec) in {f['seconds']:.2f}s"
        )
    return out


def fmt(values: Sequence[float], unit: str = "s", digits: int = 2) -> str:
    med = statistics.median(values)
    runs = ", ".join(f"{v:.{digits}f}" for v in values)
    return f"{med:.{digits}f} {unit}  (runs: {runs})"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000, help="per acks mode and run")
    ap.add_argument("--session-timeout-ms", type=int, default=DEFAULT_SESSION_TIMEOUT_MS)
    ap.add_argument("--seed", type=int, default=1, help="for the random SIGCONT delays")
    ap.add_argument("--data-dir", type=Path, help="kept afterwards (default: a temp dir, removed)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    return ap.parse_args(argv)


async def main() -> None:
    args = parse_args()
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-replication-"))
    cluster = LocalCluster(
        data_dir,
        3,
        overrides={
            "zookeeper.session.timeout.ms": str(args.session_timeout_ms),
            "replica.lag.time.max.ms": str(LAG_MS),
            # No automatic rebalance in the middle of a measurement.
            "auto.leader.rebalance.enable": "false",
        },
    )
    console = Console()
    if not console.is_terminal:
        console.width = 120  # a pipe or file: do not wrap at 80 columns
    cluster.start(timeout=120)
    probe: Probe | None = None
    try:
        console.print(f"cluster up in {data_dir}: {cluster.bootstrap_servers}")
        probe = Probe(cluster)
        configs = {"min.insync.replicas": "2"}
        await create(cluster, NewTopic(ISR_TOPIC, 1, 3, config=configs))
        console.print(f"ISR shrink / expand, {args.runs} runs:")
        rng = random.Random(args.seed)
        isr = [await isr_run(cluster, probe, i, rng) for i in range(args.runs)]
        # Created only now, so that its partitions take no part in the ISR changes above.
        await create(cluster, NewTopic(TPUT_TOPIC, 3, 3, config=configs))
        console.print(f"produce throughput, {args.records} records of {RECORD_SIZE} B per mode:")
        tput = [await throughput_run(cluster, probe, i, args.records) for i in range(args.runs)]
    finally:
        if probe is not None:
            await probe.close()
        cluster.stop(timeout=120)
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)

    def col(key: str) -> list[float]:
        return [float(r[key]) for r in isr]

    def rate(acks: str, key: str) -> list[float]:
        return [r[acks][key] for r in tput]

    figures = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "cluster": (
            f"3 brokers + ZooKeeper on loopback, zookeeper.session.timeout.ms="
            f"{args.session_timeout_ms}, replica.lag.time.max.ms={LAG_MS}, ISR propagation "
            "check 2500 ms / blackout 5000 ms / max delay 60000 ms (defaults)"
        ),
        "isr_runs": isr,
        "throughput": {
            "topic": "3 partitions, RF=3, min.insync.replicas=2",
            "record_bytes": RECORD_SIZE,
            "records_per_mode": args.records,
            "batch_size": BATCH_SIZE,
            "linger_ms": LINGER_MS,
            "runs": tput,
        },
    }
    table = Table(title=f"minikafka replication ({args.runs} runs: median, then each run)")
    table.add_column("measure")
    table.add_column("result", justify="right")
    table.add_row("ISR shrink: SIGSTOP follower → state znode without it", fmt(col("shrink_s")))
    table.add_row(
        "shrink ISR write (znode mtime) → every live broker's Metadata",
        fmt(col("shrink_propagation_s")),
    )
    table.add_row("ISR expand: SIGCONT → state znode with it again", fmt(col("expand_s")))
    table.add_row(
        "expand ISR write (znode mtime) → every broker's Metadata",
        fmt(col("expand_propagation_s")),
    )
    for acks in ("all", "1"):
        table.add_row(
            f"produce acks={acks}, 1 KiB records, RF=3 (records/s)",
            fmt(rate(acks, "records_per_s"), "rec/s", 0),
        )
        table.add_row(
            f"produce acks={acks}, 1 KiB records, RF=3 (MB/s)", fmt(rate(acks, "mb_per_s"), "MB/s")
        )
    console.print(table)
    console.print(
        f"{os.cpu_count()} cores, Python {platform.python_version()}; librdkafka producer "
        f"batch.size "
        f"{BATCH_SIZE}, linger.ms {LINGER_MS}, {args.records} records per acks mode and run; "
        f"zookeeper.session.timeout.ms={args.session_timeout_ms}, "
        f"replica.lag.time.max.ms={LAG_MS}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        asyncio.run(main())
