"""What the Spark tests share: producing known records, reading topics back, and topic
admin, all with librdkafka (confluent-kafka) over Kafka's protocol."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from pyspark.sql import DataFrame, SparkSession

from minikafka.client.librdkafka import position, read_to_end, watermarks
from minikafka.cluster import LocalCluster
from minikafka.spark import pipeline
from tests.cluster.conftest import wait_until

BASE_TS = 1_700_000_000_000  # a fixed record timestamp base (ms), so tests can compare
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Acked:
    """Where the cluster put a record it acknowledged."""

    partition: int
    offset: int
    timestamp: int  # ms


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int  # ms


def produce(
    cluster: LocalCluster,
    topic: str,
    n: int,
    *,
    start: int = 0,
    headers: bool = True,
    partition: int | None = None,
) -> list[tuple[Acked, bytes, bytes]]:
    """`n` records acks=all, key k<i>, value v<i>, header ("i", i), timestamp BASE_TS + i;
    (where acknowledged, key, value) of each, after all are acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
            "partitioner": "murmur2_random",  # Kafka's, as the sink's
        }
    )
    acked: dict[int, Acked] = {}
    failed: list[KafkaError] = []

    def delivered(i: int, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed.append(err)
            return
        p, offset, (_, ts) = msg.partition(), msg.offset(), msg.timestamp()
        assert p is not None and offset is not None
        acked[i] = Acked(p, offset, ts)

    for i in range(start, start + n):
        producer.produce(
            topic,
            value=f"v{i}".encode(),
            key=f"k{i}".encode(),
            partition=-1 if partition is None else partition,
            headers=[("i", str(i).encode())] if headers else None,
            timestamp=BASE_TS + i,
            on_delivery=lambda err, msg, i=i: delivered(i, err, msg),
        )
    assert producer.flush(TIMEOUT_S) == 0, "records not acknowledged in time"
    assert not failed, failed
    return [(acked[i], f"k{i}".encode(), f"v{i}".encode()) for i in range(start, start + n)]


def read_topic(cluster: LocalCluster, topic: str) -> list[Record]:
    """Every record of `topic` up to the high watermarks as of the call."""
    records = []
    for m in read_to_end(cluster.bootstrap_servers, topic, TIMEOUT_S):
        p, offset = position(m)
        headers = tuple(m.headers() or ())
        records.append(Record(topic, p, offset, m.key(), m.value(), headers, m.timestamp()[1]))
    return records


def admin(cluster: LocalCluster) -> AdminClient:
    """A new AdminClient each time: one made before a broker was killed may wait on its dead
    connection."""
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create_topic(
    cluster: LocalCluster, name: str, partitions: int, rf: int = 3, **configs: str
) -> None:
    client = admin(cluster)  # referenced until the answer: a destroyed one fails its futures
    futures = client.create_topics(
        [NewTopic(name, partitions, rf, config=configs)], operation_timeout=30
    )
    futures[name].result(timeout=TIMEOUT_S)


def add_partitions(cluster: LocalCluster, topic: str, total: int) -> None:
    """Add partitions, and wait until every broker's metadata has them: a client that asks
    a broker the controller's UpdateMetadata has not reached yet would not know them."""
    client = admin(cluster)
    futures = client.create_partitions([NewPartitions(topic, total)], operation_timeout=30)
    futures[topic].result(timeout=TIMEOUT_S)
    for b in cluster.broker_ids:
        one = AdminClient(
            {"bootstrap.servers": f"{cluster.broker_host(b)}:{cluster.broker_ports[b]}"}
        )
        wait_until(
            lambda one=one: (
                len(one.list_topics(topic, timeout=10).topics[topic].partitions) == total
            ),
            TIMEOUT_S,
            f"broker {b} to know {total} partitions of {topic}",
        )


def leader_of(cluster: LocalCluster, topic: str, partition: int) -> int:
    """The partition's leader in the metadata (-1: none)."""
    md = admin(cluster).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[partition].leader


def log_start(cluster: LocalCluster, topic: str, partition: int) -> int:
    """The partition's log start offset, from its leader."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "tests"})
    try:
        low, _ = watermarks(consumer, topic, partition, TIMEOUT_S)
        return int(low)
    finally:
        consumer.close()


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


def stream(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    """`spark.readStream.format("minikafka")` from `bootstrap`, with these options."""
    return (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**options)
        .load()
    )


def as_ms(value: object) -> int:
    """Epoch ms of a window bound: a datetime from a Spark row (naive, in the local time
    zone of this process, whatever the session time zone) or an ISO string from the JSON."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return round(value.timestamp() * 1000)


def demo_window_counts(events: int) -> dict[tuple[int, str], int]:
    """The window counts `minikafka pipeline demo --events EVENTS` writes, wherever its job
    runs (local Spark or a cluster), by (window start less the first window's start, page):
    its clicks are 0.3 s apart from 1 ms past a window start, with the pages make_clicks
    picks with its default seed."""
    clicks = pipeline.make_clicks(events, 1, 300)
    return pipeline.expected_counts(clicks, clicks[-1].ts_ms - pipeline.WINDOW_MS)


def from_first_window(counts: Mapping[tuple[int, str], int]) -> dict[tuple[int, str], int]:
    """(window start, page) -> clicks, with window starts less the first one's."""
    first = min(start for start, _ in counts)
    return {(start - first, page): n for (start, page), n in counts.items()}
