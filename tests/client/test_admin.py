"""The admin client against an in-process fake cluster."""

import pytest

from minikafka.client.admin import Admin, NewPartitions, NewTopic
from minikafka.protocol import messages as m
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)


def fast_admin(cluster, **kw):
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("default_api_timeout_ms", 3000)
    return Admin(cluster.bootstrap, **kw)


async def test_create_topics_goes_to_the_controller(cluster):
    cluster.controller_id = 2
    async with fast_admin(cluster) as admin:
        await admin.create_topics(
            [NewTopic("t", 3, 2, configs={"min.insync.replicas": "2"})], timeout_ms=1000
        )
    ((broker, request),) = cluster.requests_of(m.CreateTopicsRequest)
    assert broker == 2
    assert request.timeout_ms == 1000
    (topic,) = request.topics
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("t", 3, 2)
    assert topic.configs == {"min.insync.replicas": "2"}
    assert len(cluster.topics["t"]) == 3


async def test_replica_assignment_replaces_partitions_and_replication_factor(cluster):
    async with fast_admin(cluster) as admin:
        await admin.create_topics([NewTopic("t", replica_assignment={0: [2, 3], 1: [3, 1]})])
    (_, request), *_ = cluster.requests_of(m.CreateTopicsRequest)
    topic = request.topics[0]
    assert (topic.num_partitions, topic.replication_factor) == (-1, -1)
    assert topic.assignments == {0: [2, 3], 1: [3, 1]}


async def test_an_existing_topic_raises_topic_already_exists(cluster):
    cluster.create_topic("t")
    async with fast_admin(cluster) as admin:
        with pytest.raises(TopicAlreadyExistsError, match="Topic 't' already exists"):
            await admin.create_topics([NewTopic("t", 1, 1), NewTopic("fresh", 1, 1)])
    assert "fresh" in cluster.topics  # the other topic was still created


async def test_several_failed_topics_raise_an_exception_group(cluster):
    cluster.create_topic("t")
    async with fast_admin(cluster) as admin:
        with pytest.raises(ExceptionGroup) as info:
            await admin.create_topics([NewTopic("t", 1, 1), NewTopic("big", 1, 9)])
    errors = info.value.exceptions
    assert [type(e) for e in errors] == [TopicAlreadyExistsError, InvalidReplicationFactorError]


async def test_not_controller_refreshes_metadata_and_retries_at_the_new_controller(cluster):
    async with fast_admin(cluster) as admin:
        await admin.describe_cluster()  # learns controller 1
        cluster.controller_id = 3  # broker 1 now answers NOT_CONTROLLER
        await admin.create_topics([NewTopic("t", 1, 1)])
    assert [b for b, _ in cluster.requests_of(m.CreateTopicsRequest)] == [1, 3]
    assert "t" in cluster.topics


async def test_delete_topics_and_unknown_topics(cluster):
    cluster.create_topic("t")
    async with fast_admin(cluster) as admin:
        await admin.delete_topics(["t"])
        assert "t" not in cluster.topics
        with pytest.raises(UnknownTopicOrPartitionError, match="Topic 't' does not exist"):
            await admin.delete_topics(["t"])


async def test_list_topics_is_sorted_and_forgets_deleted_topics(cluster):
    cluster.create_topic("b")
    cluster.create_topic("a")
    async with fast_admin(cluster) as admin:
        assert await admin.list_topics() == ["a", "b"]
        del cluster.topics["b"]
        assert await admin.list_topics() == ["a"]


async def test_describe_topics_reports_leaders_replicas_and_isr(cluster):
    cluster.create_topic("t", partitions=2, replication_factor=3)
    cluster.move_leader("t", 1, 3)
    async with fast_admin(cluster) as admin:
        (desc,) = await admin.describe_topics(["t"])
        assert desc.name == "t" and desc.replication_factor == 3
        p0, p1 = desc.partitions
        assert (p0.partition, p0.leader, p0.leader_epoch, p0.replicas, p0.isr) == (
            0,
            1,
            0,
            (1, 2, 3),
            (1, 2, 3),
        )
        assert (p1.leader, p1.leader_epoch) == (3, 1)
        await cluster.stop_broker(2)
        (desc,) = await admin.describe_topics(["t"])
        assert desc.partitions[0].isr == (1, 3)
        assert desc.partitions[0].offline_replicas == (2,)
        assert [d.name for d in await admin.describe_topics()] == ["t"]


