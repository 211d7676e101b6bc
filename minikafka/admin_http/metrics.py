"""Prometheus metrics of one broker, named as Kafka's JMX metrics come out of the Prometheus
JMX exporter (`kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions` →
`kafka_server_replicamanager_underreplicatedpartitions`), so that dashboards and alerts
written for Kafka read them. Kafka's meters (`...PerSec`) are counters here (`..._total`):
take `rate()` of them. A few gauges Kafka has no metric for (the high watermark, each
follower's LEO on the leader) are named `minikafka_...`.

Everything is read from the broker's state when scraped (the collector runs on the event
loop, in the request handler), so nothing is kept twice and no hot path pays for metrics
beyond the counts it already keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from minikafka import __version__
from minikafka.replication.partition import Partition
from minikafka.server.broker_topic_stats import COUNTER_NAMES

if TYPE_CHECKING:
    from minikafka.server.broker import KafkaServer

# BrokerTopicStats field → Kafka's meter name in BrokerTopicMetrics.
TOPIC_METERS: dict[str, tuple[str, str]] = {
    "messages_in": ("messagesin", "Records appended by produce requests"),
    "bytes_in": ("bytesin", "Record bytes appended by produce requests"),
    "bytes_out": ("bytesout", "Record bytes sent to consumers"),
    "replication_bytes_in": ("replicationbytesin", "Record bytes appended by replica fetchers"),
    "replication_bytes_out": ("replicationbytesout", "Record bytes sent to followers"),
    "total_produce_requests": ("totalproducerequests", "Produce requests, per partition"),
    "failed_produce_requests": ("failedproducerequests", "Failed produce requests, per partition"),
    "total_fetch_requests": ("totalfetchrequests", "Fetch requests, per partition"),
    "failed_fetch_requests": ("failedfetchrequests", "Failed fetch requests, per partition"),
}
assert set(TOPIC_METERS) == set(COUNTER_NAMES), "every BrokerTopicStats counter is exported"


@dataclass(frozen=True)
class IsrHealth:
    """How a led partition's ISR stands against its replicas and min.insync.replicas."""

    under_replicated: bool
    under_min_isr: bool
    at_min_isr: bool

    @classmethod
    def of(cls, p: Partition) -> IsrHealth:
        isr, min_isr = len(p.isr), p.log.config.min_insync_replicas
        return cls(isr < len(p.assigned_replicas), isr < min_isr, isr == min_isr)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


