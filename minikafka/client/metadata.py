"""The client's view of the cluster: brokers, controller, and per partition leader, leader
epoch, replicas and ISR, as the last MetadataResponse described them.

A `ClusterMetadata` is an immutable snapshot; an update builds a new one, so code that
grouped partitions by leader keeps a consistent view while a refresh lands.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from minikafka.common import NO_LEADER, TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import BrokerNode, MetadataResponse


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int  # NO_LEADER (-1): none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = ErrorCode.NONE

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error_code: int
    partitions: Mapping[int, PartitionMetadata] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    brokers: Mapping[int, BrokerNode] = field(default_factory=dict)
    controller_id: int = -1
    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)
    # Topics the last response said do not exist (UNKNOWN_TOPIC_OR_PARTITION: the broker
    # checked ZooKeeper and did not auto-create them).
    unknown_topics: frozenset[str] = frozenset()
    # Per-snapshot answers the producer asks for on every send (the snapshot never changes).
    _cache: dict[tuple[str, str], tuple[int, ...] | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    def broker(self, node_id: int) -> BrokerNode | None:
        return self.brokers.get(node_id)

    def controller(self) -> BrokerNode | None:
        return self.brokers.get(self.controller_id)

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        topic = self.topics.get(tp.topic)
        return None if topic is None else topic.partitions.get(tp.partition)

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The partition's leader, or None when unknown, absent, or not a live broker (a
        leader the response does not list cannot be reached)."""
        p = self.partition(tp)
        if p is None or p.leader == NO_LEADER or p.leader not in self.brokers:
            return None
        return p.leader

    def leader_epoch_for(self, tp: TopicPartition) -> int:
        p = self.partition(tp)
        return -1 if p is None else p.leader_epoch

    def partitions_for_topic(self, topic: str) -> tuple[int, ...] | None:
        """All partition ids of a known topic (sorted), or None if the topic is unknown."""
        key = ("all", topic)
        if key not in self._cache:
            t = self.topics.get(topic)
            ok = t is not None and t.error_code == ErrorCode.NONE and t.partitions
            self._cache[key] = tuple(sorted(t.partitions)) if t is not None and ok else None
        return self._cache[key]

    def available_partitions_for_topic(self, topic: str) -> tuple[int, ...]:
        """The topic's partitions that have a reachable leader."""
        key = ("available", topic)
        cached = self._cache.get(key)
        if cached is None:
            t = self.topics.get(topic)
            cached = tuple(
                sorted(
                    p
                    for p in (t.partitions if t is not None else ())
                    if self.leader_for(TopicPartition(topic, p)) is not None
                )
            )
            self._cache[key] = cached
        return cached

    def with_response(
        self, response: MetadataResponse, requested: Collection[str] | None
    ) -> ClusterMetadata:
        """A new snapshot: brokers and controller from the response; the topics it answered
        replace ours. When all topics were requested (`requested` is None), topics it no
        longer lists are gone (deleted)."""
        topics: dict[str, TopicMetadata] = {} if requested is None else dict(self.topics)
        for t in response.topics:
            partitions = {
                p.partition: PartitionMetadata(
                    t.name,
                    p.partition,
                    p.leader,
                    p.leader_epoch,
                    tuple(p.replicas),
                    tuple(p.isr),
                    tuple(p.offline_replicas),
                    p.error_code,
                )
                for p in t.partitions
            }
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                topics.pop(t.name, None)
            else:
                topics[t.name] = TopicMetadata(t.name, t.error_code, partitions)
        return ClusterMetadata(
            brokers={b.node_id: b for b in response.brokers},
            controller_id=response.controller_id,
            topics=topics,
            unknown_topics=frozenset(
                t.name
                for t in response.topics
                if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            ),
        )
