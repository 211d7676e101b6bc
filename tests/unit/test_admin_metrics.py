"""Pure pieces behind the admin endpoint: the topic counters, the controller's cluster-wide
counts, and the `admin.listeners` setting."""

from __future__ import annotations

import pytest

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.controller.context import ControllerContext
from minikafka.protocol.errors import InvalidConfigError
from minikafka.server.broker_topic_stats import BrokerTopicStats
from minikafka.server.config import BrokerConfig, parse_admin_listener
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
