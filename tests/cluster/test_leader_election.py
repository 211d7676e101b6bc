"""ElectLeaders (KIP-460) and `minikafka leader-election` against a real cluster.

One 3-broker cluster for the module, without the automatic leader rebalance (so that only
the elections asked for move leaders). Protocol behaviour is judged by confluent-kafka's
AdminClient.elect_leaders, an unmodified client; the CLI's output by running it.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as KafkaTopicPartition
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest, TopicPartitions
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from minikafka.client.kafka_wire import KafkaConnection
from minikafka.client.librdkafka import watermarks
from minikafka.cluster import LocalCluster
from minikafka.protocol.errors import ErrorCode
from tests.cluster.conftest import started_cluster, wait_until_async
from tests.cluster.helpers import (
    TIMEOUT_S,
    admin_client,
    bootstrap,
    consuming,
    create_topic,
    metadata,
    partition_states,
    produce_values,
    run_cli,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    overrides = {"auto.leader.rebalance.enable": "false"}
    with started_cluster(tmp_path_factory.mktemp("elect"), overrides) as cluster:
        yield cluster


def elect(
    cluster: LocalCluster,
    election_type: ElectionType,
    partitions: list[tuple[str, int]] | None,
) -> dict[tuple[str, int], int]:
    """Each partition's error code (0: elected) as confluent-kafka reports it."""
    admin = admin_client(cluster.bootstrap_servers)
    asked = None if partitions is None else [KafkaTopicPartition(t, p) for t, p in partitions]
    future = admin.elect_leaders(election_type, asked)
    result = future.result(timeout=TIMEOUT_S)
    return {
        (tp.topic, tp.partition): 0 if error is None else error.code()
        for tp, error in result.items()
    }


async def leaders(cluster: LocalCluster, broker_id: int, topic: str) -> dict[int, int]:
    """Partition -> leader in `broker_id`'s metadata."""
    meta = await metadata(cluster, broker_id)
    (t,) = [t for t in meta.topics if t.name == topic]
    return {p.partition: p.leader for p in t.partitions}


async def preferred_everywhere(cluster: LocalCluster, topic: str) -> bool:
    """Every partition of `topic` led by its first replica in every live broker's metadata."""
    for b in cluster.broker_ids:
        meta = await metadata(cluster, b)
        found = [t for t in meta.topics if t.name == topic]
        if not found or any(p.leader != p.replicas[0] for p in found[0].partitions):
            return False
    return True


def controller_id(cluster: LocalCluster) -> int:
    found = cluster.controller()
    assert found is not None
    return found[0]


async def test_a_preferred_election_restores_the_leaders_after_a_restart(
    cluster: LocalCluster,
) -> None:
    topic = "restore"
    await create_topic(cluster, topic, 6, 3)
    await wait_until_async(lambda: preferred_everywhere(cluster, topic), TIMEOUT_S)
    bounced = next(b for b in reversed(cluster.broker_ids) if b != controller_id(cluster))
    await asyncio.to_thread(cluster.terminate, bounced)
    await asyncio.to_thread(cluster.start_broker, bounced)
    # A preferred replica may lead again once back in the ISR (caught up).
    await wait_until_async(
        lambda: all(len(st.isr) == 3 for st in partition_states(cluster, topic, 6).values()),
        TIMEOUT_S,
        f"broker {bounced} back in every ISR",
    )
    # Its partitions moved away on its controlled shutdown, and stay away (no rebalance).
    ctrl = controller_id(cluster)
    moved = await leaders(cluster, ctrl, topic)
    assert bounced not in moved.values()
    meta = await metadata(cluster, ctrl)
    (t,) = [t for t in meta.topics if t.name == topic]
    lost = sorted(f"{topic}-{p.partition}" for p in t.partitions if p.replicas[0] == bounced)
    assert lost

    result = await asyncio.to_thread(
        run_cli,
        "leader-election",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--election-type",
        "preferred",
        "--all-topic-partitions",
    )

    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("Successfully completed leader election (PREFERRED) for partitions ")
    assert set(line.split(" for partitions ")[1].split(", ")) == set(lost)
    # Answered once the controller's own metadata shows the new leaders; the others follow.
    assert (await leaders(cluster, ctrl, topic)) == {
        p.partition: p.replicas[0] for p in t.partitions
    }
    await wait_until_async(lambda: preferred_everywhere(cluster, topic), TIMEOUT_S)
    # Asked again: nothing to elect, nothing listed (Kafka leaves out ELECTION_NOT_NEEDED
    # when asked for all partitions).
    assert {
        tp: e for tp, e in elect(cluster, ElectionType.PREFERRED, None).items() if tp[0] == topic
    } == {}


