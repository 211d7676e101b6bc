#!/usr/bin/env python3
"""Consumer group benchmark on a real local cluster (3 brokers, real ZooKeeper), with
librdkafka (confluent-kafka) members:

    .venv/bin/python scripts/bench_groups.py [--dir bench-out] [--runs 5] [--commit-s 10]
        [--zk-session-ms 6000] [--session-ms 10000]

- **rebalance after a member leaves**: a 3-member group of a 6-partition topic is Stable;
  at a random moment within the next second one member closes (LeaveGroup). Time until
  the other two own every partition between them (each partition once). Median of --runs.
  The others learn of the rebalance from their next heartbeat (heartbeat.interval.ms 500,
  where Kafka's default is 3000), so on average half an interval of it is that wait.
- **after a coordinator kill**: kill -9 of the broker leading the group's
  `__consumer_offsets` partition. Time until each of the 3 members has had a commit
  acknowledged again (by the new coordinator, after it loaded the group). Median of --runs;
  the broker is restarted and the ISRs refilled between runs. The controller moves the
  offsets partition once the dead broker's ZooKeeper session expires
  (--zk-session-ms, the brokers' zookeeper.session.timeout.ms), so that bounds it from
  below; members whose own session (--session-ms, session.timeout.ms) is shorter than the
  failover lose their membership and rejoin as well.
- **commit throughput**: one member commits synchronously (each commit acknowledged with
  acks=all by the coordinator), in a loop, for --commit-s seconds: commits/s and latency.

Figures go to stdout and `<dir>/bench_groups.json`. The cleaner's figure (compaction of the
offsets topic's kind of log) comes from scripts/bench_cleaner.py.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC, partition_for

PARTITIONS = 6
OFFSETS_PARTITIONS = 50  # Kafka's default offsets.topic.num.partitions


class Member:
    """A group member polling (and, when asked, committing) in its own thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, session_ms: int) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "session.timeout.ms": session_ms,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.topic = topic
        self.assignment: frozenset[int] = frozenset()
        self.commit_ok_at: float | None = None
        self.commit_from: float | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        c = self.consumer
        c.subscribe([self.topic])
        while not self._stop.is_set():
            c.poll(0.05)
            self.assignment = frozenset(p.partition for p in c.assignment())
            since = self.commit_from
            if since is not None and self.commit_ok_at is None and self.assignment:
                offsets = [TopicPartition(self.topic, p, 0) for p in sorted(self.assignment)]
                try:
                    c.commit(offsets=offsets, asynchronous=False)
                except KafkaException:
                    continue  # the coordinator is moving: ask again
                self.commit_ok_at = time.monotonic()
        c.close()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(30)


