"""Topic configs through an unmodified Kafka client (confluent-kafka's AdminClient) on real
brokers: DescribeConfigs shows every topic config with its source, IncrementalAlterConfigs
changes one, and every broker applies the change at once, without a restart: a batch over
a lowered `max.message.bytes` is refused by the leader, and by the next leader after a
kill -9, and taken again once the override is deleted."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.kafka_protocol.test_confluent_kafka import create_topic

pytestmark = pytest.mark.timeout(240)


def describe(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return dict(admin.describe_configs([resource])[resource].result(timeout=30))


def alter(admin: AdminClient, topic: str, *entries: ConfigEntry) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=list(entries))
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def send(bootstrap: str, topic: str, size: int) -> KafkaError | None:
    """Produce one record of `size` bytes with acks=all, no retries; its delivery error."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,
            "message.max.bytes": 10_000_000,
        }
    )
    errors: list[KafkaError | None] = []
    producer.produce(topic, b"x" * size, partition=0, on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(30) == 0
    return errors[0]


def leader(cluster: LocalCluster, topic: str) -> int:
    st = cluster.zk_client().get_partition_state(TopicPartition(topic, 0))
    return -1 if st is None else st.leader


def test_describe_alter_and_every_broker_applies_the_change_at_once(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"log.retention.ms": "3600000"})
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "cfg", 1, 3, **{"min.insync.replicas": "2"})
    admin = AdminClient({"bootstrap.servers": bootstrap})

    configs = describe(admin, "cfg")
    assert {
        "segment.bytes",
        "retention.ms",
        "max.message.bytes",
        "min.insync.replicas",
        "unclean.leader.election.enable",
    } <= set(configs)
    mir = configs["min.insync.replicas"]
    assert (mir.value, mir.source) == ("2", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    retention = configs["retention.ms"]  # set in server.properties
    assert (retention.value, retention.source) == (
        "3600000",
        ConfigSource.STATIC_BROKER_CONFIG.value,
    )
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not configs["segment.bytes"].is_read_only

    assert send(bootstrap, "cfg", 5000) is None
    alter(
        admin,
        "cfg",
        ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET),
    )
    assert describe(admin, "cfg")["max.message.bytes"].value == "2000"
    # Every broker took it: the leader refuses the batch now, and so does the next leader.
    wait_until(
        lambda: send(bootstrap, "cfg", 5000) is not None, 30, "the leader to apply the change"
    )
    err = send(bootstrap, "cfg", 5000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    old_leader = leader(cluster, "cfg")
    cluster.kill(old_leader)
    wait_until(lambda: leader(cluster, "cfg") not in (-1, old_leader), 60, "a new leader")
    err = send(bootstrap, "cfg", 5000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert send(bootstrap, "cfg", 500) is None

    # Deleting the override brings the broker's default back, everywhere. A new admin client:
    # the first one's connection to the killed broker (perhaps the controller it targets)
    # is dead, and librdkafka waits on it rather than failing over.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    alter(
        admin,
        "cfg",
        ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE),
    )
    described = describe(admin, "cfg")["max.message.bytes"]
    assert described.source == ConfigSource.DEFAULT_CONFIG.value
    wait_until(lambda: send(bootstrap, "cfg", 5000) is None, 30, "the default to apply again")


def test_bad_changes_are_refused_with_kafkas_errors(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "cfg", 1, 3)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    before = cluster.zk_client().get_topic_config("cfg")

    def refused(topic: str, entry: ConfigEntry) -> int:
        with pytest.raises(KafkaException) as info:
            alter(admin, topic, entry)
        return int(info.value.args[0].code())

    set_op = AlterConfigOpType.SET
    assert refused("cfg", ConfigEntry("no.such.config", "1", incremental_operation=set_op)) == (
        KafkaError.INVALID_CONFIG
    )
    assert refused(
        "cfg", ConfigEntry("min.insync.replicas", "0", incremental_operation=set_op)
    ) == (KafkaError.INVALID_CONFIG)
    assert refused("cfg", ConfigEntry("retention.ms", "soon", incremental_operation=set_op)) == (
        KafkaError.INVALID_CONFIG
    )
    append = AlterConfigOpType.APPEND
    assert refused("cfg", ConfigEntry("retention.ms", "1", incremental_operation=append)) == (
        KafkaError.INVALID_CONFIG
    )
    assert refused("nope", ConfigEntry("retention.ms", "1", incremental_operation=set_op)) == (
        KafkaError.UNKNOWN_TOPIC_OR_PART
    )
    assert cluster.zk_client().get_topic_config("cfg") == before

    # A broker config Kafka marks read-only is described as such and not changed at runtime.
    broker = ConfigResource(ResourceType.BROKER, "1")
    configs = admin.describe_configs([broker])[broker].result(timeout=30)
    assert configs["broker.id"].value == "1" and configs["broker.id"].is_read_only
    broker_change = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[ConfigEntry("broker.id", "7", incremental_operation=set_op)],
    )
    with pytest.raises(KafkaException) as info:
        admin.incremental_alter_configs([broker_change])[broker_change].result(timeout=30)
    assert info.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically: broker.id" in info.value.args[0].str()
