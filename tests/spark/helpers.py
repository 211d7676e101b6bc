"""What the Spark tests share: producing known records and reading topics back."""

from __future__ import annotations

from typing import Any

from minikafka.client import ConsumerRecord, RecordMetadata, SyncConsumer, SyncProducer
from minikafka.cluster import LocalCluster

BASE_TS = 1_700_000_000_000  # a fixed record timestamp base (ms), so tests can compare


def produce(
    cluster: LocalCluster,
    topic: str,
    n: int,
    *,
    start: int = 0,
    headers: bool = True,
    partition: int | None = None,
) -> list[tuple[RecordMetadata, bytes, bytes]]:
    """`n` records acks=all, key k<i>, value v<i>, header ("i", i), timestamp BASE_TS + i;
    (metadata, key, value) of each, after all are acknowledged."""
    sent = []
    with SyncProducer(cluster.bootstrap_servers, acks="all", linger_ms=5) as producer:
        futures = []
        for i in range(start, start + n):
            key, value = f"k{i}".encode(), f"v{i}".encode()
            hdrs = [("i", str(i).encode())] if headers else None
            fut = producer.send(topic, value, key, partition, hdrs, BASE_TS + i)
            futures.append((fut, key, value))
        for fut, key, value in futures:
            sent.append((fut.result(timeout=60), key, value))
    return sent


def read_topic(cluster: LocalCluster, topic: str) -> list[ConsumerRecord]:
    """Every record of `topic` up to the high watermarks as of the call."""
    with SyncConsumer(cluster.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        tps = consumer.assign_topic(topic)
        ends = consumer.end_offsets(tps)
        got: list[ConsumerRecord] = []
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            got += consumer.poll(1000)
        return got


def row_tuple(row: Any) -> tuple[Any, ...]:
    """A Spark row of the source's schema as comparable plain values."""
    headers = tuple((h["key"], bytes(h["value"])) for h in row["headers"] or ())
    return (
        row["topic"],
        row["partition"],
        row["offset"],
        bytes(row["key"]) if row["key"] is not None else None,
        bytes(row["value"]) if row["value"] is not None else None,
        headers,
    )
