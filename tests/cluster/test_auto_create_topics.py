"""auto.create.topics.enable (Kafka's default: true) on a real cluster: a producer's or
consumer's metadata request for a topic that does not exist creates it with num.partitions
and default.replication.factor; an admin client's never does; with it off (or a client that
does not allow it) the client fails at once, naming the topic, instead of waiting
max.block.ms."""

from __future__ import annotations

import pytest

from minikafka.client import SyncAdmin, SyncConsumer, SyncProducer
from minikafka.protocol.errors import (
    InvalidReplicationFactorError,
    UnknownTopicOrPartitionError,
)
from tests.cluster.conftest import ClusterFactory
from tests.cluster.helpers import run_cli

pytestmark = pytest.mark.timeout(180)


def test_producing_to_a_new_topic_creates_it_with_the_broker_defaults(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"num.partitions": "2", "default.replication.factor": "2"})
    with SyncAdmin(cluster.bootstrap_servers) as admin:
        # An admin client's metadata request never creates the topic it asks about.
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_topics(["fresh"])
        assert "fresh" not in admin.list_topics()
    with SyncProducer(cluster.bootstrap_servers, acks="all") as producer:
        md = producer.send("fresh", b"first").result(timeout=60)
    assert md.topic == "fresh" and md.offset == 0
    with SyncAdmin(cluster.bootstrap_servers) as admin:
        (desc,) = admin.describe_topics(["fresh"])
    assert len(desc.partitions) == 2
    assert all(len(p.replicas) == 2 for p in desc.partitions)
    assert cluster.zk_client().topic_exists("fresh")

    # A consumer creates the topic it is assigned too (allow.auto.create.topics=true),
    # unless it says not to.
    with SyncConsumer(cluster.bootstrap_servers) as consumer:
        assert consumer.partitions_for("by-consumer") == [0, 1]
    consumer = SyncConsumer(cluster.bootstrap_servers, allow_auto_create_topics=False)
    with consumer, pytest.raises(UnknownTopicOrPartitionError, match="not-by-consumer does not"):
        consumer.partitions_for("not-by-consumer")
    assert not cluster.zk_client().topic_exists("not-by-consumer")


def test_with_auto_create_off_a_missing_topic_fails_at_once_naming_it(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"auto.create.topics.enable": "false"})
    with SyncProducer(cluster.bootstrap_servers, max_block_ms=60_000) as producer:
        fut = producer.send("ghost-topic", b"x")
        # An UnknownTopicOrPartitionError, not the KafkaTimeoutError of max.block.ms.
        with pytest.raises(UnknownTopicOrPartitionError) as e:
            fut.result(timeout=60)
    assert "ghost-topic does not exist" in str(e.value)
    assert "auto.create.topics.enable is false" in str(e.value)
    assert not cluster.zk_client().topic_exists("ghost-topic")

    # The CLI: one error naming the topic (not max.block.ms's timeout), every unsent
    # record reported.
    result = run_cli(
        "produce",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--topic",
        "ghost-topic",
        stdin="a\nb\nc\n",
    )
    assert result.returncode == 1, result.stderr
    assert "ghost-topic does not exist" in result.stderr
    assert "3 of 3 records were not sent" in result.stderr


def test_a_default_replication_factor_above_the_live_brokers_is_reported(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(brokers=1, overrides={"default.replication.factor": "2"})
    producer = SyncProducer(cluster.bootstrap_servers)
    with producer, pytest.raises(InvalidReplicationFactorError, match="than available brokers"):
        producer.send("too-wide", b"x").result(timeout=60)
    assert not cluster.zk_client().topic_exists("too-wide")
