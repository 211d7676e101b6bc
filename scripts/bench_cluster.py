#!/usr/bin/env python3
"""Cluster-core figures, measured on a real local cluster.

1. kill -9 of a partition leader → first successful acks=all produce on the new leader
   (median of N, zookeeper.session.timeout.ms=6000), with a librdkafka producer
   (confluent-kafka; request.timeout.ms 2000, retry.backoff.ms 50) that has sent a record
   before the kill (metadata known, connected);
2. controlled shutdown (SIGTERM → process exit) of a broker leading 100 partitions;
3. creation of a 1,000-partition RF=3 topic until every partition has a leader;
4. a preferred leader election (ElectLeaders, confluent-kafka's elect_leaders) of those
   1,000 partitions after one broker restarted (its leaderships moved away on its
   controlled shutdown and stay away: no automatic rebalance), from the request until
   every broker's metadata shows every partition led by its preferred replica;
5. stopping the whole cluster (`cluster down`: every broker closes cleanly, then
   ZooKeeper) with those 1,100 partitions on it.

Usage: .venv/bin/python scripts/bench_cluster.py [--runs 5] [--data-dir DIR]

With `--throttled-move MB` it measures instead replication throttles (KIP-73): the time to
move MB of replicas (4 partitions, RF 1 on broker 1, each given a new replica on broker 2
by `reassign-partitions --execute --throttle`) at each rate of `--throttles` (bytes/s,
comma-separated; 0: no throttle), from the moves' start until every new replica is in the
ISR, against the rate:

    .venv/bin/python scripts/bench_cluster.py --throttled-move 32 --throttles 0,1048576,4194304

With `--write-resume` it measures instead how long acks=all writes stall after kill -9 of a
broker (`--runs` kills, at `--session-timeout-ms`, default Kafka's 18000), with
replica.lag.disconnected.max.ms at 2000 and off (-1, the default: Kafka's behaviour): a
topic of two partitions, min.insync.replicas 2, one led by the broker killed and one led by
another with the killed broker in its ISR; from the kill until the first record sent after
it to each partition is acknowledged:

    .venv/bin/python scripts/bench_cluster.py --write-resume --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import ElectionType, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table

from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import client_config, new_admin, new_producer
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition

SESSION_TIMEOUT_MS = 6000


def leader_of(cluster: LocalCluster, tp: TopicPartition) -> int:
    st = cluster.zk_client().get_partition_state(tp)
    return -1 if st is None else st.leader


def wait(cond: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


# librdkafka logs every refused connection to the killed broker: the figures are what matters.
QUIET = {"log_level": 2, "log.connection.close": False}


async def create(cluster: LocalCluster, topic: NewTopic, timeout_s: float = 120) -> None:
    """Create a topic with librdkafka's AdminClient; returns once the controller answered
    (it waits up to `timeout_s` for a leader of every partition)."""
    admin = new_admin(client_config(cluster.bootstrap_servers, QUIET))
    (future,) = admin.create_topics(
        [topic], operation_timeout=timeout_s, request_timeout=timeout_s + 30
    ).values()
    await asyncio.wrap_future(future)


def send_and_wait(producer: Producer, topic: str, value: bytes, timeout_s: float = 120) -> Message:
    """Produce one record and wait for its delivery report (KafkaException if it failed)."""
    reports: list[tuple[KafkaError | None, Message]] = []
    producer.produce(topic, value, on_delivery=lambda err, msg: reports.append((err, msg)))
    producer.flush(timeout_s)
    if not reports:
        raise TimeoutError(f"no delivery report for a record to {topic} in {timeout_s} s")
    err, msg = reports[0]
    if err is not None:
        raise KafkaException(err)
    return msg


def eager_producer(cluster: LocalCluster) -> Producer:
    """An acks=all producer that notices a dead leader soon (request.timeout.ms 2000) and
    retries every 50 ms (librdkafka would back off up to 1 s)."""
    return new_producer(
        client_config(
            cluster.bootstrap_servers,
            {
                "acks": "all",
                "request.timeout.ms": 2000,
                "retry.backoff.ms": 50,
                "retry.backoff.max.ms": 50,
                **QUIET,
            },
        )
    )


async def failover_runs(cluster: LocalCluster, runs: int) -> list[float]:
    tp = TopicPartition("failover", 0)
    await create(cluster, NewTopic("failover", 1, 3))
    times: list[float] = []
    for i in range(runs):
        wait(
            lambda: len(cluster.zk_client().get_partition_state(tp).isr) == 3,  # type: ignore[union-attr]
            60,
            "a full ISR",
        )
        producer = eager_producer(cluster)
        send_and_wait(producer, "failover", b"warm-up")  # metadata known, connected
        old = leader_of(cluster, tp)
        started = time.monotonic()
        cluster.kill(old)
        md = send_and_wait(producer, "failover", f"after-kill-{i}".encode())
        elapsed = time.monotonic() - started
        del producer
        new = leader_of(cluster, tp)
        assert new != old, "the produce succeeded but the leader did not change"
        times.append(elapsed)
        print(
            f"  run {i + 1}: killed leader {old}; new leader {new}; acked offset "
            f"{md.offset()} after {elapsed:.2f}s"
        )
        cluster.restart(old)
    return times


async def controlled_shutdown(cluster: LocalCluster, partitions: int) -> tuple[float, float]:
    victim = cluster.broker_ids[0]
    others = [b for b in cluster.broker_ids if b != victim]
    assignment = [[victim, *others] for _ in range(partitions)]  # partition p's replicas
    await create(cluster, NewTopic("led", partitions, replica_assignment=assignment))
    tps = [TopicPartition("led", p) for p in range(partitions)]
    zk = cluster.zk_client()
    wait(
        lambda: all(st.leader == victim for st in zk.get_partition_states(tps).values()),
        60,
        f"broker {victim} to lead all {partitions} partitions",
    )
    started = time.monotonic()
    code = cluster.terminate(victim, timeout=120)
    exited = time.monotonic() - started
    assert code == 0, f"broker {victim} exited with {code}"
    moved = all(st.leader != victim for st in zk.get_partition_states(tps).values())
    assert moved, "leadership had not moved when the broker exited"
    cluster.restart(victim)
    return exited, partitions


async def create_big_topic(cluster: LocalCluster, partitions: int) -> float:
    tps = [TopicPartition("big", p) for p in range(partitions)]
    started = time.monotonic()
    await create(cluster, NewTopic("big", partitions, 3), timeout_s=300)
    zk = cluster.zk_client()
    wait(
        lambda: (
            len(states := zk.get_partition_states(tps)) == partitions
            and all(st.leader >= 0 for st in states.values())
        ),
        300,
        "leaders for every partition",
    )
    return time.monotonic() - started


async def preferred_everywhere(cluster: LocalCluster, topic: str) -> bool:
    """Every partition of `topic` led by its first replica in every broker's Metadata."""
    for b in cluster.broker_ids:
        conn = KafkaConnection(*cluster.broker_address(b), client_id="bench-cluster")
        try:
            meta = await conn.call(metadata_request([topic]), timeout_s=30)
        finally:
            await conn.close()
        for t in meta.topics:
            if any(p.leader_id != p.replica_nodes[0] for p in t.partitions):
                return False
    return True