def wait(condition: Any, timeout: float, what: str) -> float:
    """Seconds until `condition()` held (polled every 5 ms)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"no {what} after {timeout}s")
        time.sleep(0.005)
    return time.monotonic() - start


def exact_split(members: list[Member]) -> bool:
    owned = [m.assignment for m in members]
    return (
        all(owned)
        and frozenset().union(*owned) == frozenset(range(PARTITIONS))
        and sum(len(o) for o in owned) == PARTITIONS
    )


def rebalance_after_leave(cluster: LocalCluster, run: int, session_ms: int) -> float:
    members = [
        Member(cluster.bootstrap_servers, f"leave-{run}", "bench-groups", session_ms)
        for _ in range(3)
    ]
    try:
        wait(lambda: exact_split(members), 60, "stable 3-member group")
        # Not right at the sync: the members' heartbeats are in step with it.
        time.sleep(random.Random(run).uniform(0, 1.0))
        leaving = members.pop()
        start = time.monotonic()
        leaving.stop()
        wait(lambda: exact_split(members), 60, "2-member split")
        return time.monotonic() - start
    finally:
        for m in members:
            m.stop()


def coordinator(cluster: LocalCluster, group: str) -> int:
    tp = MkTopicPartition(OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS))
    st = cluster.zk_client().get_partition_state(tp)
    assert st is not None
    return st.leader


def recovery_after_coordinator_kill(cluster: LocalCluster, run: int, session_ms: int) -> float:
    group = f"kill-{run}"
    members = [
        Member(cluster.bootstrap_servers, group, "bench-groups", session_ms) for _ in range(3)
    ]
    victim = coordinator(cluster, group)
    try:
        wait(lambda: exact_split(members), 60, "stable 3-member group")
        start = time.monotonic()
        cluster.kill(victim)
        for m in members:
            m.commit_from = start
        wait(lambda: all(m.commit_ok_at is not None for m in members), 120, "commits")
        return max(m.commit_ok_at or 0 for m in members) - start
    finally:
        for m in members:
            m.stop()
        cluster.restart(victim)
        wait(lambda: full_isrs(cluster), 120, "full ISRs")


def full_isrs(cluster: LocalCluster) -> bool:
    zk = cluster.zk_client()
    for p in range(OFFSETS_PARTITIONS):
        st = zk.get_partition_state(MkTopicPartition(OFFSETS_TOPIC, p))
        if st is None or len(st.isr) < 3:
            return False
    return True


def commit_throughput(cluster: LocalCluster, seconds: float) -> dict[str, float]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "commits"})
    try:
        latencies: list[float] = []
        offsets = [TopicPartition("bench-groups", 0, 0)]
        c.commit(offsets=offsets, asynchronous=False)  # coordinator found, group loaded
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += 1
            offsets = [TopicPartition("bench-groups", 0, n)]
            t0 = time.perf_counter()
            c.commit(offsets=offsets, asynchronous=False)
            latencies.append(time.perf_counter() - t0)
        latencies.sort()
        return {
            "commits_per_s": n / seconds,
            "p50_ms": latencies[len(latencies) // 2] * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        }
    finally:
        c.close()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--commit-s", type=float, default=10.0)
    parser.add_argument("--zk-session-ms", type=int, default=6000)
    parser.add_argument("--session-ms", type=int, default=10000)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    out = args.dir or Path(tempfile.mkdtemp(prefix="bench-groups-"))
    out.mkdir(parents=True, exist_ok=True)
    # A cluster of its own each run (a previous run's would already have the topic).
    shutil.rmtree(out / "cluster", ignore_errors=True)
    cluster = LocalCluster(
        out / "cluster",
        3,
        base_port=0,
        zookeeper_port=0,
        overrides={
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
            "zookeeper.session.timeout.ms": str(args.zk_session_ms),
        },
    )
    cluster.start(timeout=60)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("bench-groups", PARTITIONS, 3)])["bench-groups"].result(60)
        leave = [rebalance_after_leave(cluster, i, args.session_ms) for i in range(args.runs)]
        kill = [
            recovery_after_coordinator_kill(cluster, i, args.session_ms) for i in range(args.runs)
        ]
        commits = commit_throughput(cluster, args.commit_s)
    finally:
        cluster.stop()
    figures = {
        "zk_session_ms": args.zk_session_ms,
        "session_ms": args.session_ms,
        "rebalance_after_leave_s": {"median": statistics.median(leave), "runs": leave},
        "after_coordinator_kill_s": {"median": statistics.median(kill), "runs": kill},
        "commit": commits,
    }
    (out / "bench_groups.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(
        f"rebalance after a member leaves: median {statistics.median(leave):.3f} s "
        f"({', '.join(f'{x:.3f}' for x in leave)})"
    )
    print(
        f"commits acknowledged again after a coordinator kill: median "
        f"{statistics.median(kill):.3f} s ({', '.join(f'{x:.3f}' for x in kill)})"
    )
    print(
        f"commit throughput (one member, synchronous): {commits['commits_per_s']:.0f} "
        f"commits/s, p50 {commits['p50_ms']:.2f} ms, p99 {commits['p99_ms']:.2f} ms"
    )
    print(f"figures in {out / 'bench_groups.json'}")


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        main()