class BrokerCollector(Collector):
    def __init__(self, server: KafkaServer) -> None:
        self._server = server

    def collect(self) -> Iterable[Metric]:
        server = self._server
        yield from self._broker(server)
        yield from self._replica_manager(server)
        yield from self._topics(server)
        yield from self._controller(server)
        yield from self._partitions(server)

    def _broker(self, server: KafkaServer) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "minikafka_broker_info", "This broker's id and version", labels=["broker_id", "version"]
        )
        info.add_metric([str(server.broker_id), __version__], 1)
        yield info
        yield _gauge(
            "minikafka_broker_epoch",
            "The czxid of this broker's registration in ZooKeeper (-1 when not registered)",
            server.broker_epoch,
        )
        yield _gauge(
            "minikafka_zookeeper_connected",
            "1 while this broker has a ZooKeeper session, else 0",
            1 if server.zk.connected else 0,
        )
        yield _counter(
            "kafka_server_sessionexpirelistener_zookeeperexpires",
            "ZooKeeper sessions of this broker that expired",
            server.zk_session_expirations,
        )

    def _replica_manager(self, server: KafkaServer) -> Iterator[Metric]:
        rm = server.replica_manager
        leaders = rm.leader_partitions()
        health = [IsrHealth.of(p) for p in leaders]
        prefix = "kafka_server_replicamanager_"
        yield _gauge(prefix + "partitioncount", "Replicas on this broker", len(rm.partitions))
        yield _gauge(prefix + "leadercount", "Partitions this broker leads", len(leaders))
        yield _gauge(
            prefix + "underreplicatedpartitions",
            "Led partitions whose ISR is smaller than their replica set",
            sum(h.under_replicated for h in health),
        )
        yield _gauge(
            prefix + "underminisrpartitioncount",
            "Led partitions whose ISR is below min.insync.replicas",
            sum(h.under_min_isr for h in health),
        )
        yield _gauge(
            prefix + "atminisrpartitioncount",
            "Led partitions whose ISR is exactly min.insync.replicas",
            sum(h.at_min_isr for h in health),
        )
        yield _counter(prefix + "isrshrinks", "ISR shrinks written by this leader", rm.isr_shrinks)
        yield _counter(prefix + "isrexpands", "ISR expands written by this leader", rm.isr_expands)
        yield _counter(
            prefix + "failedisrupdates",
            "ISR writes that lost to a concurrent change of the state znode",
            rm.failed_isr_updates,
        )

    def _topics(self, server: KafkaServer) -> Iterator[Metric]:
        stats = sorted(server.replica_manager.topic_stats.topics.items())
        for field, (meter, doc) in TOPIC_METERS.items():
            family = CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{meter}", doc, labels=["topic"]
            )
            for topic, s in stats:
                family.add_metric([topic], getattr(s, field))
            yield family

    def _controller(self, server: KafkaServer) -> Iterator[Metric]:
        controller = server.controller
        active = controller is not None and controller.is_active
        ctx = controller.context if controller is not None and active else None
        prefix = "kafka_controller_kafkacontroller_"
        yield _gauge(prefix + "activecontrollercount", "1 on the active controller", int(active))
        # Kafka reports the cluster-wide gauges on the active controller only (0 elsewhere).
        yield _gauge(
            prefix + "offlinepartitionscount",
            "Partitions without a live leader (active controller only)",
            0 if ctx is None else ctx.offline_partition_count(),
        )
        yield _gauge(
            prefix + "preferredreplicaimbalancecount",
            "Partitions not led by their preferred replica (active controller only)",
            0 if ctx is None else ctx.preferred_replica_imbalance_count(),
        )
        yield _gauge(
            prefix + "globaltopiccount",
            "Topics in the cluster (active controller only)",
            0 if ctx is None else len(ctx.all_topics),
        )
        yield _gauge(
            prefix + "globalpartitioncount",
            "Partitions in the cluster (active controller only)",
            0 if ctx is None else len(ctx.partition_leadership),
        )
        yield _counter(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "Unclean leader elections run by this broker as controller",
            0 if controller is None else controller.context.unclean_leader_elections,
        )

    def _partitions(self, server: KafkaServer) -> Iterator[Metric]:
        tp_labels = ["topic", "partition"]
        log_gauges: dict[str, tuple[str, Callable[[Partition], int]]] = {
            "kafka_log_log_logendoffset": ("Log end offset (LEO)", lambda p: p.log_end_offset),
            "kafka_log_log_logstartoffset": (
                "Log start offset",
                lambda p: p.log.log_start_offset,
            ),
            "kafka_log_log_size": ("Bytes in the log's segments", lambda p: p.log.size_in_bytes),
            "kafka_log_log_numlogsegments": ("Segments of the log", lambda p: len(p.log.segments)),
            "minikafka_partition_highwatermark": (
                "This replica's high watermark (a follower's trails its leader's)",
                lambda p: p.high_watermark,
            ),
            "minikafka_partition_leaderepoch": (
                "Leader epoch this replica is in",
                lambda p: p.leader_epoch,
            ),
        }
        partitions = sorted(server.replica_manager.partitions.items())
        for name, (doc, value) in log_gauges.items():
            family = GaugeMetricFamily(name, doc, labels=tp_labels)
            for tp, p in partitions:
                family.add_metric([tp.topic, str(tp.partition)], value(p))
            yield family

        # Kafka's per-partition gauges of kafka.cluster:type=Partition, on the leader only.
        led = [(tp, p) for tp, p in partitions if p.is_leader]
        cluster = {
            "underreplicated": "1 if the ISR is smaller than the replica set",
            "underminisr": "1 if the ISR is below min.insync.replicas",
            "atminisr": "1 if the ISR is exactly min.insync.replicas",
            "insyncreplicascount": "Replicas in the ISR",
            "replicascount": "Assigned replicas",
        }
        families = {
            k: GaugeMetricFamily(f"kafka_cluster_partition_{k}", doc, labels=tp_labels)
            for k, doc in cluster.items()
        }
        now = server.clock.now_ms()
        follower_leo = GaugeMetricFamily(
            "minikafka_replica_logendoffset",
            "Each replica's LEO as its leader last saw it (on the leader)",
            labels=[*tp_labels, "replica"],
        )
        caught_up_age = GaugeMetricFamily(
            "minikafka_replica_lastcaughtupagems",
            "Milliseconds since each replica last caught up with the leader's LEO, the clock "
            "of ISR shrinking (on the leader; -1: not since this leadership began)",
            labels=[*tp_labels, "replica"],
        )
        for tp, p in led:
            labels = [tp.topic, str(tp.partition)]
            h = IsrHealth.of(p)
            families["underreplicated"].add_metric(labels, int(h.under_replicated))
            families["underminisr"].add_metric(labels, int(h.under_min_isr))
            families["atminisr"].add_metric(labels, int(h.at_min_isr))
            families["insyncreplicascount"].add_metric(labels, len(p.isr))
            families["replicascount"].add_metric(labels, len(p.assigned_replicas))
            for r in p.replica_states(now):
                follower_leo.add_metric([*labels, str(r.broker_id)], r.log_end_offset)
                caught_up_age.add_metric([*labels, str(r.broker_id)], r.last_caught_up_ms_ago)
        yield from families.values()
        yield follower_leo
        yield caught_up_age


def broker_registry(server: KafkaServer) -> CollectorRegistry:
    """A registry of this broker's metrics only (not the process-wide default one, so that
    several brokers in one process, as in tests, each export their own)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(server))
    return registry
