"""Dynamic broker configs (KIP-226) through an unmodified Kafka client (confluent-kafka's
AdminClient) on real brokers: the cluster-wide default (`/config/brokers/<default>`, the
BROKER resource named "", which kafka-configs.sh `--entity-default` sends and the Python
clients cannot name, so it goes over the raw protocol) and one broker's own (`/config/brokers/<id>`) are written in
Kafka's ZooKeeper layout, described with their sources and synonyms, put in force by every
broker without a restart (a leader refuses a batch over a lowered `message.max.bytes`),
replaced whole by AlterConfigs, read again by a broker that restarts, and enabling
`unclean.leader.election.enable` cluster-wide elects a leader for an offline partition."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.kafka_protocol.test_topic_configs import leader, send
from tests.kafka_protocol.wire import KafkaWire

pytestmark = pytest.mark.timeout(300)

SET = AlterConfigOpType.SET
DELETE = AlterConfigOpType.DELETE


def describe(admin: AdminClient, broker: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.BROKER, broker)
    return dict(admin.describe_configs([resource])[resource].result(timeout=30))


def alter(admin: AdminClient, broker: str, *entries: ConfigEntry) -> None:
    resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=list(entries))
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def alter_default(
    cluster: LocalCluster, name: str, value: str | None, op: int, broker: int = 1
) -> None:
    """IncrementalAlterConfigs of the BROKER resource "" (the cluster default), as
    kafka-configs.sh --entity-type brokers --entity-default sends it."""
    request = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(4),
                resource_name="",
                configs=(AlterableConfig(name=name, config_operation=i8(op), value=value),),
            ),
        ),
        validate_only=False,
    )
    with KafkaWire(*cluster.broker_address(broker)) as wire:
        (response,) = wire.call(request).responses
    assert response.error_code == 0, response.error_message


def describe_raw(
    cluster: LocalCluster, resource_name: str, broker: int
) -> dict[str, tuple[str | None, int, list[tuple[str | None, int]]]]:
    """DescribeConfigs v4 of a BROKER resource sent to `broker`: each config's value, source
    and synonyms (confluent-kafka keeps one synonym per name, and a broker config's
    synonyms at its several layers share the name)."""
    request = DescribeConfigsRequest(
        resources=(DescribeConfigsResource(resource_type=i8(4), resource_name=resource_name),),
        include_synonyms=True,
        include_documentation=True,
    )
    with KafkaWire(*cluster.broker_address(broker)) as wire:
        (result,) = wire.call(request).results
    assert result.error_code == 0, result.error_message
    return {
        c.name: (c.value, c.config_source, [(s.value, s.source) for s in c.synonyms])
        for c in result.configs
    }


def in_force(admin: AdminClient, broker: int, name: str) -> tuple[str | None, int]:
    entry = describe(admin, str(broker))[name]
    return entry.value, entry.source


def test_broker_configs_change_at_runtime_for_one_broker_and_for_all(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    zk = cluster.zk_client()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("dyn", 1, 3)])["dyn"].result(timeout=60)
    wait_until(lambda: leader(cluster, "dyn") > 0, 60, "a leader for dyn")
    assert send(bootstrap, "dyn", 5000) is None

    # Cluster-wide: every broker takes the default at once.
    alter_default(cluster, "message.max.bytes", "2000", SET.value)
    assert zk.get_broker_config("<default>") == {"message.max.bytes": "2000"}
    raw = zk.get_data("/config/brokers/<default>")
    assert raw is not None and json.loads(raw) == {
        "version": 1,
        "config": {"message.max.bytes": "2000"},
    }
    dynamic_default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    for b in cluster.broker_ids:
        wait_until(
            lambda b=b: in_force(admin, b, "message.max.bytes") == ("2000", dynamic_default),
            30,
            f"broker {b} with the cluster default",
        )
    error = send(bootstrap, "dyn", 5000)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert describe_raw(cluster, "", cluster.broker_ids[-1]) == {
        "message.max.bytes": ("2000", dynamic_default, [("2000", dynamic_default)])
    }

    # One broker's own config wins over the default, on that broker only.
    lead = leader(cluster, "dyn")
    alter(admin, str(lead), ConfigEntry("message.max.bytes", "10000", incremental_operation=SET))
    dynamic_broker = ConfigSource.DYNAMIC_BROKER_CONFIG.value
    wait_until(
        lambda: in_force(admin, lead, "message.max.bytes") == ("10000", dynamic_broker),
        30,
        "the leader with its own value",
    )
    assert not describe(admin, str(lead))["message.max.bytes"].is_read_only
    assert describe_raw(cluster, str(lead), lead)["message.max.bytes"] == (
        "10000",
        dynamic_broker,
        [
            ("10000", dynamic_broker),
            ("2000", dynamic_default),
            ("1048588", ConfigSource.DEFAULT_CONFIG.value),
        ],
    )
    other = next(b for b in cluster.broker_ids if b != lead)
    assert in_force(admin, other, "message.max.bytes") == ("2000", dynamic_default)
    assert send(bootstrap, "dyn", 5000) is None

    # AlterConfigs (the older API) replaces the broker's dynamic configs whole: its own
    # message.max.bytes is gone, the cluster default is in force again.
    resource = ConfigResource(ResourceType.BROKER, str(lead), set_config={"log.roll.ms": "600000"})
    with pytest.warns(DeprecationWarning):  # confluent-kafka's word for the older API
        admin.alter_configs([resource])[resource].result(timeout=30)
    assert zk.get_broker_config(str(lead)) == {"log.roll.ms": "600000"}
    wait_until(
        lambda: in_force(admin, lead, "message.max.bytes") == ("2000", dynamic_default),
        30,
        "the leader back on the cluster default",
    )
    error = send(bootstrap, "dyn", 5000)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE

    # A restarted broker reads its dynamic configs before it serves anything.
    cluster.restart(lead)
    assert in_force(admin, lead, "log.roll.ms") == ("600000", dynamic_broker)
    assert in_force(admin, lead, "message.max.bytes") == ("2000", dynamic_default)

    # Deleting the default puts server.properties' value back everywhere.
    alter_default(cluster, "message.max.bytes", None, DELETE.value)
    for b in cluster.broker_ids:
        wait_until(
            lambda b=b: in_force(admin, b, "message.max.bytes")[1] != dynamic_default,
            30,
            f"broker {b} without the default",
        )
    wait_until(lambda: leader(cluster, "dyn") > 0, 60, "a leader for dyn")
    assert send(bootstrap, "dyn", 5000) is None


def test_enabling_unclean_election_cluster_wide_elects_a_leader_for_an_offline_partition(
    make_cluster: ClusterFactory,
) -> None:
    cluster: LocalCluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    zk = cluster.zk_client()
    tp = TopicPartition("offline", 0)
    first, second = 1, 2
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("offline", 1, replica_assignment=[[first, second]])])[
        "offline"
    ].result(timeout=60)

    def state() -> tuple[int, list[int]]:
        st = zk.get_partition_state(tp)
        return (-1, []) if st is None else (st.leader, list(st.isr))

    wait_until(lambda: state() == (first, [first, second]), 60, "both replicas in sync")
    cluster.kill(second)
    wait_until(lambda: state() == (first, [first]), 60, "the ISR without the second replica")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    errors: list[Any] = []
    producer.produce("offline", b"x", partition=0, on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(30) == 0 and errors == [None]
    cluster.kill(first)
    wait_until(lambda: state()[0] == -1, 60, "the partition offline")
    cluster.restart(second)
    # Back, but out of the ISR: with unclean elections off, the partition stays offline.
    wait_until(
        lambda: second in admin.list_topics(timeout=10).brokers, 30, "the second broker live"
    )
    assert state() == (-1, [first])

    alter_default(cluster, "unclean.leader.election.enable", "true", SET.value, broker=3)
    wait_until(lambda: state() == (second, [second]), 60, "an unclean election of the second")
