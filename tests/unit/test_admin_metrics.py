"""Pure pieces behind the admin endpoint: the topic counters, the controller's cluster-wide
counts, and the `admin.listeners` setting."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.admin_http.metrics import (
    BrokerSnapshot,
    CleanerSnapshot,
    ControllerSnapshot,
    LedPartition,
    PartitionSnapshot,
    render,
)
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig, parse_admin_listener
from minikafka.controller.context import ControllerContext
from minikafka.protocol.errors import InvalidConfigError
from minikafka.replication.broker_topic_stats import BrokerTopicStats, TopicStats
from minikafka.rpc.messages import ReplicaState
from minikafka.zk.codecs import BrokerInfo


def test_topic_stats_count_produce_fetch_and_replication_per_topic() -> None:
    stats = BrokerTopicStats()
    stats.record_produce("a", records=16, size=1000)
    stats.record_produce("a", records=4, size=300)
    stats.record_failed_produce("a")
    stats.record_fetch("a", 700, failed=False, to_follower=False)
    stats.record_fetch("a", 900, failed=False, to_follower=True)
    stats.record_fetch("a", 0, failed=True, to_follower=False)
    stats.record_replication_in("b", 512)
    a, b = stats.topic("a"), stats.topic("b")
    assert (a.messages_in, a.bytes_in) == (20, 1300)
    assert (a.total_produce_requests, a.failed_produce_requests) == (3, 1)
    assert (a.bytes_out, a.replication_bytes_out) == (700, 900)
    assert (a.total_fetch_requests, a.failed_fetch_requests) == (3, 1)
    assert (b.replication_bytes_in, b.messages_in) == (512, 0)
    stats.remove("a")
    assert sorted(stats.topics) == ["b"]
    stats.remove("never-seen")  # nothing to remove is fine


def test_controller_counts_offline_and_imbalanced_partitions() -> None:
    ctx = ControllerContext()
    ctx.add_live_brokers([BrokerInfo(1, "h", 1), BrokerInfo(2, "h", 2)])
    ctx.set_assignment("t", {0: (1, 2), 1: (2, 1), 2: (3, 1), 3: (1, 2)})
    ctx.set_assignment("gone", {0: (3, 1)})
    leadership = {
        TopicPartition("t", 0): LeaderAndIsr(1, 0, (1, 2), 1),  # preferred, online
        TopicPartition("t", 1): LeaderAndIsr(1, 1, (1,), 1),  # not preferred, online
        TopicPartition("t", 2): LeaderAndIsr(3, 0, (3,), 1),  # leader 3 is not live
        TopicPartition("t", 3): LeaderAndIsr(-1, 2, (1,), 1),  # no leader
        TopicPartition("gone", 0): LeaderAndIsr(3, 0, (3,), 1),  # queued for deletion
    }
    ctx.partition_leadership.update(leadership)
    ctx.topics_to_be_deleted.add("gone")
    assert ctx.offline_partition_count() == 2
    # t-1 (leader 1, preferred 2) and t-3 (no leader); t-2's leader is its preferred one.
    assert ctx.preferred_replica_imbalance_count() == 2
    # A broker shutting down still leads until it is moved off: not offline.
    ctx.shutting_down_broker_ids.add(1)
    assert ctx.offline_partition_count() == 2


def test_admin_listener_setting() -> None:
    assert parse_admin_listener("http://127.0.0.1:9644") == ("127.0.0.1", 9644)
    assert parse_admin_listener("http://:0") == ("", 0)
    for bad in ("PLAINTEXT://:9092", "http://host", "127.0.0.1:9644"):
        with pytest.raises(ValueError, match="expected http://host:port"):
            parse_admin_listener(bad)
    props = {"broker.id": "1", "admin.listeners": "http://0.0.0.0:9644"}
    assert BrokerConfig.from_properties(props).admin_listeners == "http://0.0.0.0:9644"
    assert BrokerConfig.from_properties({"broker.id": "1"}).admin_listeners is None
    with pytest.raises(InvalidConfigError, match=r"admin\.listeners"):
        BrokerConfig.from_properties({"broker.id": "1", "admin.listeners": "tcp://x:1"})


def parse(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


def snapshot(controller: ControllerSnapshot | None) -> BrokerSnapshot:
    states = [ReplicaState(1, 10, 0, True), ReplicaState(2, 7, 4500, False)]
    return BrokerSnapshot(
        broker_id=1,
        broker_epoch=42,
        zk_connected=True,
        zk_expirations=2,
        isr_shrinks=3,
        isr_expands=1,
        failed_isr_updates=0,
        unclean_leader_elections=0,
        controller=controller,
        topic_stats={"t": TopicStats(messages_in=10, bytes_in=999)},
        partitions=[
            # Led, an ISR of 1 out of 3 replicas (2 is behind): under-replicated, and at
            # min.insync.replicas (1).
            PartitionSnapshot("t", 0, 10, 0, 2048, 1, 7, 3, LedPartition(1, 3, 1, states)),
            PartitionSnapshot("t", 1, 5, 2, 512, 2, 5, 4, None),  # followed
        ],
        cleaner=CleanerSnapshot(2, 90, 4096, 0.25, 1.5, 0.6),
    )


def test_render_exports_kafka_names_with_leader_only_and_controller_only_values() -> None:
    m = parse(render(snapshot(None)))
    tp0, tp1 = (("partition", "0"), ("topic", "t")), (("partition", "1"), ("topic", "t"))
    assert m[("minikafka_broker_info", (("broker_id", "1"), ("version", "0.1.0")))] == 1
    assert m[("minikafka_broker_epoch", ())] == 42
    assert m[("kafka_server_sessionexpirelistener_zookeeperexpires_total", ())] == 2
    assert m[("kafka_server_replicamanager_partitioncount", ())] == 2
    assert m[("kafka_server_replicamanager_leadercount", ())] == 1
    assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 1
    assert m[("kafka_server_replicamanager_underminisrpartitioncount", ())] == 0
    assert m[("kafka_server_replicamanager_atminisrpartitioncount", ())] == 1
    assert m[("kafka_server_replicamanager_isrshrinks_total", ())] == 3
    assert m[("kafka_server_replicamanager_isrexpands_total", ())] == 1
    assert m[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", "t"),))] == 10
    assert m[("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "t"),))] == 999
    assert m[("kafka_server_brokertopicmetrics_bytesout_total", (("topic", "t"),))] == 0
    # Every replica: its log and its own HW.
    assert m[("kafka_log_log_logendoffset", tp1)] == 5
    assert m[("kafka_log_log_logstartoffset", tp1)] == 2
    assert m[("kafka_log_log_numlogsegments", tp1)] == 2
    assert m[("kafka_log_log_size", tp0)] == 2048
    assert m[("minikafka_partition_highwatermark", tp0)] == 7
    assert m[("minikafka_partition_leaderepoch", tp1)] == 4
    # The leader's partition gauges and its view of each replica; none for the follower.
    assert m[("kafka_cluster_partition_underreplicated", tp0)] == 1
    assert m[("kafka_cluster_partition_insyncreplicascount", tp0)] == 1
    assert m[("kafka_cluster_partition_replicascount", tp0)] == 3
    assert ("kafka_cluster_partition_underreplicated", tp1) not in m
    replica_2 = (("partition", "0"), ("replica", "2"), ("topic", "t"))
    assert m[("minikafka_replica_logendoffset", replica_2)] == 7
    assert m[("minikafka_replica_lastcaughtupagems", replica_2)] == 4500
    # The log cleaner, under Kafka's names.
    assert m[("kafka_log_logcleaner_cleaner_recopy_percent", ())] == 25
    assert m[("kafka_log_logcleaner_max_clean_time_secs", ())] == 1.5
    assert m[("kafka_log_logcleanermanager_max_dirty_percent", ())] == 60
    assert m[("minikafka_log_cleaner_passes_total", ())] == 2
    assert m[("minikafka_log_cleaner_records_removed_total", ())] == 90
    assert not any(
        name.startswith("minikafka_replica_") and ("partition", "1") in labels for name, labels in m
    )
    # Not the controller: the cluster-wide gauges are 0, as Kafka reports them.
    assert m[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 0
    assert m[("kafka_controller_kafkacontroller_globalpartitioncount", ())] == 0


def test_render_on_the_active_controller() -> None:
    m = parse(render(snapshot(ControllerSnapshot(1, 2, 3, 40))))
    assert m[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1
    assert m[("kafka_controller_kafkacontroller_offlinepartitionscount", ())] == 1
    assert m[("kafka_controller_kafkacontroller_preferredreplicaimbalancecount", ())] == 2
    assert m[("kafka_controller_kafkacontroller_globaltopiccount", ())] == 3
    assert m[("kafka_controller_kafkacontroller_globalpartitioncount", ())] == 40
