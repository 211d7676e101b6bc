"""auto.create.topics.enable (Kafka's default: true) on a real cluster, seen by a real Kafka
client (confluent-kafka): a producer's or consumer's metadata request for a topic that does
not exist creates it with num.partitions and default.replication.factor; an admin client's
never does; with it off (or a client that does not allow it) the brokers answer that the
topic does not exist, so the project's tools (the CLI, `wait_for_topic`) fail at once,
naming the topic, instead of waiting max.block.ms."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection

from minikafka.client.librdkafka import TopicUnavailableError, wait_for_topic
from tests.cluster.conftest import ClusterFactory
from tests.cluster.helpers import admin_client, consuming, deliver, producing, run_cli

pytestmark = pytest.mark.timeout(180)


def test_producing_to_a_new_topic_creates_it_with_the_broker_defaults(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"num.partitions": "2", "default.replication.factor": "2"})
    admin = admin_client(cluster.bootstrap_servers)
    # An admin client's metadata request never creates the topic it asks about.
    with pytest.raises(KafkaException) as unknown:
        admin.describe_topics(TopicCollection(["fresh"]))["fresh"].result(timeout=30)
    assert unknown.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "fresh" not in admin.list_topics(timeout=30).topics
    assert not cluster.zk_client().topic_exists("fresh")
    with producing(cluster.bootstrap_servers) as producer:
        (md,) = deliver(producer, "fresh", [b"first"])
    assert md.topic() == "fresh" and md.offset() == 0
    desc = admin.describe_topics(TopicCollection(["fresh"]))["fresh"].result(timeout=30)
    assert len(desc.partitions) == 2
    assert all(len(p.replicas) == 2 for p in desc.partitions)
    assert cluster.zk_client().topic_exists("fresh")

    # A consumer creates the topic it is assigned too (allow.auto.create.topics=true),
    # unless it says not to (librdkafka's default for a consumer).
    with consuming(cluster.bootstrap_servers, {"allow.auto.create.topics": True}) as consumer:
        meta = wait_for_topic(consumer, "by-consumer", 60, auto_create=True)
        assert sorted(meta.partitions) == [0, 1]
    with (
        consuming(cluster.bootstrap_servers, {"allow.auto.create.topics": False}) as consumer,
        pytest.raises(TopicUnavailableError, match="not-by-consumer does not"),
    ):
        wait_for_topic(consumer, "not-by-consumer", 60, auto_create=False)
    assert not cluster.zk_client().topic_exists("not-by-consumer")


def test_with_auto_create_off_a_missing_topic_fails_at_once_naming_it(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"auto.create.topics.enable": "false"})
    # A producer (allow.auto.create.topics: librdkafka's default for one) asks, and is told
    # the topic does not exist: at once, not after max.block.ms (60 s here).
    with producing(cluster.bootstrap_servers) as producer:
        asked = time.monotonic()
        with pytest.raises(TopicUnavailableError) as e:
            wait_for_topic(producer, "ghost-topic", 60, auto_create=True)
        assert time.monotonic() - asked < 30
    assert "ghost-topic does not exist" in str(e.value)
    assert "auto.create.topics.enable is false" in str(e.value)
    assert not cluster.zk_client().topic_exists("ghost-topic")

    # The CLI: one error naming the topic (not max.block.ms's timeout), and nothing sent.
    result = run_cli(
        "produce",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--topic",
        "ghost-topic",
        stdin="a\nb\nc\n",
    )
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "ghost-topic does not exist" in errors[0], result.stderr
    assert errors[0].endswith("stopped at line 1: nothing sent")


def test_a_default_replication_factor_above_the_live_brokers_is_reported(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(brokers=1, overrides={"default.replication.factor": "2"})
    # The brokers' answer to a producer's metadata request: INVALID_REPLICATION_FACTOR for
    # the topic, which they could not create.
    with producing(cluster.bootstrap_servers) as producer:
        with pytest.raises(TopicUnavailableError) as e:
            wait_for_topic(producer, "too-wide", 60, auto_create=True)
        assert producer.list_topics("too-wide", timeout=30).topics["too-wide"].error.code() == (
            KafkaError.INVALID_REPLICATION_FACTOR
        )
    assert "too-wide: INVALID_REPLICATION_FACTOR" in str(e.value)
    assert not cluster.zk_client().topic_exists("too-wide")
