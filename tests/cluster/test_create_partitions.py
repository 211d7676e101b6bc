"""Adding partitions to existing topics (Kafka's CreatePartitions, `kafka-topics --alter
--partitions`) on a real cluster: ZooKeeper, broker processes, a real Kafka client
(confluent-kafka) and the CLI.

The broker that is controller writes the new assignment to `/brokers/topics/<t>`; the
controller's watch on that znode creates the partitions as it creates a new topic's.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions

from minikafka.cluster import LocalCluster
from minikafka.controller.assignment import assign_replicas
from minikafka.protocol.errors import ErrorCode
from tests.cluster.conftest import SESSION_TIMEOUT_MS, wait_until, wait_until_async
from tests.cluster.helpers import (
    admin_client,
    create_topic,
    metadata,
    partition_for_key,
    partition_states,
    produce_values,
    producing,
    read_records,
    run_cli,
    send_and_wait,
)

pytestmark = pytest.mark.timeout(180)

FAILOVER_S = SESSION_TIMEOUT_MS / 1000 + 15


async def fully_replicated_everywhere(cluster: LocalCluster, topic: str, partitions: int) -> bool:
    """Every live broker's metadata has `partitions` partitions of `topic`, each with a
    leader and every replica in its ISR."""
    for b in cluster.broker_ids:
        if not cluster.is_alive(b):
            continue
        md = await metadata(cluster, b)
        found = [t for t in md.topics if t.name == topic and t.error_code == ErrorCode.NONE]
        if not found or len(found[0].partitions) != partitions:
            return False
        for p in found[0].partitions:
            if p.leader < 0 or sorted(p.isr) != sorted(p.replicas):
                return False
    return True


async def topic_on_broker(cluster: LocalCluster, broker_id: int, topic: str) -> bool:
    md = await metadata(cluster, broker_id)
    return any(t.name == topic and t.error_code == ErrorCode.NONE for t in md.topics)


async def create_partitions(
    cluster: LocalCluster,
    topic: str,
    total: int,
    assignments: Sequence[Sequence[int]] | None = None,
    *,
    validate_only: bool = False,
) -> None:
    """Kafka's CreatePartitions through librdkafka's AdminClient: answered once the
    controller broker's metadata has the new partitions; KafkaException on a refusal."""
    new = NewPartitions(topic, total)
    if assignments is not None:
        new = NewPartitions(topic, total, [list(a) for a in assignments])

    def call() -> None:
        admin = admin_client(cluster.bootstrap_servers)
        futures = admin.create_partitions(
            [new], operation_timeout=30, request_timeout=60, validate_only=validate_only
        )
        futures[topic].result(timeout=90)

    await asyncio.to_thread(call)


async def refusal(
    cluster: LocalCluster,
    topic: str,
    total: int,
    assignments: Sequence[Sequence[int]] | None = None,
) -> KafkaError:
    """The error of a CreatePartitions the brokers refuse: Kafka's code and message."""
    with pytest.raises(KafkaException) as refused:
        await create_partitions(cluster, topic, total, assignments)
    error: KafkaError = refused.value.args[0]
    return error


async def consume_partitions(
    cluster: LocalCluster, topic: str, partitions: list[int]
) -> list[tuple[int, bytes]]:
    """(partition, value) of every record of `partitions`, from their beginning to their
    high watermarks as of the call."""
    records = await asyncio.to_thread(
        read_records, cluster.bootstrap_servers, topic, None, 30, partitions=partitions
    )
    return [(r.partition, r.value or b"") for r in records]