async def preferred_election_after_restart(
    cluster: LocalCluster, topic: str, partitions: int
) -> tuple[float, int]:
    """Seconds from ElectLeaders(PREFERRED, every partition of `topic`) until every broker's
    metadata shows each partition led by its preferred replica, after a broker restart; and
    how many partitions the election moved (those whose preferred replica restarted)."""
    bounced = cluster.broker_ids[-1]
    cluster.restart(bounced, timeout=120)
    zk = cluster.zk_client()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    assignment = zk.get_assignment(topic) or {}
    # A preferred replica leads again only once back in the ISR (caught up), as in Kafka.
    wait(
        lambda: all(len(st.isr) == 3 for st in zk.get_partition_states(tps).values()),
        300,
        f"broker {bounced} back in every ISR of {topic}",
    )
    states = zk.get_partition_states(tps)
    moved = [tp for tp, st in states.items() if st.leader != assignment[tp.partition][0]]
    assert moved, f"no partition of {topic} lost its preferred leader when {bounced} restarted"
    admin = new_admin(client_config(cluster.bootstrap_servers, QUIET))
    asked = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    started = time.monotonic()
    results = await asyncio.wrap_future(admin.elect_leaders(ElectionType.PREFERRED, asked))
    failed = {
        tp: e
        for tp, e in results.items()
        if e is not None and e.code() != KafkaError.ELECTION_NOT_NEEDED
    }
    assert not failed, f"elections failed: {failed}"
    while not await preferred_everywhere(cluster, topic):
        if time.monotonic() - started > 300:
            raise TimeoutError("preferred leaders not in every broker's metadata after 300 s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started, len(moved)


MOVE_PARTITIONS = 4
MOVE_VALUE_BYTES = 100 * 1024


def quotas_idle(cluster: LocalCluster) -> bool:
    """Brokers 1 and 2 show no throttled byte rate (their quota windows are empty)."""
    for broker, name in (
        (1, "kafka_server_leaderreplication_byte_rate"),
        (2, "kafka_server_followerreplication_byte_rate"),
    ):
        with urllib.request.urlopen(cluster.admin_url(broker) + "/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
        if any(line.startswith(name + " ") and float(line.split()[1]) > 0 for line in lines):
            return False
    return True


async def throttled_move(cluster: LocalCluster, topic: str, mb: int, throttle: int) -> float:
    """Seconds to give `topic`'s partitions (RF 1 on broker 1, `mb` MB between them) a new
    replica on broker 2 at `throttle` bytes/s (0: unthrottled), from the moves' start to
    every new replica in the ISR; the throttles are cleared after, as `--verify` does."""
    from minikafka.cli import reassign_partitions as tool
    from minikafka.client.controller_calls import ControllerClient

    await create(
        cluster,
        NewTopic(topic, MOVE_PARTITIONS, replica_assignment=[[1] for _ in range(MOVE_PARTITIONS)]),
    )
    producer = new_producer(client_config(cluster.bootstrap_servers, {**QUIET, "acks": "1"}))
    values = mb * 1024 * 1024 // MOVE_VALUE_BYTES
    for i in range(values):
        producer.produce(topic, os.urandom(MOVE_VALUE_BYTES), partition=i % MOVE_PARTITIONS)
        producer.poll(0)
    if producer.flush(120):
        raise TimeoutError(f"records to {topic} not delivered")
    tps = [TopicPartition(topic, p) for p in range(MOVE_PARTITIONS)]
    plan = json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": p, "replicas": [1, 2]} for p in range(MOVE_PARTITIONS)
            ],
        }
    )
    # A quota's rate is its windows' bytes over the time since the oldest began (Kafka's
    # SimpleRate): windows a previous move left, up to replication.quota.window.num seconds
    # old, would let this one burst. Each move starts once they have expired.
    await asyncio.to_thread(wait, lambda: quotas_idle(cluster), 60, "idle replication quotas")
    client = ControllerClient(cluster.bootstrap_servers, client_id=tool.CLIENT_ID)
    try:
        # From before the tool's calls: the new replicas start fetching before the
        # controller answers AlterPartitionReassignments (the tool's few calls before it,
        # Metadata and the throttles' configs, take milliseconds).
        started = time.monotonic()
        await tool.execute(client, plan, False, throttle or None)
        zk = cluster.zk_client()

        def moved() -> bool:
            states = zk.get_partition_states(tps)
            return all(tp in states and 2 in states[tp].isr for tp in tps)

        await asyncio.to_thread(wait, moved, 600, f"the moves of {topic}")
        elapsed = time.monotonic() - started
        while await client.list_partition_reassignments():  # the moves' last steps
            await asyncio.sleep(0.1)
        await tool.verify(client, plan)
    finally:
        await client.close()
    return elapsed


