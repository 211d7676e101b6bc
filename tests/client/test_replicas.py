"""`Admin.describe_replicas` and `minikafka replicas --describe` against the fake cluster, whose
brokers answer DescribeReplicas from canned leader views (`leader_views`)."""

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli
from minikafka.cli.replicas import partition_rows
from minikafka.client.admin import Admin, PartitionReplicas, partition_replicas
from minikafka.protocol import messages as m
from minikafka.protocol.errors import (
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from tests.client.fake_broker import FakeCluster, ThreadedCluster


def leader_view(cluster: FakeCluster, topic: str, partition: int) -> m.PartitionReplicaStates:
    """What the fake leader says: the leader at its LEO, follower i (in the leader's order,
    which here is reversed assignment order) i+1 messages behind, caught up (i+1)*100 ms ago,
    the last one outside the ISR."""
    p = cluster.partition(topic, partition)
    followers = [b for b in reversed(p.replicas) if b != p.leader]
    replicas = [m.ReplicaState(p.leader, p.log_end_offset, 0, True)]
    for i, b in enumerate(followers):
        replicas.append(
            m.ReplicaState(b, p.log_end_offset - i - 1, (i + 1) * 100, i < len(followers) - 1)
        )
    return m.PartitionReplicaStates(
        topic,
        partition,
        0,
        p.leader,
        p.leader_epoch,
        p.log_end_offset - 1,
        p.log_end_offset,
        replicas,
    )


def answer_describe_replicas(cluster: FakeCluster, times: int = 1000) -> None:
    def answer(broker_id: int, r: m.DescribeReplicasRequest) -> m.DescribeReplicasResponse:
        out = [
            leader_view(cluster, name, i)
            for name in sorted(cluster.topics)
            if r.topics is None or name in r.topics
            for i, p in sorted(cluster.topics[name].items())
            if p.leader == broker_id
        ]
        return m.DescribeReplicasResponse(out)

    cluster.inject(m.DescribeReplicasRequest, answer, times=times)


def fast_admin(cluster: FakeCluster, **kw) -> Admin:
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("default_api_timeout_ms", 3000)
    return Admin(cluster.bootstrap, **kw)


# --- the pure conversion -----------------------------------------------------------------


def test_replicas_come_in_assignment_order_with_lag_against_the_leaders_leo():
    state = m.PartitionReplicaStates(
        "t",
        0,
        0,
        leader=2,
        leader_epoch=4,
        high_watermark=7,
        log_end_offset=10,
        replicas=[
            m.ReplicaState(2, 10, 0, True),
            m.ReplicaState(1, 7, 1500, True),
            m.ReplicaState(3, -1, -1, False),  # not fetched since this leader took over
            m.ReplicaState(9, 10, 5, True),  # outside the assignment: goes last
        ],
    )
    p = partition_replicas(state, assignment=[3, 1, 2])
    got = [(r.broker_id, r.is_leader, r.in_isr, r.lag, r.last_caught_up_ms_ago) for r in p.replicas]
    assert got == [
        (3, False, False, None, -1),
        (1, False, True, 3, 1500),
        (2, True, True, 0, 0),
        (9, False, True, 0, 5),
    ]
    assert (p.high_watermark, p.log_end_offset, p.leader_epoch, p.error) == (7, 10, 4, None)


def test_rows_show_unknowns_and_errors_plainly():
    state = m.PartitionReplicaStates(
        "t", 3, 0, 1, 0, 5, 6, [m.ReplicaState(1, 6, 0, True), m.ReplicaState(2, -1, -1, False)]
    )
    assert partition_rows(partition_replicas(state, [1, 2])) == [
        ["3", "1", "leader", "yes", "6", "5", "0", "0"],
        ["3", "2", "follower", "no", "?", "5", "?", "never"],
    ]
    failed = PartitionReplicas("t", 4, -1, 2, -1, -1, [], LeaderNotAvailableError("no leader"))
    assert partition_rows(failed) == [
        ["4", "", "error: LEADER_NOT_AVAILABLE: no leader", "", "", "", "", ""]
    ]


# --- the admin client --------------------------------------------------------------------


async def test_describe_replicas_asks_each_partitions_leader(cluster):
    cluster.create_topic("t", partitions=3, replication_factor=3)
    for p in range(3):
        await cluster.append("t", p, [b"x"] * (p + 5))
    answer_describe_replicas(cluster)
    async with fast_admin(cluster) as admin:
        described = await admin.describe_replicas(["t"])
    asked = sorted(b for b, _ in cluster.requests_of(m.DescribeReplicasRequest))
    assert asked == [1, 2, 3]  # partition i is led by broker i+1
    assert [(p.partition, p.leader, p.error) for p in described] == [
        (0, 1, None),
        (1, 2, None),
        (2, 3, None),
    ]
    p2 = described[2]
    assert [r.broker_id for r in p2.replicas] == [3, 1, 2]  # the assignment's order
    assert [(r.log_end_offset, r.lag, r.in_isr) for r in p2.replicas] == [
        (7, 0, True),
        (5, 2, False),
        (6, 1, True),
    ]
    assert p2.high_watermark == 6


async def test_a_moved_leader_is_found_again_through_metadata(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=3)

    def moved(broker_id, r):
        # Broker 1 answers without the partition: it lost the leadership meanwhile.
        cluster.move_leader("t", 0, 2)
        return m.DescribeReplicasResponse([])

    cluster.inject(m.DescribeReplicasRequest, moved, broker=1)
    answer_describe_replicas(cluster)
    async with fast_admin(cluster) as admin:
        (p,) = await admin.describe_replicas()
    assert (p.leader, p.leader_epoch, p.error) == (2, 1, None)
    assert [b for b, _ in cluster.requests_of(m.DescribeReplicasRequest)] == [1, 2]


async def test_partitions_that_cannot_be_described_carry_their_error(cluster):
    cluster.create_topic("t", partitions=2, replication_factor=1)
    await cluster.stop_broker(2)  # sole replica of partition 1
    cluster.inject(
        m.DescribeReplicasRequest, lambda b, r: m.DescribeReplicasResponse([]), broker=1, times=1000
    )
    async with fast_admin(cluster) as admin:
        p0, p1 = await admin.describe_replicas(["t"], timeout_ms=300)
    assert isinstance(p0.error, NotLeaderOrFollowerError) and p0.replicas == []
    assert isinstance(p1.error, LeaderNotAvailableError)


async def test_an_unknown_topic_raises(cluster):
    async with fast_admin(cluster) as admin:
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.describe_replicas(["nope"])


# --- the command -------------------------------------------------------------------------


@pytest.fixture
def threaded() -> Iterator[ThreadedCluster]:
    t = ThreadedCluster(3)
    yield t
    t.close()


def run(threaded, *args):
    bootstrap = ["--bootstrap-server", threaded.cluster.bootstrap]
    return CliRunner().invoke(cli, ["replicas", *bootstrap, *args])


def table_rows(text: str) -> list[list[str]]:
    """The header and body rows of rich tables, as lists of cells."""
    return [
        [c.strip() for c in line[1:-1].split(line[0])]
        for line in (raw.rstrip() for raw in text.splitlines())
        if line[:1] in ("│", "┃")
    ]


def test_describe_prints_one_row_per_replica_per_topic(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("a", partitions=2, replication_factor=2))
    threaded.call(lambda: threaded.cluster.create_topic("b", partitions=1, replication_factor=1))
    threaded.run(threaded.cluster.append("a", 0, [b"x"] * 2))
    threaded.run(threaded.cluster.append("a", 1, [b"x"] * 4))
    threaded.run(threaded.cluster.append("b", 0, [b"x"] * 1))
    threaded.call(lambda: answer_describe_replicas(threaded.cluster))
    result = run(threaded, "--describe")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("Topic: a") < out.index("Topic: b")
    rows = table_rows(out)
    assert rows[0] == list(
        ("Partition", "Replica", "Role", "InIsr", "LEO", "HW", "Lag", "LastCaughtUpAgeMs")
    )
    assert rows[1:5] == [
        ["0", "1", "leader", "yes", "2", "1", "0", "0"],
        ["0", "2", "follower", "no", "1", "1", "1", "100"],
        ["1", "2", "leader", "yes", "4", "3", "0", "0"],
        ["1", "3", "follower", "no", "3", "3", "1", "100"],
    ]
    only_b = run(threaded, "--describe", "--topic", "b")
    assert "Topic: a" not in only_b.stdout
    assert table_rows(only_b.stdout)[1:] == [["0", "1", "leader", "yes", "1", "0", "0", "0"]]


def test_an_unknown_topic_fails_with_a_clear_message(threaded):
    result = run(threaded, "--describe", "--topic", "nope")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error while executing replicas command : Topic 'nope' does not exist as expected\n"
    )


def test_undescribable_partitions_are_shown_and_fail_the_command(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1, replication_factor=3))
    threaded.call(
        lambda: threaded.cluster.inject(
            m.DescribeReplicasRequest, lambda b, r: m.DescribeReplicasResponse([]), times=1000
        )
    )
    result = run(threaded, "--describe", "--timeout-ms", "300")
    assert result.exit_code == 1
    assert "NOT_LEADER_OR_FOLLOWER" in result.stdout
    assert "1 partition(s) could not be described" in result.stderr


def test_describe_is_required(threaded):
    result = run(threaded)
    assert result.exit_code == 2
    assert "--describe" in result.output