async def test_added_partitions_get_leaders_full_isrs_everywhere_and_carry_records(
    cluster: LocalCluster,
) -> None:
    await create_topic(cluster, "t", 3, 3)
    old = await produce_values(cluster, "t", [f"old-{i}".encode() for i in range(30)])
    zk = cluster.zk_client()
    before = zk.get_assignment("t") or {}
    # A key that moves from an old partition to a new one when the count goes 3 -> 5.
    key = next(
        k for k in (f"key-{i}".encode() for i in itertools.count()) if partition_for_key(k, 5) >= 3
    )
    # Producers that know the topic with its 3 partitions before the addition; the keyed
    # one asks for metadata every 300 ms (librdkafka's topic.metadata.refresh.interval.ms,
    # Kafka's metadata.max.age.ms), the other every 5 minutes (the default).
    with (
        producing(cluster.bootstrap_servers) as explicit,
        producing(cluster.bootstrap_servers, {"topic.metadata.refresh.interval.ms": 300}) as keyed,
    ):
        assert (await send_and_wait(explicit, "t", b"warm-up", partition=0)).partition() == 0
        assert (await send_and_wait(keyed, "t", b"warm-up", key=key)).partition() < 3

        # Answered once the controller broker's metadata has them; the others' metadata
        # follows with UpdateMetadata (awaited next).
        await create_partitions(cluster, "t", 5)
        await wait_until_async(
            lambda: fully_replicated_everywhere(cluster, "t", 5),
            30,
            "5 partitions, each with a leader and a full ISR, in every broker's metadata",
        )
        # ZooKeeper: the old partitions untouched, the new ones continue the rotation from
        # partition 0's first replica (Kafka's addPartitions); each got its state znode.
        after = zk.get_assignment("t") or {}
        assert {p: after[p] for p in range(3)} == before
        start = sorted(cluster.broker_ids).index(before[0][0])
        assert {p: after[p] for p in (3, 4)} == assign_replicas(
            cluster.broker_ids, 2, 3, start_partition=3, start_index=start
        )
        states = partition_states(cluster, "t", 5)
        for p in (3, 4):
            assert states[p].leader == after[p][0] and states[p].leader_epoch == 0
            assert sorted(states[p].isr) == sorted(after[p])

        # The producer that knew 3 partitions asks for metadata again (librdkafka refuses
        # a record for a partition its metadata lacks instead of asking), finds 5 and
        # writes to the new ones.
        md = await asyncio.to_thread(explicit.list_topics, "t", 30)
        assert sorted(md.topics["t"].partitions) == [0, 1, 2, 3, 4]
        new_values = [(p, f"new-{p}-{i}".encode()) for p in (3, 4) for i in range(10)]
        for p, v in new_values:
            assert (await send_and_wait(explicit, "t", v, partition=p)).partition() == p

        # The keyed producer learns the new count at its next metadata refresh, after which
        # the key hashes over 5 partitions.
        async def key_moved() -> bool:
            md = await send_and_wait(keyed, "t", b"keyed", key=key)
            return md.partition() == partition_for_key(key, 5)

        await wait_until_async(key_moved, 20, "the keyed producer to use 5 partitions")

    got = await consume_partitions(cluster, "t", [3, 4])
    assert sorted((p, v) for p, v in got if v.startswith(b"new-")) == sorted(new_values)
    assert len(old) == 30


async def test_a_new_controller_watches_every_topic_and_handles_a_later_addition(
    cluster: LocalCluster,
) -> None:
    await create_topic(cluster, "t", 3, 3)
    old_controller, old_epoch = cluster.controller() or (-1, -1)
    cluster.kill(old_controller)
    new_controller, new_epoch = cluster.wait_for_controller(
        timeout=FAILOVER_S, exclude=[old_controller]
    )
    assert new_epoch > old_epoch
    # Back as a plain broker, so that RF 3 has its three live brokers.
    cluster.restart(old_controller)
    assert cluster.controller() == (new_controller, new_epoch)
    await wait_until_async(
        lambda: topic_on_broker(cluster, old_controller, "t"), 30, "the restarted broker's metadata"
    )

    # A topic the new controller knew at failover ...
    await create_partitions(cluster, "t", 5)
    await wait_until_async(
        lambda: fully_replicated_everywhere(cluster, "t", 5),
        30,
        "t's 5 partitions with leaders and full ISRs everywhere",
    )
    # ... and one it saw created.
    await create_topic(cluster, "u", 1, 3)
    await create_partitions(cluster, "u", 3)
    await wait_until_async(
        lambda: fully_replicated_everywhere(cluster, "u", 3),
        30,
        "u's 3 partitions with leaders and full ISRs everywhere",
    )
    states = partition_states(cluster, "t", 5)
    assert {states[p].controller_epoch for p in (3, 4)} == {new_epoch}
    assert cluster.controller() == (new_controller, new_epoch)
    values = [b"a", b"b"]
    with producing(cluster.bootstrap_servers) as producer:
        for v in values:
            assert (await send_and_wait(producer, "u", v, partition=2)).partition() == 2
    got = await consume_partitions(cluster, "u", [2])
    assert [v for _, v in got] == values