async def test_errors_and_an_unclean_election(cluster: LocalCluster, tmp_path: Path) -> None:
    ctrl = controller_id(cluster)
    down, other = [b for b in reversed(cluster.broker_ids) if b != ctrl]
    await create_topic(cluster, "elect-a", 0, 0, assignment={0: [down, ctrl], 1: [ctrl, down]})
    await create_topic(cluster, "elect-solo", 0, 0, assignment={0: [down]})
    await create_topic(cluster, "elect-unclean", 0, 0, assignment={0: [down, other]})
    await wait_until_async(lambda: preferred_everywhere(cluster, "elect-unclean"), TIMEOUT_S)

    # elect-unclean-0's only in-sync replica is `down`, and `down` dies: `other` leaves the
    # ISR on its controlled shutdown, then `down` is killed, then `other` comes back.
    await asyncio.to_thread(cluster.terminate, other)
    # Acknowledged by `down` alone (the ISR is {down}; min.insync.replicas=1): an unclean
    # election loses them, Kafka's known cost.
    await produce_values(cluster, "elect-unclean", [b"lost"] * 5, exclude=(other,))
    await asyncio.to_thread(cluster.kill, down)
    await wait_until_async(
        lambda: _leader_is(cluster, ctrl, "elect-a", 0, ctrl), TIMEOUT_S, "elect-a-0 to move"
    )
    await asyncio.to_thread(cluster.start_broker, other)
    assert (await leaders(cluster, ctrl, "elect-unclean"))[0] == -1

    preferred = elect(
        cluster,
        ElectionType.PREFERRED,
        [("elect-a", 0), ("elect-a", 1), ("elect-solo", 0), ("elect-nope", 0), ("elect-a", 9)],
    )
    assert preferred == {
        ("elect-a", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,  # its preferred is down
        ("elect-a", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("elect-solo", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ("elect-nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("elect-a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    # All partitions: only those elected or failed are listed.
    everything = elect(cluster, ElectionType.PREFERRED, None)
    assert everything[("elect-a", 0)] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert ("elect-a", 1) not in everything
    unclean = elect(cluster, ElectionType.UNCLEAN, [("elect-a", 1), ("elect-solo", 0)])
    assert unclean == {
        ("elect-a", 1): ErrorCode.ELECTION_NOT_NEEDED,  # a live broker leads it
        ("elect-solo", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,  # no live replica
    }

    # A broker that is not the controller answers NOT_CONTROLLER for each partition.
    conn = KafkaConnection(*cluster.broker_address(other), client_id="elect-tests")
    try:
        response = await conn.call(
            ElectLeadersRequest(
                election_type=i8(0),
                topic_partitions=(
                    TopicPartitions(topic=TopicName("elect-a"), partitions=(i32(0), i32(1))),
                ),
                timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            ),
            timeout_s=TIMEOUT_S,
        )
    finally:
        await conn.close()
    assert int(response.error_code) == ErrorCode.NONE
    assert [
        (r.topic, p.partition_id, int(p.error_code))
        for r in response.replica_election_results
        for p in r.partition_result
    ] == [("elect-a", 0, ErrorCode.NOT_CONTROLLER), ("elect-a", 1, ErrorCode.NOT_CONTROLLER)]

    # The CLI: a failure, a no-op, then the unclean election (exit 0).
    failed = await asyncio.to_thread(
        _cli, cluster, "--election-type", "PREFERRED", "--topic", "elect-a", "--partition", "0"
    )
    assert failed.returncode == 1
    assert failed.stdout.splitlines() == [
        "Error completing leader election (PREFERRED) for partition: elect-a-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect "
        "leader for partition elect-a-0 under strategy "
        "PreferredReplicaPartitionLeaderElectionStrategy"
    ]
    assert "1 replica(s) could not be elected" in failed.stderr
    partitions_file = tmp_path / "partitions.json"
    partitions_file.write_text(json.dumps({"partitions": [{"topic": "elect-a", "partition": 1}]}))
    noop = await asyncio.to_thread(
        _cli, cluster, "--election-type", "unclean", "--path-to-json-file", str(partitions_file)
    )
    assert (noop.returncode, noop.stdout) == (
        0,
        "Valid replica already elected for partitions elect-a-1\n",
    )
    elected = await asyncio.to_thread(
        _cli, cluster, "--election-type", "UNCLEAN", "--topic", "elect-unclean", "--partition", "0"
    )
    assert (elected.returncode, elected.stdout) == (
        0,
        "Successfully completed leader election (UNCLEAN) for partitions elect-unclean-0\n",
    )
    # Answered once the controller's metadata shows it: `other`, which was not in the ISR,
    # and never got the five records.
    assert (await leaders(cluster, ctrl, "elect-unclean"))[0] == other
    with consuming(bootstrap(cluster, exclude=(down,))) as consumer:
        assert watermarks(consumer, "elect-unclean", 0, TIMEOUT_S) == (0, 0)

    await asyncio.to_thread(cluster.start_broker, down)


async def _leader_is(cluster: LocalCluster, broker: int, topic: str, p: int, leader: int) -> bool:
    return (await leaders(cluster, broker, topic)).get(p) == leader


def _cli(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("leader-election", "--bootstrap-server", cluster.bootstrap_servers, *args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--all-topic-partitions"], "Missing required option(s): --election-type"),
        (
            ["--election-type", "preferred"],
            "One and only one of the following options is required: --topic, "
            "--all-topic-partitions, --path-to-json-file",
        ),
        (
            ["--election-type", "preferred", "--topic", "t", "--all-topic-partitions"],
            "One and only one of the following options is required: --topic, "
            "--all-topic-partitions, --path-to-json-file",
        ),
        (
            ["--election-type", "preferred", "--topic", "t"],
            "Missing required option(s): --partition",
        ),
        (
            ["--election-type", "preferred", "--all-topic-partitions", "--partition", "1"],
            "Option --partition is only allowed if --topic is used",
        ),
    ],
)
async def test_cli_option_rules(args: list[str], message: str) -> None:
    result = await asyncio.to_thread(
        run_cli, "leader-election", "--bootstrap-server", "localhost:1", *args
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert message in result.stderr