async def throttle_figures(args: argparse.Namespace) -> None:
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-throttle-"))
    cluster = LocalCluster(data_dir, 3, overrides={"auto.leader.rebalance.enable": "false"})
    rates = [int(r) for r in args.throttles.split(",")]
    console = Console()
    cluster.start(timeout=120)
    results: list[dict[str, float]] = []
    try:
        for i, rate in enumerate(rates):
            seconds = await throttled_move(cluster, f"moving-{i}", args.throttled_move, rate)
            moved = args.throttled_move * 1024 * 1024
            results.append(
                {"throttle_bytes_per_s": rate, "seconds": seconds, "bytes_per_s": moved / seconds}
            )
            console.print(
                f"{args.throttled_move} MB at throttle {rate or 'none'}: {seconds:.2f} s "
                f"({moved / seconds / 1e6:.2f} MB/s)"
            )
    finally:
        cluster.stop(timeout=120)
    table = Table(
        title=f"moving {args.throttled_move} MiB of replicas ({MOVE_PARTITIONS} partitions)"
    )
    table.add_column("throttle (B/s)", justify="right")
    table.add_column("move time", justify="right")
    table.add_column("achieved (B/s)", justify="right")
    table.add_column("achieved / throttle", justify="right")
    for r in results:
        bound = r["throttle_bytes_per_s"]
        table.add_row(
            f"{bound:,.0f}" if bound else "none",
            f"{r['seconds']:.2f} s",
            f"{r['bytes_per_s']:,.0f}",
            f"{r['bytes_per_s'] / bound:.2f}" if bound else "-",
        )
    console.print(table)
    console.print(f"{os.cpu_count()} cores, Python {platform.python_version()}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
                    "moved_mib": args.throttled_move,
                    "partitions": MOVE_PARTITIONS,
                    "moves": results,
                },
                indent=2,
            )
        )


