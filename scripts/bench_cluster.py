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

With `--scale N` it measures instead, on a fresh cluster holding N partitions (RF 3, over
topics of at most `--topic-partitions`, default 1,000; created as bench_scale.py does, until
every partition is led with a full ISR in every broker's metadata), with
zookeeper.session.timeout.ms `--session-timeout-ms` (default 6000 in this mode):

1. each broker's resident memory (VmRSS, and the peak VmHWM);
2. kill -9 of the controller: when its session expired (its /brokers/ids znode gone), when
   a new controller was elected (/controller), and when every partition the killed broker
   led had a live leader in the metadata of each surviving broker (each polled with its own
   Metadata requests, every `--poll-interval` s, from the expiry on: nothing moves before),
   both from the kill and from the expiry: the new controller's work once it noticed;
3. after the killed broker's restart and a preferred election of every partition (timed
   too, as context: each broker leads about N/3 again), a controlled shutdown (SIGTERM) of
   a broker other than the controller: until its process exited, and until every partition
   it led had another leader in each remaining broker's metadata (polled from the SIGTERM);
4. after its restart, stopping the whole cluster (as `LocalCluster.stop` does it: SIGTERM
   to every broker, the controller last, then ZooKeeper):

    .venv/bin/python scripts/bench_cluster.py --scale 100000