async def test_refusals_come_back_with_kafkas_error_codes(cluster: LocalCluster) -> None:
    await create_topic(cluster, "t", 3, 3)
    zk = cluster.zk_client()
    unknown = await refusal(cluster, "nope", 2)
    assert unknown.code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3

    fewer = await refusal(cluster, "t", 2)
    assert fewer.code() == ErrorCode.INVALID_PARTITIONS == 37
    assert fewer.str() == "Topic currently has 3 partitions, which is higher than the requested 2."
    same = await refusal(cluster, "t", 3)
    assert same.code() == ErrorCode.INVALID_PARTITIONS
    assert same.str() == "Topic already has 3 partitions."

    live = sorted(cluster.broker_ids)
    refused = {
        "Unknown broker(s) in replica assignment: 99.": [[live[0], live[1], 99]],
        "Increasing the number of partitions by 2 but 1 assignments provided.": [live],
        "Inconsistent replication factor between partitions, partition 0 has 3 while "
        "partitions [3] have replication factors [2], respectively.": [live[:2]],
        f"Duplicate brokers not allowed in replica assignment: {live[0]}, {live[0]}, "
        f"{live[1]} for partition id 3.": [[live[0], live[0], live[1]]],
    }
    for message, assignments in refused.items():
        count = 3 + (2 if "by 2" in message else 1)
        bad = await refusal(cluster, "t", count, assignments)
        assert bad.code() == ErrorCode.INVALID_REPLICA_ASSIGNMENT == 39
        assert bad.str() == message

    await create_partitions(cluster, "t", 4, validate_only=True)
    assert len(zk.get_assignment("t") or {}) == 3  # nothing was written

    # A topic queued for deletion: its deletion waits for a dead broker's replicas.
    controller, _ = cluster.controller() or (-1, -1)
    victim = next(b for b in cluster.broker_ids if b != controller)
    cluster.kill(victim)
    cluster.wait_for_unregistered([victim], timeout=FAILOVER_S)
    zk.request_topic_deletion("t")

    # The controller queued it once it told the brokers to forget it.
    async def forgotten() -> bool:
        return not await topic_on_broker(cluster, controller, "t")

    await wait_until_async(forgotten, 30, "t queued for deletion")
    deleting = await refusal(cluster, "t", 4)
    assert deleting.code() == ErrorCode.INVALID_TOPIC_EXCEPTION == KafkaError.TOPIC_EXCEPTION
    assert deleting.str() == "The topic is queued for deletion."
    assert len(zk.get_assignment("t") or {}) == 3

    # The dead broker comes back; the deletion completes.
    cluster.restart(victim)
    wait_until(lambda: not zk.topic_exists("t"), 30, "t's deletion to complete")


def test_cli_alter_adds_partitions_like_kafka_topics(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    created = run_cli(
        "topics", "--bootstrap-server", b, "--create", "--topic", "cli",
        "--partitions", "2", "--replication-factor", "3",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    altered = run_cli(
        "topics", "--bootstrap-server", b, "--alter", "--topic", "cli", "--partitions", "4"
    )
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout == ""  # kafka-topics prints nothing either

    shown: list[str] = []

    def four_with_leaders() -> bool:
        # Each run may ask another broker, one that has not had the change yet.
        out = run_cli("topics", "--bootstrap-server", b, "--describe", "--topic", "cli")
        shown[:] = out.stdout.splitlines()
        return (
            bool(shown)
            and "PartitionCount: 4\t" in shown[0]
            and len(shown) == 5
            and all("Leader: none" not in line for line in shown[1:])
        )

    wait_until(four_with_leaders, 30, "describe to show 4 partitions with leaders")
    assert [line.split("\t")[2] for line in shown[1:]] == [f"Partition: {p}" for p in range(4)]

    fewer = run_cli(
        "topics", "--bootstrap-server", b, "--alter", "--topic", "cli", "--partitions", "3"
    )
    assert fewer.returncode == 1
    assert fewer.stderr.startswith("Error while executing topic command : ")
    assert "Topic currently has 4 partitions, which is higher than the requested 3." in (
        fewer.stderr
    )
    missing = run_cli(
        "topics", "--bootstrap-server", b, "--alter", "--topic", "nope", "--partitions", "3"
    )
    assert missing.returncode == 1
    assert "Topic 'nope' does not exist as expected" in missing.stderr
