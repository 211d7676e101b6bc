"""Prometheus metrics of one broker, named as Kafka's JMX metrics come out of the Prometheus
JMX exporter (`kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions` →
`kafka_server_replicamanager_underreplicatedpartitions`), so that dashboards and alerts
written for Kafka read them. Kafka's meters (`...PerSec`) are counters here (`..._total`):
take `rate()` of them. A few gauges Kafka has no metric for (the high watermark, each
replica's LEO on the leader) are named `minikafka_...`.

A scrape is two steps. `take_snapshot` copies the numbers out of the broker's state, on the
event loop that owns it (plain tuples, a few microseconds per partition). `render` turns a
snapshot into the text format, a pure function run in a worker thread: with 10,000
partitions it is most of a second of work, which must not stall replication on the loop.
No hot path pays for metrics beyond the counts it already keeps.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, NamedTuple

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from minikafka import __version__
from minikafka.common import TopicPartition
from minikafka.protocol.errors import KafkaError
from minikafka.replication.broker_topic_stats import COUNTER_NAMES, TopicStats
from minikafka.rpc import messages as m
from minikafka.rpc.connection import BrokerConnection, ConnectionSecurity
from minikafka.rpc.messages import ReplicaState

if TYPE_CHECKING:
    from minikafka.server.admin_endpoint import BrokerView

log = logging.getLogger(__name__)

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
# BrokerTopicStats field → a metric Kafka has not (its full name).
MINIKAFKA_TOPIC_COUNTERS: dict[str, tuple[str, str]] = {
    "follower_bytes_out": (
        "minikafka_follower_bytes_out",
        "Record bytes sent to consumers by this broker as a follower (KIP-392's closest "
        "replica), part of bytesout",
    ),
}
assert set(TOPIC_METERS) | set(MINIKAFKA_TOPIC_COUNTERS) == set(COUNTER_NAMES), (
    "every BrokerTopicStats counter is exported"
)


# --- the snapshot (taken on the event loop) ----------------------------------------------


class LedPartition(NamedTuple):
    """What only the leader knows of a partition."""

    isr: int  # ISR size
    replicas: int  # replication factor (the assigned replicas less those being added)
    min_isr: int  # min.insync.replicas
    replica_states: list[ReplicaState]

    @property
    def under_replicated(self) -> bool:
        return self.isr < self.replicas

    @property
    def under_min_isr(self) -> bool:
        return self.isr < self.min_isr

    @property
    def at_min_isr(self) -> bool:
        return self.isr == self.min_isr


class PartitionSnapshot(NamedTuple):
    topic: str
    partition: int
    log_end_offset: int
    log_start_offset: int
    size: int
    segments: int
    high_watermark: int
    leader_epoch: int
    led: LedPartition | None  # None on a follower


@dataclass(frozen=True)
class ControllerSnapshot:
    offline_partitions: int
    preferred_replica_imbalance: int
    topics: int
    partitions: int


@dataclass(frozen=True)
class CleanerSnapshot:
    passes: int
    records_removed: int
    bytes_read: int
    last_recopy_ratio: float
    last_clean_seconds: float
    max_dirty_ratio: float


class GroupOffset(NamedTuple):
    """A committed offset of a group this broker coordinates, and the partition's log end
    as a consumer sees it (its HW, from the leader; None when the leader did not answer)."""

    group: str
    topic: str
    partition: int
    committed: int
    log_end: int | None


@dataclass(frozen=True)
class BrokerSnapshot:
    broker_id: int
    broker_epoch: int
    zk_connected: bool
    zk_expirations: int
    isr_shrinks: int
    isr_expands: int
    failed_isr_updates: int
    unclean_leader_elections: int
    controller: ControllerSnapshot | None  # None unless this broker is the active controller
    topic_stats: dict[str, TopicStats]
    partitions: list[PartitionSnapshot]  # sorted by topic, partition
    cleaner: CleanerSnapshot
    group_offsets: list[GroupOffset] = dataclass_field(default_factory=list)
    # KIP-73's throttled replication byte rates (bytes/s over the quota windows).
    leader_replication_byte_rate: float = 0.0
    follower_replication_byte_rate: float = 0.0


# How long a scrape waits for another broker's high watermarks (consumer lag).
LOG_END_TIMEOUT_S = 1.0


async def group_offsets(broker: BrokerView) -> list[GroupOffset]:
    """Committed offsets of the groups this broker coordinates, each with its partition's
    high watermark: from this broker when it leads the partition, else asked of the
    leader (internal ListOffsets, LOG_END_TIMEOUT_S at most; unanswered: None)."""
    coordinator = broker.group_coordinator
    if coordinator is None:
        return []
    core = coordinator.core
    committed = sorted(
        (group.group_id, tp, value.offset)
        for group in core.groups.values()
        if group.partition in core.owned
        for tp, value in group.offsets.items()
    )
    rm = broker.replica_manager
    ends: dict[TopicPartition, int] = {}
    remote: dict[int, set[TopicPartition]] = {}
    for _, tp, _ in committed:
        p = rm.partitions.get(tp)
        if p is not None and p.is_leader:
            ends[tp] = p.high_watermark
            continue
        state = broker.metadata_cache.partition_state(tp)
        if state is not None and state.leader >= 0:
            remote.setdefault(state.leader, set()).add(tp)
    if remote:
        brokers = {
            b.node_id: b
            for b in broker.metadata_cache.alive_brokers_on(
                broker.config.resolved_listeners().inter_broker
            )
        }
        answers = await asyncio.gather(
            *(
                _log_ends(brokers[b].host, brokers[b].port, tps, broker.inter_broker_connections)
                for b, tps in remote.items()
                if b in brokers
            )
        )
        for answer in answers:
            ends.update(answer)
    return [
        GroupOffset(g, tp.topic, tp.partition, offset, ends.get(tp)) for g, tp, offset in committed
    ]


async def _log_ends(
    host: str, port: int, tps: set[TopicPartition], security: ConnectionSecurity
) -> dict[TopicPartition, int]:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    request = m.ListOffsetsRequest(
        m.CONSUMER_REPLICA_ID,
        [
            m.ListOffsetsTopic(
                t,
                [
                    m.ListOffsetsPartition(p, m.LATEST_TIMESTAMP, m.NO_LEADER_EPOCH)
                    for p in sorted(ps)
                ],
            )
            for t, ps in sorted(by_topic.items())
        ],
    )
    conn = BrokerConnection(host, port, connect_timeout_s=LOG_END_TIMEOUT_S, security=security)
    try:
        async with asyncio.timeout(LOG_END_TIMEOUT_S):
            await conn.connect()
            resp = await conn.send(request, LOG_END_TIMEOUT_S)
    except (KafkaError, TimeoutError, OSError) as e:
        log.info("consumer lag: no high watermarks from %s:%d (%s)", host, port, e)
        return {}
    finally:
        await conn.close()
    return {
        TopicPartition(t.name, p.partition): p.offset
        for t in resp.topics
        for p in t.partitions
        if p.error_code == 0
    }


def take_snapshot(broker: BrokerView) -> BrokerSnapshot:
    """The broker's numbers as of now. Run it on the broker's event loop."""
    rm = broker.replica_manager
    lm = broker.log_manager
    now = broker.clock.now_ms()
    partitions = []
    for tp, p in sorted(rm.partitions.items()):
        log = p.log
        led = None
        if p.is_leader:
            led = LedPartition(
                len(p.isr),
                p.replication_factor,
                log.config.min_insync_replicas,
                p.replica_states(now),
            )
        partitions.append(
            PartitionSnapshot(
                tp.topic,
                tp.partition,
                log.log_end_offset,
                log.log_start_offset,
                log.size_in_bytes,
                len(log.segments),
                log.high_watermark,
                p.leader_epoch,
                led,
            )
        )
    controller = broker.controller
    ctx = controller.context if controller is not None else None
    controller_snapshot = None
    if ctx is not None and controller is not None and controller.is_active:
        controller_snapshot = ControllerSnapshot(
            ctx.offline_partition_count(),
            ctx.preferred_replica_imbalance_count(),
            len(ctx.all_topics),
            len(ctx.partition_leadership),
        )
    return BrokerSnapshot(
        broker_id=broker.broker_id,
        broker_epoch=broker.broker_epoch,
        zk_connected=broker.zk.connected,
        zk_expirations=broker.zk_session_expirations,
        isr_shrinks=rm.isr_shrinks,
        isr_expands=rm.isr_expands,
        failed_isr_updates=rm.failed_isr_updates,
        unclean_leader_elections=0 if ctx is None else ctx.unclean_leader_elections,
        controller=controller_snapshot,
        topic_stats={t: replace(s) for t, s in rm.topic_stats.topics.items()},
        partitions=partitions,
        cleaner=CleanerSnapshot(
            lm.cleaner_passes,
            lm.cleaner_stats.records_removed,
            lm.cleaner_stats.bytes_read,
            lm.last_recopy_ratio,
            lm.last_clean_seconds,
            lm.max_dirty_ratio(now),
        ),
        leader_replication_byte_rate=rm.leader_quota.byte_rate(),
        follower_replication_byte_rate=rm.follower_quota.byte_rate(),
    )


# --- rendering (pure; in a worker thread) ------------------------------------------------


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def metric_families(snap: BrokerSnapshot) -> Iterator[Metric]:
    yield from _broker(snap)
    yield from _replica_manager(snap)
    yield from _replication_quotas(snap)
    yield from _topics(snap)
    yield from _controller(snap)
    yield from _log_cleaner(snap)
    yield from _partitions(snap)
    yield from _consumer_groups(snap)


def _consumer_groups(snap: BrokerSnapshot) -> Iterator[Metric]:
    """The usual Kafka exporter's consumer-group metrics, for the groups this broker
    coordinates (so summing over the brokers counts each group once)."""
    labels = ["group", "topic", "partition"]
    current = GaugeMetricFamily(
        "kafka_consumergroup_current_offset", "Committed offset of a consumer group", labels=labels
    )
    lag = GaugeMetricFamily(
        "kafka_consumergroup_lag",
        "High watermark minus committed offset of a consumer group",
        labels=labels,
    )
    for o in snap.group_offsets:
        values = [o.group, o.topic, str(o.partition)]
        current.add_metric(values, o.committed)
        if o.log_end is not None:
            lag.add_metric(values, max(0, o.log_end - o.committed))
    yield current
    yield lag


def _log_cleaner(snap: BrokerSnapshot) -> Iterator[Metric]:
    c = snap.cleaner
    yield _gauge(
        "kafka_log_logcleaner_cleaner_recopy_percent",
        "Bytes the last cleaning pass wrote, as a percentage of the bytes it read",
        100 * c.last_recopy_ratio,
    )
    yield _gauge(
        "kafka_log_logcleaner_max_clean_time_secs",
        "How long the last cleaning pass took (seconds)",
        c.last_clean_seconds,
    )
    yield _gauge(
        "kafka_log_logcleanermanager_max_dirty_percent",
        "The largest dirty ratio of this broker's compacted logs, in percent",
        100 * c.max_dirty_ratio,
    )
    yield _counter("minikafka_log_cleaner_passes", "Cleaning passes swapped in", c.passes)
    yield _counter(
        "minikafka_log_cleaner_records_removed",
        "Records the log cleaner removed (superseded, keyless, expired tombstones)",
        c.records_removed,
    )
    yield _counter(
        "minikafka_log_cleaner_read_bytes", "Log bytes the cleaning passes read", c.bytes_read
    )


def _broker(snap: BrokerSnapshot) -> Iterator[Metric]:
    info = GaugeMetricFamily(
        "minikafka_broker_info", "This broker's id and version", labels=["broker_id", "version"]
    )
    info.add_metric([str(snap.broker_id), __version__], 1)
    yield info
    yield _gauge(
        "minikafka_broker_epoch",
        "The czxid of this broker's registration in ZooKeeper (-1 when not registered)",
        snap.broker_epoch,
    )
    yield _gauge(
        "minikafka_zookeeper_connected",
        "1 while this broker has a ZooKeeper session, else 0",
        int(snap.zk_connected),
    )
    yield _counter(
        "kafka_server_sessionexpirelistener_zookeeperexpires",
        "ZooKeeper sessions of this broker that expired",
        snap.zk_expirations,
    )


def _replica_manager(snap: BrokerSnapshot) -> Iterator[Metric]:
    led = [p.led for p in snap.partitions if p.led is not None]
    prefix = "kafka_server_replicamanager_"
    yield _gauge(prefix + "partitioncount", "Replicas on this broker", len(snap.partitions))
    yield _gauge(prefix + "leadercount", "Partitions this broker leads", len(led))
    yield _gauge(
        prefix + "underreplicatedpartitions",
        "Led partitions whose ISR is smaller than their replica set",
        sum(p.under_replicated for p in led),
    )
    yield _gauge(
        prefix + "underminisrpartitioncount",
        "Led partitions whose ISR is below min.insync.replicas",
        sum(p.under_min_isr for p in led),
    )
    yield _gauge(
        prefix + "atminisrpartitioncount",
        "Led partitions whose ISR is exactly min.insync.replicas",
        sum(p.at_min_isr for p in led),
    )
    yield _counter(prefix + "isrshrinks", "ISR shrinks written by this leader", snap.isr_shrinks)
    yield _counter(prefix + "isrexpands", "ISR expands written by this leader", snap.isr_expands)
    yield _counter(
        prefix + "failedisrupdates",
        "ISR writes that lost to a concurrent change of the state znode",
        snap.failed_isr_updates,
    )


def _replication_quotas(snap: BrokerSnapshot) -> Iterator[Metric]:
    # Kafka's kafka.server:type=LeaderReplication / FollowerReplication byte-rate.
    yield _gauge(
        "kafka_server_leaderreplication_byte_rate",
        "Bytes/s this broker sends as leader for throttled replicas",
        snap.leader_replication_byte_rate,
    )
    yield _gauge(
        "kafka_server_followerreplication_byte_rate",
        "Bytes/s this broker fetches as follower for throttled replicas",
        snap.follower_replication_byte_rate,
    )


def _topics(snap: BrokerSnapshot) -> Iterator[Metric]:
    stats = sorted(snap.topic_stats.items())
    for field, (meter, doc) in TOPIC_METERS.items():
        family = CounterMetricFamily(
            f"kafka_server_brokertopicmetrics_{meter}", doc, labels=["topic"]
        )
        for topic, s in stats:
            family.add_metric([topic], getattr(s, field))
        yield family
    for field, (name, doc) in MINIKAFKA_TOPIC_COUNTERS.items():
        family = CounterMetricFamily(name, doc, labels=["topic"])
        for topic, s in stats:
            family.add_metric([topic], getattr(s, field))
        yield family


def _controller(snap: BrokerSnapshot) -> Iterator[Metric]:
    c = snap.controller
    prefix = "kafka_controller_kafkacontroller_"
    yield _gauge(prefix + "activecontrollercount", "1 on the active controller", int(c is not None))
    # Kafka reports the cluster-wide gauges on the active controller only (0 elsewhere).
    yield _gauge(
        prefix + "offlinepartitionscount",
        "Partitions without a live leader (active controller only)",
        0 if c is None else c.offline_partitions,
    )
    yield _gauge(
        prefix + "preferredreplicaimbalancecount",
        "Partitions not led by their preferred replica (active controller only)",
        0 if c is None else c.preferred_replica_imbalance,
    )
    yield _gauge(
        prefix + "globaltopiccount",
        "Topics in the cluster (active controller only)",
        0 if c is None else c.topics,
    )
    yield _gauge(
        prefix + "globalpartitioncount",
        "Partitions in the cluster (active controller only)",
        0 if c is None else c.partitions,
    )
    yield _counter(
        "kafka_controller_controllerstats_uncleanleaderelections",
        "Unclean leader elections run by this broker as controller",
        snap.unclean_leader_elections,
    )


# Per-partition gauges of every replica: (name, help, PartitionSnapshot field).
REPLICA_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("kafka_log_log_logendoffset", "Log end offset (LEO)", "log_end_offset"),
    ("kafka_log_log_logstartoffset", "Log start offset", "log_start_offset"),
    ("kafka_log_log_size", "Bytes in the log's segments", "size"),
    ("kafka_log_log_numlogsegments", "Segments of the log", "segments"),
    (
        "minikafka_partition_highwatermark",
        "This replica's high watermark (a follower's trails its leader's)",
        "high_watermark",
    ),
    ("minikafka_partition_leaderepoch", "Leader epoch this replica is in", "leader_epoch"),
)
# Kafka's per-partition gauges of kafka.cluster:type=Partition, on the leader only:
# (name suffix, help, value of a LedPartition).
LEADER_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("underreplicated", "1 if the ISR is smaller than the replica set", "under_replicated"),
    ("underminisr", "1 if the ISR is below min.insync.replicas", "under_min_isr"),
    ("atminisr", "1 if the ISR is exactly min.insync.replicas", "at_min_isr"),
    ("insyncreplicascount", "Replicas in the ISR", "isr"),
    ("replicascount", "Assigned replicas", "replicas"),
)


def _partitions(snap: BrokerSnapshot) -> Iterator[Metric]:
    tp_labels = ["topic", "partition"]
    labelled = [([p.topic, str(p.partition)], p) for p in snap.partitions]
    for name, doc, field in REPLICA_GAUGES:
        family = GaugeMetricFamily(name, doc, labels=tp_labels)
        for labels, p in labelled:
            family.add_metric(labels, getattr(p, field))
        yield family

    led = [(labels, p.led) for labels, p in labelled if p.led is not None]
    for suffix, doc, field in LEADER_GAUGES:
        family = GaugeMetricFamily(f"kafka_cluster_partition_{suffix}", doc, labels=tp_labels)
        for labels, lp in led:
            family.add_metric(labels, int(getattr(lp, field)))
        yield family

    replica_leo = GaugeMetricFamily(
        "minikafka_replica_logendoffset",
        "Each replica's LEO as its leader last saw it (on the leader)",
        labels=[*tp_labels, "replica"],
    )
    caught_up_age = GaugeMetricFamily(
        "minikafka_replica_lastcaughtupagems",
        "Milliseconds since each replica last caught up with the leader's LEO, the clock of "
        "ISR shrinking (on the leader; -1: not since this leadership began)",
        labels=[*tp_labels, "replica"],
    )
    for labels, lp in led:
        for r in lp.replica_states:
            replica = [*labels, str(r.broker_id)]
            replica_leo.add_metric(replica, r.log_end_offset)
            caught_up_age.add_metric(replica, r.last_caught_up_ms_ago)
    yield replica_leo
    yield caught_up_age


class _Families(Collector):
    def __init__(self, snap: BrokerSnapshot) -> None:
        self._snap = snap

    def collect(self) -> Iterable[Metric]:
        return metric_families(self._snap)


def render(snap: BrokerSnapshot) -> bytes:
    """The snapshot in Prometheus' text format (pure: safe in any thread)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(snap))
    return generate_latest(registry)