def acknowledged_at(
    producer: Producer, topic: str, value: bytes, partitions: Sequence[int], timeout_s: float = 120
) -> dict[int, float]:
    """Send `value` to each partition; when (time.monotonic()) each was acknowledged."""
    acked: dict[int, float] = {}
    failed: list[KafkaError] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed.append(err)
        else:
            acked[msg.partition()] = time.monotonic()  # type: ignore[index]

    for p in partitions:
        producer.produce(topic, value, partition=p, on_delivery=delivered)
    deadline = time.monotonic() + timeout_s
    while len(acked) < len(partitions) and not failed and time.monotonic() < deadline:
        producer.poll(0.01)
    if failed:
        raise KafkaException(failed[0])
    if len(acked) < len(partitions):
        raise TimeoutError(f"acknowledged only partitions {sorted(acked)} in {timeout_s} s")
    return acked


async def write_resume_runs(cluster: LocalCluster, runs: int) -> list[tuple[float, float]]:
    """(seconds until an acks=all write to a partition led by a surviving broker is
    acknowledged, the same for the partition the killed broker led), per kill."""
    controller = cluster.controller()
    assert controller is not None
    # The victim is never the controller: its failover would add to the figures.
    survivor = controller[0]
    victim, third = (b for b in cluster.broker_ids if b != survivor)
    topic = "resume"
    await create(
        cluster,
        NewTopic(
            topic,
            2,
            replica_assignment=[[victim, survivor, third], [survivor, victim, third]],
            config={"min.insync.replicas": "2"},
        ),
    )
    led_by_victim, led_by_survivor = TopicPartition(topic, 0), TopicPartition(topic, 1)
    results: list[tuple[float, float]] = []
    for i in range(runs):

        def ready() -> bool:
            zk = cluster.zk_client()
            states = [zk.get_partition_state(tp) for tp in (led_by_victim, led_by_survivor)]
            return all(st is not None and len(st.isr) == 3 for st in states) and [
                st.leader for st in states if st is not None
            ] == [victim, survivor]

        if not ready():
            # The restarted victim rejoined the ISR; it leads its partition again after a
            # preferred election.
            wait(
                lambda: all(
                    len(cluster.zk_client().get_partition_state(tp).isr) == 3  # type: ignore[union-attr]
                    for tp in (led_by_victim, led_by_survivor)
                ),
                120,
                "full ISRs",
            )
            admin = new_admin(client_config(cluster.bootstrap_servers, QUIET))
            await asyncio.wrap_future(
                admin.elect_leaders(ElectionType.PREFERRED, [KafkaTopicPartition(topic, 0)])
            )
            wait(ready, 60, "the preferred leaders")
        producer = eager_producer(cluster)
        for p in (0, 1):  # metadata known, connections open
            producer.produce(topic, b"warm-up", partition=p)
        producer.flush(60)
        started = time.monotonic()
        cluster.kill(victim)
        acked = acknowledged_at(producer, topic, f"after-kill-{i}".encode(), (0, 1))
        del producer
        survivor_s, victim_s = acked[1] - started, acked[0] - started
        results.append((survivor_s, victim_s))
        print(
            f"  run {i + 1}: killed broker {victim}; acks=all acknowledged after "
            f"{survivor_s:.2f}s on {led_by_survivor} (led by {survivor}) and "
            f"{victim_s:.2f}s on {led_by_victim} (led by the killed broker)"
        )
        cluster.restart(victim)
    return results


