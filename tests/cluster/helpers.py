"""What cluster tests do again and again: create topics, produce, consume, read state.

Everything here goes through the real client, the real CLI, real ZooKeeper or the
brokers' files on disk, never through a broker's internals.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from minikafka.client import Admin, Consumer, NewTopic, Producer
from minikafka.client.connection import BrokerConnection
from minikafka.client.consumer import ConsumerRecord
from minikafka.cluster import LocalCluster
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.protocol.messages import MetadataRequest, MetadataResponse
from minikafka.storage.log_files import read_batches, read_records
from minikafka.storage.record_batch import BatchHeader


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def create_topic(
    cluster: LocalCluster,
    name: str,
    partitions: int,
    rf: int,
    configs: Mapping[str, str] | None = None,
    assignment: Mapping[int, Sequence[int]] | None = None,
) -> None:
    """A topic with `partitions` x `rf` replicas, or exactly `assignment` (partition ->
    brokers, then give -1 for both)."""
    admin = Admin(cluster.bootstrap_servers)
    try:
        await admin.create_topics(
            [NewTopic(name, partitions, rf, dict(configs or {}), assignment)], timeout_ms=30_000
        )
    finally:
        await admin.close()


def bootstrap(cluster: LocalCluster, exclude: Collection[int] = ()) -> str:
    """Bootstrap servers without `exclude`: a client that bootstraps from a paused broker
    waits a whole request timeout for its answer, as Kafka's does."""
    return ",".join(
        "{}:{}".format(*cluster.broker_address(b)) for b in cluster.broker_ids if b not in exclude
    )


async def produce_values(
    cluster: LocalCluster,
    topic: str,
    values: list[bytes],
    acks: int | str = "all",
    *,
    exclude: Collection[int] = (),
) -> list[tuple[int, int]]:
    """(partition, offset) of each value, bootstrapping from brokers not in `exclude`;
    fails the test if any send fails."""
    async with Producer(bootstrap(cluster, exclude), acks=acks, linger_ms=5) as producer:
        futures = [await producer.send(topic, v) for v in values]
        return [(md.partition, md.offset) for md in await asyncio.gather(*futures)]


async def consume_records(
    cluster: LocalCluster,
    topic: str,
    expected: int | None = None,
    timeout: float = 30.0,
    *,
    exclude: Collection[int] = (),
) -> list[ConsumerRecord]:
    """Records from the start, until `expected` of them (None: until the end offsets as of
    the call) or `timeout`, bootstrapping from brokers not in `exclude`."""
    async with Consumer(bootstrap(cluster, exclude), auto_offset_reset="earliest") as consumer:
        await consumer.assign_topic(topic)
        consumer.seek_to_beginning()
        ends = await consumer.end_offsets(consumer.assignment())

        async def done() -> bool:
            if expected is not None:
                return len(got) >= expected
            return all([await consumer.position(tp) >= end for tp, end in ends.items()])

        got: list[ConsumerRecord] = []
        deadline = time.monotonic() + timeout
        while not await done() and time.monotonic() < deadline:
            got += await consumer.poll(500)
        return got


async def consume_all(cluster: LocalCluster, topic: str, expected: int) -> list[bytes]:
    return [r.value or b"" for r in await consume_records(cluster, topic, expected)]


def partition_states(cluster: LocalCluster, topic: str, partitions: int) -> dict[int, LeaderAndIsr]:
    zk = cluster.zk_client()
    states = zk.get_partition_states([TopicPartition(topic, p) for p in range(partitions)])
    return {tp.partition: st for tp, st in states.items()}


async def metadata(cluster: LocalCluster, broker_id: int | None = None) -> MetadataResponse:
    """One broker's Metadata answer (any broker's when `broker_id` is None)."""
    return await metadata_at(
        *cluster.broker_address(broker_id if broker_id is not None else cluster.broker_ids[0])
    )


async def metadata_at(host: str, port: int) -> MetadataResponse:
    """The Metadata answer of whatever broker listens at host:port."""
    conn = BrokerConnection(host, port)
    await conn.connect()
    try:
        resp: MetadataResponse = await conn.send(MetadataRequest(None), timeout_s=10)
        return resp
    finally:
        await conn.close()


def replica_batches(log_dir: Path, tp: TopicPartition) -> list[tuple[BatchHeader, bytes]]:
    """(header, bytes) of every batch in a replica's segment files, read from disk the way a
    recovering broker would (a torn last batch ends the segment)."""
    return read_batches(log_dir, tp)


def replica_records(log_dir: Path, tp: TopicPartition, end_offset: int) -> dict[int, bytes | None]:
    """offset -> value of every record below `end_offset` in a replica's segment files."""
    return read_records(log_dir, tp, end_offset)
