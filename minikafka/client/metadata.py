"""The client's view of the cluster: brokers, controller, and per partition leader, leader
epoch, replicas and ISR, as the last MetadataResponse described them.

A `ClusterMetadata` is an immutable snapshot; an update builds a new one, so code that
grouped partitions by leader keeps a consistent view while a refresh lands.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.messages import BrokerNode, MetadataResponse


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

    def broker(self, node_id: int) -> BrokerNode | None:
        return self.brokers.get(node_id)

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
        )
