"""librdkafka (confluent-kafka) as the project's tools use it: configs by Kafka's property
names, checked before anything connects (librdkafka's own message for a bad one), metadata
of one topic, and a consumer read that returns as soon as records have arrived."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin._metadata import ClusterMetadata


class ClientConfigError(ValueError):
    """A property librdkafka refuses (unknown name, bad value), with its message."""


def client_config(bootstrap_servers: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka's config: `bootstrap.servers` and the Kafka-named properties (a
    `bootstrap.servers` among them wins). TCP_NODELAY is on unless a property says
    otherwise, as Kafka's Java client always has it: librdkafka leaves Nagle's algorithm on
    by default, which holds a small request back until the previous one is acknowledged
    (tens of milliseconds with delayed ACKs)."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "socket.nagle.disable": True,
        **{k: v for k, v in props.items()},
    }


def new_producer(config: Mapping[str, Any]) -> Producer:
    try:
        return Producer(dict(config))
    except KafkaException as e:
        raise ClientConfigError(f"producer config: {e.args[0].str()}") from None


def new_consumer(config: Mapping[str, Any]) -> Consumer:
    # librdkafka wants a group.id even for a consumer that only assigns (no group API).
    try:
        return Consumer({"group.id": "minikafka-tools", **dict(config)})
    except KafkaException as e:
        raise ClientConfigError(f"consumer config: {e.args[0].str()}") from None


def topic_metadata(client: Producer | Consumer, topic: str, timeout_s: float) -> ClusterMetadata:
    """The cluster's metadata for `topic`; KafkaException if the topic does not exist."""
    md: ClusterMetadata = client.list_topics(topic, timeout=timeout_s)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        error = t.error if t is not None else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        raise KafkaException(error)
    return md


def consume_ready(consumer: Consumer, max_records: int, timeout_s: float) -> list[Message]:
    """Up to `max_records` records as soon as any has arrived (waiting `timeout_s` at
    most): one poll, then whatever else is queued. librdkafka's consume(n, timeout) waits
    for n records or the whole timeout, which would time the wait, not the records."""
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    if max_records <= 1:
        return [first]
    return [first, *consumer.consume(max_records - 1, 0)]


def position(msg: Message) -> tuple[int, int]:
    """(partition, offset) of a record (a message without an error has both)."""
    partition, offset = msg.partition(), msg.offset()
    assert partition is not None and offset is not None, "an error event, not a record"
    return partition, offset
