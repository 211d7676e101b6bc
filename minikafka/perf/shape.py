"""The shape of the cluster a measurement ran against, as the client's metadata shows it
(design §13: always state it), from minikafka's client's metadata or librdkafka's. The
smallest ISR is shown (min.insync.replicas is a topic config, which metadata does not
carry)."""

from __future__ import annotations

from collections.abc import Sequence, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minikafka.client.metadata import ClusterMetadata

if TYPE_CHECKING:  # confluent-kafka is in the perf extra, imported only when used
    from confluent_kafka.admin._metadata import ClusterMetadata as RdkafkaClusterMetadata


@dataclass(frozen=True, slots=True)
class TopicShape:
    topic: str
    brokers: int
    partitions: int
    replication_factor: int  # the largest replica count of its partitions
    min_isr: int  # the smallest ISR of its partitions, now

    def describe(self) -> str:
        plural = "" if self.partitions == 1 else "s"
        return (
            f"topic {self.topic}: {self.partitions} partition{plural}, "
            f"RF {self.replication_factor}, "
            f"smallest ISR {self.min_isr}, {self.brokers} brokers"
        )


def _shape(topic: str, brokers: int, partitions: Sequence[tuple[Sized, Sized]]) -> TopicShape:
    """From each partition's (replicas, ISR)."""
    return TopicShape(
        topic=topic,
        brokers=brokers,
        partitions=len(partitions),
        replication_factor=max((len(replicas) for replicas, _ in partitions), default=0),
        min_isr=min((len(isr) for _, isr in partitions), default=0),
    )


def topic_shape(metadata: ClusterMetadata, topic: str) -> TopicShape:
    t = metadata.topics.get(topic)
    parts = list(t.partitions.values()) if t is not None else []
    return _shape(topic, len(metadata.brokers), [(p.replicas, p.isr) for p in parts])


def rdkafka_topic_shape(metadata: RdkafkaClusterMetadata, topic: str) -> TopicShape:
    """`topic_shape` from librdkafka's (confluent-kafka's) metadata."""
    t = metadata.topics.get(topic)
    parts = list(t.partitions.values()) if t is not None else []
    return _shape(topic, len(metadata.brokers), [(p.replicas, p.isrs) for p in parts])