async def test_describe_an_unknown_topic_raises(cluster):
    async with fast_admin(cluster) as admin:
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.describe_topics(["nope"])


async def test_describe_cluster_lists_brokers_and_the_controller(cluster):
    cluster.controller_id = 2
    async with fast_admin(cluster) as admin:
        desc = await admin.describe_cluster()
    assert [b.node_id for b in desc.brokers] == [1, 2, 3]
    assert desc.controller_id == 2
    assert desc.controller is not None and desc.controller.port == cluster.ports[2]


async def test_an_unreachable_bootstrap_server_is_skipped(cluster):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    admin = Admin(f"127.0.0.1:{dead},{cluster.bootstrap}")
    try:
        assert [b.node_id for b in (await admin.describe_cluster()).brokers] == [1, 2, 3]
    finally:
        await admin.close()


# --- create_partitions ---------------------------------------------------------------------------


async def test_create_partitions_goes_to_the_controller_with_kafkas_fields(cluster):
    cluster.controller_id = 2
    cluster.create_topic("t", partitions=3, replication_factor=2)
    cluster.create_topic("u", partitions=1, replication_factor=2)
    async with fast_admin(cluster) as admin:
        await admin.create_partitions(
            {"t": NewPartitions(5), "u": NewPartitions.increase_to(2, [[3, 1]])}, timeout_ms=1500
        )
    ((broker, request),) = cluster.requests_of(m.CreatePartitionsRequest)
    assert broker == 2 and request.timeout_ms == 1500 and not request.validate_only
    assert request.topics == [
        m.CreatePartitionsTopic("t", 5, None),
        m.CreatePartitionsTopic("u", 2, [[3, 1]]),
    ]
    assert sorted(cluster.topics["t"]) == [0, 1, 2, 3, 4]
    assert cluster.topics["u"][1].replicas == [3, 1]


async def test_create_partitions_validate_only_changes_nothing(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=1)
    async with fast_admin(cluster) as admin:
        await admin.create_partitions({"t": NewPartitions(4)}, validate_only=True)
    (_, request), *_ = cluster.requests_of(m.CreatePartitionsRequest)
    assert request.validate_only and len(cluster.topics["t"]) == 1


async def test_create_partitions_retries_at_the_new_controller(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=1)
    async with fast_admin(cluster) as admin:
        await admin.describe_cluster()  # learns controller 1
        cluster.controller_id = 3
        await admin.create_partitions({"t": NewPartitions(2)})
    assert [b for b, _ in cluster.requests_of(m.CreatePartitionsRequest)] == [1, 3]
    assert len(cluster.topics["t"]) == 2


async def test_create_partitions_errors_are_kafkas_exceptions(cluster):
    cluster.create_topic("t", partitions=3, replication_factor=2)
    async with fast_admin(cluster) as admin:
        with pytest.raises(UnknownTopicOrPartitionError, match="The topic 'nope' does not exist"):
            await admin.create_partitions({"nope": NewPartitions(2)})
        with pytest.raises(InvalidPartitionsError) as err:
            await admin.create_partitions({"t": NewPartitions(2)})
        assert str(err.value) == (
            "INVALID_PARTITIONS: Topic currently has 3 partitions, which is higher than the "
            "requested 2."
        )
        with pytest.raises(ExceptionGroup) as group:
            await admin.create_partitions(
                {"t": NewPartitions(4, [[1, 9]]), "nope": NewPartitions(1)}
            )
        errors = group.value.exceptions
        assert [type(e) for e in errors] == [
            InvalidReplicaAssignmentError,
            UnknownTopicOrPartitionError,
        ]
        assert errors[0].code == ErrorCode.INVALID_REPLICA_ASSIGNMENT == 39

        def queued_for_deletion(broker_id, request):
            return m.CreatePartitionsResponse(
                [
                    m.TopicResult(
                        "t", ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion."
                    )
                ]
            )

        cluster.inject(m.CreatePartitionsRequest, queued_for_deletion)
        with pytest.raises(InvalidTopicError, match="queued for deletion"):
            await admin.create_partitions({"t": NewPartitions(4)})
    assert len(cluster.topics["t"]) == 3
