"""Client library: producer, consumer, admin client, metadata cache."""

from minikafka.client.accumulator import RecordMetadata
from minikafka.client.admin import (
    Admin,
    ClusterDescription,
    NewPartitions,
    NewTopic,
    PartitionReplicas,
    ReplicaDescription,
    TopicDescription,
)
from minikafka.client.cluster import ClusterClient
from minikafka.client.connection import BrokerConnection, NetworkError
from minikafka.client.consumer import Consumer, ConsumerRecord
from minikafka.client.errors import (
    IllegalStateError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from minikafka.client.metadata import ClusterMetadata, PartitionMetadata, TopicMetadata
from minikafka.client.partitioner import DefaultPartitioner, murmur2
from minikafka.client.producer import Producer
from minikafka.client.sync import SyncAdmin, SyncConsumer, SyncProducer
from minikafka.common import TopicPartition

__all__ = [
    "Admin",
    "BrokerConnection",
    "ClusterClient",
    "ClusterDescription",
    "ClusterMetadata",
    "Consumer",
    "ConsumerRecord",
    "DefaultPartitioner",
    "IllegalStateError",
    "KafkaTimeoutError",
    "NetworkError",
    "NewPartitions",
    "NewTopic",
    "NoOffsetForPartitionError",
    "PartitionMetadata",
    "PartitionReplicas",
    "Producer",
    "RecordMetadata",
    "ReplicaDescription",
    "SyncAdmin",
    "SyncConsumer",
    "SyncProducer",
    "TopicDescription",
    "TopicMetadata",
    "TopicPartition",
    "murmur2",
]