async def write_resume_figures(args: argparse.Namespace) -> None:
    console = Console()
    figures: dict[str, object] = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "zookeeper_session_timeout_ms": args.session_timeout_ms,
    }
    table = Table(
        title=f"acks=all writes after kill -9 of a broker (session timeout "
        f"{args.session_timeout_ms} ms, median of {args.runs})"
    )
    table.add_column("replica.lag.disconnected.max.ms")
    table.add_column("partition led by a survivor", justify="right")
    table.add_column("partition the killed broker led", justify="right")
    for setting in ("2000", "-1"):
        data_dir = (args.data_dir or Path(tempfile.mkdtemp(prefix="bench-resume-"))) / (
            f"disconnected-{setting}"
        )
        cluster = LocalCluster(
            data_dir,
            3,
            overrides={
                "zookeeper.session.timeout.ms": str(args.session_timeout_ms),
                "replica.lag.disconnected.max.ms": setting,
                "auto.leader.rebalance.enable": "false",
            },
        )
        cluster.start(timeout=120)
        try:
            console.print(f"replica.lag.disconnected.max.ms={setting}, {args.runs} kills:")
            runs = await write_resume_runs(cluster, args.runs)
        finally:
            cluster.stop(timeout=120)
        survivor = [r[0] for r in runs]
        victim = [r[1] for r in runs]
        figures[f"disconnected_max_ms_{setting}"] = {
            "survivor_led_seconds": survivor,
            "killed_led_seconds": victim,
        }
        table.add_row(
            setting + (" (the default: Kafka's behaviour)" if setting == "-1" else ""),
            f"{statistics.median(survivor):.2f} s",
            f"{statistics.median(victim):.2f} s",
        )
    console.print(table)
    console.print(f"{os.cpu_count()} cores, Python {platform.python_version()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--throttled-move",
        type=int,
        metavar="MB",
        help="measure instead the time to move MB of replicas at each of --throttles",
    )
    ap.add_argument(
        "--throttles",
        default="0,1048576,2097152,4194304",
        metavar="B/S,...",
        help="the throttles of --throttled-move, bytes/s (0: none)",
    )
    ap.add_argument(
        "--write-resume",
        action="store_true",
        help="measure instead how long acks=all writes stall after kill -9 of a broker",
    )
    ap.add_argument(
        "--session-timeout-ms",
        type=int,
        default=18000,
        help="zookeeper.session.timeout.ms of --write-resume's clusters",
    )
    return ap.parse_args(argv)


async def main() -> None:
    args = parse_args()
    if args.throttled_move is not None:
        await throttle_figures(args)
        return
    if args.write_resume:
        await write_resume_figures(args)
        return
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    cluster = LocalCluster(
        data_dir,
        3,
        overrides={
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            # No automatic rebalance in the middle of a measurement.
            "auto.leader.rebalance.enable": "false",
        },
    )
    console = Console()
    cluster.start(timeout=120)
    try:
        console.print(f"cluster up in {data_dir}: {cluster.bootstrap_servers}")
        console.print(f"kill -9 of the leader, {args.runs} runs:")
        failover = await failover_runs(cluster, args.runs)
        shutdown_s, n = await controlled_shutdown(cluster, 100)
        big_s = await create_big_topic(cluster, 1000)
        election_s, elected = await preferred_election_after_restart(cluster, "big", 1000)
        started = time.monotonic()
        cluster.stop(timeout=120)
        whole_stop_s = time.monotonic() - started
    finally:
        cluster.stop(timeout=120)  # nothing left to stop after the timed one
    figures = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "cluster": "3 brokers + ZooKeeper on loopback, zookeeper.session.timeout.ms=6000",
        "failover_seconds": failover,
        "failover_median_seconds": statistics.median(failover),
        "controlled_shutdown_100_leaders_seconds": shutdown_s,
        "create_1000_partitions_rf3_seconds": big_s,
        "preferred_election_1000_partitions_seconds": election_s,
        "preferred_election_partitions_moved": elected,
        "whole_cluster_stop_seconds": whole_stop_s,
    }
    table = Table(title="minikafka cluster core")
    table.add_column("measure")
    table.add_column("result", justify="right")
    table.add_row(
        f"kill -9 leader → first acks=all produce on new leader (median of {args.runs})",
        f"{statistics.median(failover):.2f} s  (runs: "
        + ", ".join(f"{t:.2f}" for t in failover)
        + ")",
    )
    table.add_row(f"controlled shutdown, broker leading {n} partitions", f"{shutdown_s:.2f} s")
    table.add_row("create topic 1,000 partitions RF=3, all leaders elected", f"{big_s:.2f} s")
    table.add_row(
        "preferred election of the 1,000 partitions after a broker restart, "
        "in every broker's metadata",
        f"{election_s:.2f} s  ({elected} moved)",
    )
    table.add_row(
        "stop the whole cluster (clean close of every broker, ZooKeeper)", f"{whole_stop_s:.2f} s"
    )
    console.print(table)
    console.print(f"{os.cpu_count()} cores, Python {platform.python_version()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
