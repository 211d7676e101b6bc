"""Racks (`broker.rack`) on a real cluster: each broker registers its rack, Metadata and
DescribeCluster carry it to unmodified clients, and topics and added partitions get Kafka's
rack-aware replica placement (`AdminUtils.assignReplicasToBrokers`), or Kafka's refusal when
only some brokers have a rack.

The shared cluster has three brokers on two racks (a, a, b), made by `LocalCluster(racks=)`
as `minikafka cluster up --racks a,a,b` makes it: with a replication factor of 2, every
partition must have one replica on each rack, which the rack-unaware placement does not do
(it puts partitions on brokers 1 and 2, both on rack a).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import (  # noqa: F401
    ClusterFactory,
    make_cluster,
    started_cluster,
)
from tests.cluster.helpers import admin_client, create_topic, run_cli

pytestmark = pytest.mark.timeout(180)

RACKS = {1: "a", 2: "a", 3: "b"}


@pytest.fixture(scope="module")
def racked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(
        tmp_path_factory.mktemp("racks"), racks=[RACKS[b] for b in sorted(RACKS)]
    ) as lc:
        yield lc


def new_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def assignment(cluster: LocalCluster, topic: str) -> dict[int, tuple[int, ...]]:
    """The topic's replica assignment as ZooKeeper has it (`/brokers/topics/<t>`)."""
    got = cluster.zk_client().get_assignment_and_version(topic)
    assert got is not None, topic
    return {p: tuple(r) for p, r in got.assignment.items()}


def racks_of(replicas: Sequence[int], racks: Mapping[int, str] = RACKS) -> list[str]:
    return sorted(racks[b] for b in replicas)


async def create_partitions(
    cluster: LocalCluster, topic: str, total: int, assignments: list[list[int]] | None = None
) -> None:
    """Kafka's CreatePartitions through librdkafka's AdminClient; KafkaException on a
    refusal."""
    new = (
        NewPartitions(topic, total)
        if assignments is None
        else NewPartitions(topic, total, assignments)
    )

    def call() -> None:
        admin = admin_client(cluster.bootstrap_servers)  # alive until the answer
        futures = admin.create_partitions([new], operation_timeout=30, request_timeout=60)
        futures[topic].result(timeout=90)

    await asyncio.to_thread(call)


# --- the racks reach ZooKeeper and the clients ---------------------------------------------


def test_each_broker_registers_its_rack_in_zookeeper(racked: LocalCluster) -> None:
    brokers = racked.zk_client().get_all_brokers()
    assert {b: info.rack for b, info in brokers.items()} == RACKS


async def test_metadata_carries_each_brokers_rack_to_an_unmodified_client(
    racked: LocalCluster,
) -> None:
    from aiokafka.client import AIOKafkaClient

    client = AIOKafkaClient(bootstrap_servers=racked.bootstrap_servers)
    await client.bootstrap()  # a Metadata request
    try:
        assert {b.nodeId: b.rack for b in client.cluster.brokers()} == RACKS
    finally:
        await client.close()


def test_describe_cluster_carries_each_brokers_rack(racked: LocalCluster) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=racked.bootstrap_servers)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert {b["broker_id"]: b["rack"] for b in described["brokers"]} == RACKS


def test_the_racks_are_kept_for_the_next_start(racked: LocalCluster) -> None:
    """As `cluster up --racks` keeps them: a cluster built again on the data dir (a later
    `cluster up`, `cluster restart`) writes the same broker.rack for each broker."""
    again = LocalCluster(racked.data_dir)
    assert {b: again.broker_properties(b)["broker.rack"] for b in again.broker_ids} == RACKS


# --- placement -----------------------------------------------------------------------------


async def test_a_new_topic_has_one_replica_on_each_rack(racked: LocalCluster) -> None:
    topic = new_name()
    await create_topic(racked, topic, 12, 2)
    got = assignment(racked, topic)
    assert sorted(got) == list(range(12))
    assert all(racks_of(replicas) == ["a", "b"] for replicas in got.values()), got
    # Leaders walk Kafka's rack-alternated broker list, rack a's and b's brokers in turn.
    alternated = [1, 3, 2]
    assert all(
        got[p + 1][0] == alternated[(alternated.index(got[p][0]) + 1) % 3] for p in range(11)
    ), got


async def test_three_replicas_on_two_racks_cover_both_racks(racked: LocalCluster) -> None:
    topic = new_name()
    await create_topic(racked, topic, 6, 3)
    got = assignment(racked, topic)
    assert all(sorted(r) == [1, 2, 3] for r in got.values()), got


async def test_added_partitions_have_one_replica_on_each_rack(racked: LocalCluster) -> None:
    topic = new_name()
    await create_topic(racked, topic, 2, 2)
    await create_partitions(racked, topic, 10)
    got = assignment(racked, topic)
    assert sorted(got) == list(range(10))
    assert all(racks_of(replicas) == ["a", "b"] for replicas in got.values()), got


# --- some brokers with a rack, some without: Kafka refuses to place replicas -------------------


async def test_some_brokers_without_a_rack_is_kafkas_unknown_server_error(
    make_cluster: ClusterFactory,  # noqa: F811 (the fixture imported above)
) -> None:
    """Kafka's AdminOperationException ("Not all brokers have rack information ..."), which
    is no ApiException: UNKNOWN_SERVER_ERROR, for topic creation, and for adding partitions
    even to a topic that says where they go."""
    cluster = make_cluster(2, broker_overrides={1: {"broker.rack": "a"}})
    with pytest.raises(KafkaException) as refused:
        await create_topic(cluster, "placed", 2, 2)
    error: KafkaError = refused.value.args[0]
    assert error.code() == KafkaError.UNKNOWN, error
    assert cluster.zk_client().get_assignment_and_version("placed") is None
    # With its own assignment a topic needs no placement, as in Kafka.
    await create_topic(cluster, "own", -1, -1, assignment={0: [1, 2]})
    with pytest.raises(KafkaException) as refused:
        await create_partitions(cluster, "own", 2, [[2, 1]])
    error = refused.value.args[0]
    assert error.code() == KafkaError.UNKNOWN, error
    assert sorted(assignment(cluster, "own")) == [0]


# --- minikafka cluster up --racks ---------------------------------------------------------------


def test_cluster_up_refuses_a_rack_count_unlike_the_broker_count(tmp_path: Path) -> None:
    result = run_cli(
        "cluster", "up", "--data-dir", str(tmp_path / "c"), "--brokers", "3", "--racks", "a,b"
    )
    assert result.returncode != 0
    assert "--racks names 2 rack(s) but the cluster has 3 brokers" in result.stderr
    assert not (tmp_path / "c" / "cluster.json").exists()
