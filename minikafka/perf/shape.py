"""The shape of the cluster a measurement ran against, as librdkafka's metadata shows it
(design §13: always state it). The
smallest ISR is shown (min.insync.replicas is a topic config, which metadata does not
carry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # confluent-kafka is imported only where used (client/librdkafka.py)
    from confluent_kafka.admin._metadata import ClusterMetadata


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


def topic_shape(metadata: ClusterMetadata, topic: str) -> TopicShape:
    """From librdkafka's (confluent-kafka's) metadata: each partition's replicas and ISR."""
    t = metadata.topics.get(topic)
    parts = list(t.partitions.values()) if t is not None else []
    return TopicShape(
        topic=topic,
        brokers=len(metadata.brokers),
        partitions=len(parts),
        replication_factor=max((len(p.replicas) for p in parts), default=0),
        min_isr=min((len(p.isrs) for p in parts), default=0),
    )
