"""`minikafka replicas --describe` on a real cluster: the leaders' view of every replica, and
a paused follower falling behind in it."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaError
from confluent_kafka.admin import NewTopic, PartitionMetadata

from minikafka.cli.main import cli
from minikafka.client.librdkafka import client_config, new_admin, new_producer
from minikafka.client.replica_states import PartitionReplicas
from minikafka.client.replicas import ReplicaClient
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import wait_until

pytestmark = pytest.mark.timeout(120)

TOPIC = "replicated"
PARTITIONS = 2
N = 40  # records per partition before the pause
M = 7  # records per partition while a follower is paused


def bootstrap_without(cluster: LocalCluster, broker_id: int | None = None) -> str:
    """The bootstrap servers minus a paused broker: its kernel still accepts connections, so
    a client that picked it would wait request.timeout.ms (30 s) for a metadata answer."""
    ports = cluster.broker_ports
    return ",".join(f"{cluster.host}:{ports[b]}" for b in ports if b != broker_id)


def describe_cli(bootstrap: str) -> list[list[str]]:
    """The body rows of the command's table (Partition, Replica, Role, InIsr, LEO, HW, Lag,
    LastCaughtUpAgeMs)."""
    args = ["replicas", "--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[0].startswith(f"Topic: {TOPIC}")
    return [[c.strip() for c in line[1:-1].split("│")] for line in lines if line.startswith("│")]


def create_topic(bootstrap: str) -> None:
    admin = new_admin(client_config(bootstrap, {}))
    created = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)
    created[TOPIC].result(timeout=30)


def topic_partitions(bootstrap: str) -> list[PartitionMetadata]:
    """The topic's partitions (leader, replicas in assignment order) from Metadata."""
    admin = new_admin(client_config(bootstrap, {}))
    topic = admin.list_topics(TOPIC, timeout=30).topics[TOPIC]
    assert topic.error is None and sorted(topic.partitions) == list(range(PARTITIONS))
    return [topic.partitions[p] for p in range(PARTITIONS)]


def produce(bootstrap: str, count: int, acks: str) -> None:
    """`count` records to each partition, every one acknowledged (with `acks`) in 30 s."""
    producer = new_producer(client_config(bootstrap, {"acks": acks, "linger.ms": 5}))
    outcomes: list[KafkaError | None] = []
    for p in range(PARTITIONS):
        for i in range(count):
            producer.produce(
                TOPIC,
                f"{p}-{i}".encode(),
                partition=p,
                on_delivery=lambda err, _msg: outcomes.append(err),
            )
    assert producer.flush(30) == 0, "records not acknowledged in 30 s"
    assert outcomes == [None] * (PARTITIONS * count)


def describe_replicas(bootstrap: str) -> list[PartitionReplicas]:
    async def describe() -> list[PartitionReplicas]:
        async with ReplicaClient(bootstrap) as client:
            return await client.describe_replicas([TOPIC])

    return asyncio.run(describe())


def caught_up(described: list[PartitionReplicas], leo: int) -> bool:
    return all(
        p.error is None
        and p.high_watermark == leo
        and len(p.replicas) == 3
        and all(r.log_end_offset == leo and r.lag == 0 and r.in_isr for r in p.replicas)
        for p in described
    )


def test_replicas_shows_each_leaders_view_and_a_paused_followers_lag(
    cluster: LocalCluster,
) -> None:
    everyone = cluster.bootstrap_servers
    create_topic(everyone)
    produce(everyone, N, "all")
    wait_until(lambda: caught_up(describe_replicas(everyone), N), 20, "followers at N")
    partitions = topic_partitions(everyone)
    leaders = {p.id: p.leader for p in partitions}

    rows = describe_cli(everyone)
    # One row per replica, in assignment order (as `topics --describe` lists them).
    assert [(r[0], r[1]) for r in rows] == [
        (str(p.id), str(b)) for p in partitions for b in p.replicas
    ]
    for partition, replica, role, in_isr, leo, hw, lag, age in rows:
        is_leader = int(replica) == leaders[int(partition)]
        assert role == ("leader" if is_leader else "follower")
        assert (in_isr, leo, hw, lag) == ("yes", str(N), str(N), "0")
        if is_leader:
            assert age == "0"
        else:  # followers fetch all the time, so they caught up moments ago
            assert 0 <= int(age) < 5_000

    # A broker that leads nothing (2 partitions, 3 brokers) stops fetching. The pause
    # stays well below zookeeper.session.timeout.ms, so nobody notices but the leaders.
    paused = next(b for b in cluster.broker_ids if b not in leaders.values())
    others = bootstrap_without(cluster, paused)
    cluster.pause(paused)
    try:
        produce(others, M, "1")  # acks=all would wait for the paused ISR member
        rows = describe_cli(others)
    finally:
        cluster.resume(paused)
    by_replica = {(int(r[0]), int(r[1])): r for r in rows}
    for p in range(PARTITIONS):
        _, _, role, in_isr, leo, hw, lag, _ = by_replica[(p, paused)]
        assert role == "follower"
        # replica.lag.time.max.ms (30 s) has not passed: still in the ISR, holding the HW.
        assert (in_isr, leo, hw, lag) == ("yes", str(N), str(N), str(M))
        leader_row = by_replica[(p, leaders[p])]
        assert (leader_row[4], leader_row[6]) == (str(N + M), "0")

    wait_until(lambda: caught_up(describe_replicas(everyone), N + M), 20, "the follower back")