`--profile DIR` (with `--scale`) also samples every live broker with py-spy (`pip install
py-spy`, into this Python's environment or onto PATH) through each of the four steps, and writes the folded stacks
to DIR/<step>-broker<N>.txt (py-spy's `raw` format: one stack and its sample count a
line): where each step's time goes, broker by broker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table
from scale_common import (
    Watch,
    all_done,
    create_and_wait,
    memory_kb,
    partition_leaders,
    process_pids,
    topic_sizes,
    watch_everywhere,
)

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import client_config, new_admin, new_producer
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition

SESSION_TIMEOUT_MS = 6000
# zookeeper.session.timeout.ms by mode, unless --session-timeout-ms: Kafka's default for
# --write-resume, which is about it; a short one for --scale, whose failover is about the
# controller's work once the session expired.
WRITE_RESUME_SESSION_TIMEOUT_MS = 18000
SCALE_SESSION_TIMEOUT_MS = 6000
# --profile's sampler: the one installed beside this Python (the venv's), else PATH's.
PY_SPY = (
    shutil.which(
        "py-spy",
        path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    or "py-spy"
)


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


async def elect_preferred(admin: Any, partitions: list[KafkaTopicPartition] | None) -> None:
    """A preferred leader election (ElectLeaders) of `partitions` (None: all of them);
    every one elected or already led by its preferred replica."""
    results = await asyncio.wrap_future(admin.elect_leaders(ElectionType.PREFERRED, partitions))
    failed = {
        tp: e
        for tp, e in results.items()
        if e is not None and e.code() != KafkaError.ELECTION_NOT_NEEDED
    }
    assert not failed, f"elections failed: {list(failed.items())[:5]}"


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
    await elect_preferred(admin, asked)
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


def led_by(
    leaders: dict[tuple[str, int], tuple[int, list[int]]], broker: int
) -> dict[str, set[int]]:
    """The partitions `broker` leads, by topic."""
    out: dict[str, set[int]] = {}
    for (topic, partition), (leader, _) in leaders.items():
        if leader == broker:
            out.setdefault(topic, set()).add(partition)
    return out


def checked(views: dict[int, Watch], what: str) -> float:
    """When the last broker's metadata showed `what`; TimeoutError if one never did."""
    done = all_done(views)
    if done is None:
        late = {b: v.figures() for b, v in views.items() if v.done_after_s is None}
        raise TimeoutError(f"not every broker's metadata showed {what}: {late}")
    return done


def watch_figures(views: dict[int, Watch]) -> dict[str, Any]:
    return {str(b): v.figures() for b, v in views.items()}


async def full_isrs_everywhere(
    cluster: LocalCluster, sizes: dict[str, int], args: argparse.Namespace
) -> float:
    """Seconds until every broker's metadata shows every partition led with a full ISR."""
    views = await watch_everywhere(
        cluster,
        cluster.broker_ids,
        {t: None for t in sizes},
        lambda p: p.leader_id >= 0 and len(p.isr_nodes) >= 3,
        time.monotonic(),
        args.timeout,
        args.poll_interval,
    )
    return checked(views, "every partition led with a full ISR")


@dataclass
class ZkEvents:
    """What ZooKeeper showed after the kill of the controller, in seconds after it."""

    session_expired_s: float | None = None  # the killed broker's /brokers/ids znode gone
    controller_elected_s: float | None = None  # /controller names another broker
    new_controller: int | None = None


async def watch_zookeeper(
    cluster: LocalCluster, dead: int, started: float, deadline: float, expired: asyncio.Event
) -> ZkEvents:
    zk = cluster.zk_client()
    events = ZkEvents()
    while events.controller_elected_s is None or events.session_expired_s is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"ZooKeeper after the kill of {dead}: {events}")
        ids, controller = await asyncio.to_thread(
            lambda: (zk.get_broker_ids(), zk.get_controller_id())
        )
        now = time.monotonic() - started
        if events.session_expired_s is None and dead not in ids:
            events.session_expired_s = now
            expired.set()
        if events.controller_elected_s is None and controller not in (None, dead):
            events.controller_elected_s, events.new_controller = now, controller
        await asyncio.sleep(0.01)
    return events


async def controller_failover(
    cluster: LocalCluster, sizes: dict[str, int], args: argparse.Namespace
) -> dict[str, Any]:
    """kill -9 of the controller, until every partition it led has a live leader in each
    surviving broker's metadata."""
    got = cluster.controller()
    assert got is not None, "no controller"
    dead = got[0]
    survivors = [b for b in cluster.broker_ids if b != dead]
    affected = led_by(await partition_leaders(cluster, survivors[0], sizes), dead)
    count = sum(len(ps) for ps in affected.values())
    assert count, f"the controller, broker {dead}, leads no partition"
    expired = asyncio.Event()
    deadline = time.monotonic() + args.timeout
    started = time.monotonic()
    cluster.kill(dead)
    zk_events = asyncio.create_task(watch_zookeeper(cluster, dead, started, deadline, expired))
    # Nothing moves before the session expires: polling starts then, which spares the
    # brokers seconds of large Metadata responses.
    expiry = asyncio.create_task(expired.wait())
    await asyncio.wait({zk_events, expiry}, return_when=asyncio.FIRST_COMPLETED)
    if not expired.is_set():  # the watcher failed (its deadline passed) before the expiry
        expiry.cancel()
        await zk_events  # raises its error
    views = await watch_everywhere(
        cluster,
        survivors,
        affected,
        lambda p: p.leader_id >= 0 and p.leader_id != dead,
        started,
        max(deadline - time.monotonic(), 1.0),
        args.poll_interval,
    )
    events = await zk_events
    led = checked(views, f"a live leader for each partition broker {dead} led")
    assert events.session_expired_s is not None
    return {
        "killed_broker": dead,
        "affected_partitions": count,
        "session_expired_after_kill_s": events.session_expired_s,
        "new_controller": events.new_controller,
        "controller_elected_after_kill_s": events.controller_elected_s,
        "all_led_everywhere_after_kill_s": led,
        "all_led_everywhere_after_expiry_s": led - events.session_expired_s,
        "per_broker": watch_figures(views),
    }


async def preferred_election_all(
    cluster: LocalCluster, sizes: dict[str, int], args: argparse.Namespace
) -> dict[str, Any]:
    """ElectLeaders(PREFERRED, every partition), until each broker's metadata shows every
    partition led by its first replica."""
    leaders = await partition_leaders(cluster, cluster.broker_ids[0], sizes)
    moved = sum(1 for leader, replicas in leaders.values() if leader != replicas[0])
    # The call's own timeouts default to socket.timeout.ms (confluent-kafka refuses them as
    # keyword arguments of elect_leaders); at most librdkafka's 300 s.
    timeout_ms = int(min(args.timeout, 300) * 1000)
    admin = new_admin(
        client_config(cluster.bootstrap_servers, {**QUIET, "socket.timeout.ms": timeout_ms})
    )
    started = time.monotonic()
    await elect_preferred(admin, None)
    views = await watch_everywhere(
        cluster,
        cluster.broker_ids,
        {t: None for t in sizes},
        lambda p: p.leader_id == p.replica_nodes[0],
        started,
        args.timeout,
        args.poll_interval,
    )
    return {
        "partitions_moved": moved,
        "seconds": checked(views, "every partition led by its preferred replica"),
    }


async def scale_controlled_shutdown(
    cluster: LocalCluster, sizes: dict[str, int], args: argparse.Namespace
) -> dict[str, Any]:
    """SIGTERM to a broker other than the controller, until it exited and until each
    remaining broker's metadata shows another leader for every partition it led."""
    got = cluster.controller()
    assert got is not None, "no controller"
    victim = next(b for b in cluster.broker_ids if b != got[0])
    others = [b for b in cluster.broker_ids if b != victim]
    led = led_by(await partition_leaders(cluster, others[0], sizes), victim)
    count = sum(len(ps) for ps in led.values())
    assert count, f"broker {victim} leads no partition"
    started = time.monotonic()

    async def terminate() -> float:
        code = await asyncio.to_thread(cluster.terminate, victim, args.timeout)
        assert code == 0, f"broker {victim} exited with {code}"
        return time.monotonic() - started

    exited, views = await asyncio.gather(
        terminate(),
        watch_everywhere(
            cluster,
            others,
            led,
            lambda p: p.leader_id >= 0 and p.leader_id != victim,
            started,
            args.timeout,
            args.poll_interval,
        ),
    )
    return {
        "broker": victim,
        "led_partitions": count,
        "exited_s": exited,
        "moved_everywhere_s": checked(views, f"other leaders for broker {victim}'s partitions"),
        "per_broker": watch_figures(views),
    }


SPY_START_TIMEOUT_S = 30.0


def wait_until_sampling(spy: subprocess.Popen[bytes], deadline: float) -> None:
    """Until py-spy says it is sampling (its first line), has exited, or the deadline."""
    assert spy.stderr is not None
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([spy.stderr], [], [], left)
        if not ready:
            return
        line = spy.stderr.readline()
        if not line or b"Sampling" in line:
            return


@contextlib.contextmanager
def profiled(cluster: LocalCluster, step: str, out_dir: Path | None) -> Iterator[None]:
    """With `out_dir`, py-spy samples every live broker while the block runs (100 Hz, without
    pausing it), each writing out_dir/<step>-broker<N>.txt when the block ends."""
    if out_dir is None:
        yield
        return
    spies = []
    for b in cluster.broker_ids:
        pid = cluster.pid(b) if cluster.is_alive(b) else None
        if pid is None:
            continue
        out = out_dir / f"{step}-broker{b}.txt"
        command = [PY_SPY, "record", "--nonblocking", "-r", "100", "-f", "raw"]
        command += ["-o", str(out), "-p", str(pid)]
        spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    # A SIGINT before py-spy has set up its handler kills it without its file: a step
    # shorter than py-spy's start (a small cluster's) lost its profile that way.
    deadline = time.monotonic() + SPY_START_TIMEOUT_S
    for spy in spies:
        wait_until_sampling(spy, deadline)
    try:
        yield
    finally:
        for spy in spies:  # py-spy writes its file on SIGINT, or when the broker exits
            if spy.poll() is None:
                spy.send_signal(signal.SIGINT)
        for spy in spies:
            try:
                spy.wait(timeout=60)
            except subprocess.TimeoutExpired:
                spy.kill()


async def scale_figures(args: argparse.Namespace) -> None:
    n = args.scale
    topics = math.ceil(n / args.topic_partitions)
    sizes = topic_sizes(n, topics)
    session_ms = args.session_timeout_ms
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-cluster-scale-"))
    overrides = {
        "zookeeper.session.timeout.ms": str(session_ms),
        # No automatic rebalance in the middle of a measurement.
        "auto.leader.rebalance.enable": "false",
    }
    cluster = LocalCluster(data_dir, 3, overrides=overrides)
    console = Console()
    figures: dict[str, Any] = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "settings": {
            "brokers": 3,
            "partitions": n,
            "replication_factor": 3,
            "topics": topics,
            "zookeeper_session_timeout_ms": session_ms,
            "poll_interval_s": args.poll_interval,
            "broker_overrides": overrides,
        },
    }
    cluster.start(timeout=120)
    stopped = False
    try:
        console.print(
            f"cluster up in {data_dir}; creating {n:,} partitions RF=3 in {topics} topic(s)"
        )
        # A topic (1,000 partitions) per request: one request for them all would outlast
        # librdkafka's socket.timeout.ms (at most 300 s) at 100,000 partitions.
        creation = await create_and_wait(cluster, sizes, 3, args.timeout, 1, args.poll_interval)
        figures["creation"] = creation
        if creation["all_led_full_isr_on_every_broker_s"] is None:
            raise TimeoutError(f"the partitions were not all ready on every broker: {creation}")
        figures["memory_kb"] = {name: memory_kb(pid) for name, pid in process_pids(cluster).items()}
        console.print("kill -9 of the controller")
        with profiled(cluster, "failover", args.profile):
            failover = await controller_failover(cluster, sizes, args)
        figures["controller_failover"] = failover
        console.print(f"restarting broker {failover['killed_broker']}, preferred election")
        cluster.restart(failover["killed_broker"], timeout=args.timeout)
        await full_isrs_everywhere(cluster, sizes, args)
        with profiled(cluster, "preferred-election", args.profile):
            figures["preferred_election"] = await preferred_election_all(cluster, sizes, args)
        console.print("controlled shutdown of a broker")
        with profiled(cluster, "controlled-shutdown", args.profile):
            shutdown = await scale_controlled_shutdown(cluster, sizes, args)
        figures["controlled_shutdown"] = shutdown
        console.print(f"restarting broker {shutdown['broker']}, then stopping the cluster")
        cluster.restart(shutdown["broker"], timeout=args.timeout)
        await full_isrs_everywhere(cluster, sizes, args)
        started = time.monotonic()
        with profiled(cluster, "whole-stop", args.profile):
            cluster.stop(timeout=args.timeout)
        stopped = True
        figures["whole_cluster_stop_s"] = time.monotonic() - started
    finally:
        if not stopped:
            cluster.stop(timeout=120)

    c, f = figures["creation"], figures["controller_failover"]
    p, s = figures["preferred_election"], figures["controlled_shutdown"]
    table = Table(
        title=f"minikafka at {n:,} partitions RF=3 ({topics} topic{'s' * (topics != 1)}), 3 brokers, "
        f"zookeeper.session.timeout.ms={session_ms}"
    )
    table.add_column("measure")
    table.add_column("result", justify="right")
    table.add_row(
        "create: requests returned / every partition led, full ISR, in every broker's metadata",
        f"{c['create_requests_returned_s']:.2f} s / {c['all_led_full_isr_on_every_broker_s']:.2f} s",
    )
    for name, mem in figures["memory_kb"].items():
        table.add_row(
            f"{name}: RSS (peak) before the kill",
            f"{mem['VmRSS'] / 1024:.0f} MiB ({mem['VmHWM'] / 1024:.0f} MiB)",
        )
    dead = f["killed_broker"]
    table.add_row(
        f"kill -9 of the controller (broker {dead}, leading {f['affected_partitions']:,}) → "
        f"its session expired (/brokers/ids/{dead} gone)",
        f"{f['session_expired_after_kill_s']:.2f} s",
    )
    table.add_row(
        f"  → new controller elected (/controller: broker {f['new_controller']})",
        f"{f['controller_elected_after_kill_s']:.2f} s "
        f"(+{f['controller_elected_after_kill_s'] - f['session_expired_after_kill_s']:.2f} s)",
    )
    table.add_row(
        "  → every partition it led has a live leader in every survivor's metadata "
        "(after the kill / after the expiry)",
        f"{f['all_led_everywhere_after_kill_s']:.2f} s / "
        f"{f['all_led_everywhere_after_expiry_s']:.2f} s",
    )
    for b, v in f["per_broker"].items():
        table.add_row(
            f"    broker {b}'s metadata, after the kill",
            f"{v['after_s']:.2f} s ({v['metadata_polls']} polls)",
        )
    table.add_row(
        "preferred election of every partition after the killed broker's restart, "
        "in every broker's metadata",
        f"{p['seconds']:.2f} s ({p['partitions_moved']:,} moved)",
    )
    table.add_row(
        f"controlled shutdown (SIGTERM) of broker {s['broker']}, leading "
        f"{s['led_partitions']:,} → process exited",
        f"{s['exited_s']:.2f} s",
    )
    table.add_row(
        "  → every partition it led has another leader in every remaining broker's metadata",
        f"{s['moved_everywhere_s']:.2f} s",
    )
    table.add_row(
        "stop the whole cluster (clean close of every broker, ZooKeeper)",
        f"{figures['whole_cluster_stop_s']:.2f} s",
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
        help=f"zookeeper.session.timeout.ms of --write-resume's clusters (default "
        f"{WRITE_RESUME_SESSION_TIMEOUT_MS}) and --scale's (default {SCALE_SESSION_TIMEOUT_MS})",
    )
    ap.add_argument(
        "--scale",
        type=int,
        metavar="N",
        help="measure instead failover, controlled shutdown, stop and memory at N partitions",
    )
    ap.add_argument(
        "--topic-partitions",
        type=int,
        default=1000,
        help="--scale: at most this many partitions a topic",
    )
    ap.add_argument(
        "--poll-interval",
        type=float,
        default=0.25,
        help="--scale: seconds between a broker's Metadata polls (the figures' resolution, "
        "with the time a response takes)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="--scale: seconds each step (creation, failover, restart, ...) may take",
    )
    ap.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="--scale: sample every broker with py-spy through each step, stacks into DIR",
    )
    args = ap.parse_args(argv)
    if args.scale is not None and args.scale < 1:
        ap.error("--scale wants at least one partition")
    if args.profile is not None:
        if args.scale is None:
            ap.error("--profile goes with --scale")
        if shutil.which(PY_SPY) is None:
            ap.error(
                "--profile needs py-spy, in this Python's environment or on PATH (pip install py-spy)"
            )
        args.profile.mkdir(parents=True, exist_ok=True)
    if args.topic_partitions < 1:
        ap.error("--topic-partitions must be positive")
    return args


async def main() -> None:
    args = parse_args()
    if args.throttled_move is not None:
        await throttle_figures(args)
        return
    if args.write_resume:
        if args.session_timeout_ms is None:
            args.session_timeout_ms = WRITE_RESUME_SESSION_TIMEOUT_MS
        await write_resume_figures(args)
        return
    if args.scale is not None:
        if args.session_timeout_ms is None:
            args.session_timeout_ms = SCALE_SESSION_TIMEOUT_MS
        await scale_figures(args)
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
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        asyncio.run(main())
