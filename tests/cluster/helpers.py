"""What cluster tests do again and again: create topics, produce, consume, read state.

Everything here goes through a real Kafka client (confluent-kafka, that is librdkafka), the
real CLI, real ZooKeeper, Kafka requests built with kio and sent to one broker (its Metadata
answer, a Produce exactly as given) or the brokers' files on disk, never through a broker's
internals.

librdkafka's calls block: the async helpers run them in `asyncio.to_thread`, so that an
event loop awaiting them goes on with whatever else it does (a stream, a fault).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kio.schema.produce.v12.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import (
    client_config,
    consume_ready,
    new_admin,
    new_consumer,
    new_producer,
    position,
    topic_metadata,
    watermarks,
)
from minikafka.cluster import LocalCluster
from minikafka.common import LeaderAndIsr, TopicPartition, kafka_uuid_text
from minikafka.rpc.messages import BrokerNode, MetadataPartition, MetadataResponse, MetadataTopic
from minikafka.storage import log_files
from minikafka.storage.record_batch import BatchHeader

# How long an admin request, a delivery or a read may take before the test fails.
TIMEOUT_S = 60.0


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def bootstrap(cluster: LocalCluster, exclude: Collection[int] = ()) -> str:
    """Bootstrap servers without `exclude`: a client that bootstraps from a paused broker
    waits a whole request timeout for its answer, as Kafka's does."""
    return ",".join(
        "{}:{}".format(*cluster.broker_address(b)) for b in cluster.broker_ids if b not in exclude
    )


# --- Kafka's partitioner --------------------------------------------------------------------

_SEED, _M, _MASK = 0x9747B28C, 0x5BD1E995, 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` (32-bit MurmurHash2, as a signed Java int): what the Java
    client's default partitioner and librdkafka's `murmur2_random` hash keys with."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for (k,) in struct.iter_unpack("<I", data[: n4 * 4]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail, rest = length & ~3, length % 4
    # Java's switch falls through: 3 -> 2 -> 1.
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's partitioner (and librdkafka's murmur2_random) puts `key` in."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# --- clients ---------------------------------------------------------------------------------


def producer_config(servers: str, props: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """librdkafka's producer config for tests: acks=all, linger.ms 5 and Kafka's partitioner
    (murmur2 for keys) unless `props` say otherwise. An acks=all producer is idempotent
    (unless `props` name enable.idempotence): librdkafka retries a failed request, and the
    broker writes a retried batch only once, so a test can count records exactly."""
    props = dict(props or {})
    config = client_config(
        servers, {"acks": "all", "linger.ms": 5, "partitioner": "murmur2_random", **props}
    )
    if str(config["acks"]).lower() in ("all", "-1") and "enable.idempotence" not in props:
        config["enable.idempotence"] = True
    return config


def consumer_config(servers: str, props: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """librdkafka's consumer config for tests (it reads by `assign`: no consumer groups yet):
    no commits, from the log start, up to the high watermark (read_uncommitted, Kafka's
    default isolation level) and with Kafka's CRC check of every batch (librdkafka's
    default skips it)."""
    return client_config(
        servers,
        {
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",
            "check.crcs": True,
            **(props or {}),
        },
    )


@contextlib.contextmanager
def producing(servers: str, props: Mapping[str, Any] | None = None) -> Iterator[Producer]:
    """A producer (see producer_config); what is still unsent on exit is dropped."""
    producer = new_producer(producer_config(servers, props))
    try:
        yield producer
    finally:
        producer.purge()  # what a failed test left queued or in flight
        producer.flush(10)  # its delivery reports
        producer.close()


@contextlib.contextmanager
def consuming(servers: str, props: Mapping[str, Any] | None = None) -> Iterator[Consumer]:
    """A consumer (see consumer_config), closed on exit."""
    consumer = new_consumer(consumer_config(servers, props))
    try:
        yield consumer
    finally:
        consumer.close()


def admin_client(servers: str) -> AdminClient:
    """librdkafka's AdminClient (it has nothing to close)."""
    return new_admin(client_config(servers, {}))


def set_configs(
    cluster: LocalCluster, kind: ResourceType, name: str, configs: Mapping[str, str | None]
) -> None:
    """IncrementalAlterConfigs from confluent-kafka: SET each value, DELETE each None."""
    entries = [
        ConfigEntry(
            k,
            v,
            incremental_operation=AlterConfigOpType.SET
            if v is not None
            else AlterConfigOpType.DELETE,
        )
        for k, v in configs.items()
    ]
    resource = ConfigResource(kind, name, incremental_configs=entries)
    admin = admin_client(cluster.bootstrap_servers)  # alive until the answer is in
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def deliver(
    producer: Producer,
    topic: str,
    values: Sequence[bytes],
    *,
    partitions: Sequence[int] | None = None,
    keys: Sequence[bytes | None] | None = None,
    timeout: float = TIMEOUT_S,
) -> list[Message]:
    """Produce each value (to `partitions[i]`, with `keys[i]`, when given) and wait for
    every delivery report: the delivered messages, in the order of `values`.
    KafkaException with the first failed record's error; TimeoutError if not all were
    reported in `timeout` seconds."""
    reports: dict[int, tuple[KafkaError | None, Message]] = {}
    for i, value in enumerate(values):

        def report(err: KafkaError | None, msg: Message, i: int = i) -> None:
            reports[i] = (err, msg)

        partition = partitions[i] if partitions is not None else -1  # -1: the partitioner's
        key = keys[i] if keys is not None else None
        while True:
            try:
                producer.produce(topic, value, key=key, partition=partition, on_delivery=report)
                break
            except BufferError:  # the queue is full: serve delivery reports
                producer.poll(0.1)
    left = producer.flush(timeout)
    if left:
        raise TimeoutError(f"{left} of {len(values)} records to {topic} unacknowledged")
    for i in range(len(values)):
        err, _ = reports[i]
        if err is not None:
            raise KafkaException(err)
    return [reports[i][1] for i in range(len(values))]


async def send_and_wait(
    producer: Producer,
    topic: str,
    value: bytes,
    *,
    partition: int | None = None,
    key: bytes | None = None,
) -> Message:
    """One record, delivered (KafkaException if not), off the event loop."""
    (msg,) = await asyncio.to_thread(
        deliver,
        producer,
        topic,
        [value],
        partitions=None if partition is None else [partition],
        keys=[key],
    )
    return msg


def send_values(
    servers: str,
    topic: str,
    values: Sequence[bytes],
    props: Mapping[str, Any] | None = None,
    *,
    partitions: Sequence[int] | None = None,
) -> list[tuple[int, int]]:
    """(partition, offset) of each value, produced by a new producer (see producer_config);
    KafkaException if any send fails."""
    with producing(servers, props) as producer:
        return [position(m) for m in deliver(producer, topic, values, partitions=partitions)]


async def create_topic(
    cluster: LocalCluster,
    name: str,
    partitions: int,
    rf: int,
    configs: Mapping[str, str] | None = None,
    assignment: Mapping[int, Sequence[int]] | None = None,
) -> None:
    """A topic with `partitions` x `rf` replicas, or exactly `assignment` (partition ->
    brokers, then give -1 for both), created with Kafka's CreateTopics (answered once every
    partition has a leader)."""
    config = dict(configs or {})
    if assignment is None:
        topic = NewTopic(name, partitions, rf, config=config)
    else:  # partition 0's brokers, partition 1's, ... (librdkafka wants their count too)
        replicas = [list(assignment[p]) for p in sorted(assignment)]
        topic = NewTopic(name, len(replicas), replica_assignment=replicas, config=config)

    def create() -> None:
        admin = admin_client(cluster.bootstrap_servers)
        futures = admin.create_topics([topic], operation_timeout=30, request_timeout=TIMEOUT_S)
        futures[name].result(timeout=TIMEOUT_S + 30)

    await asyncio.to_thread(create)


async def produce_values(
    cluster: LocalCluster,
    topic: str,
    values: list[bytes],
    acks: int | str = "all",
    *,
    exclude: Collection[int] = (),
) -> list[tuple[int, int]]:
    """(partition, offset) of each value, bootstrapping from brokers not in `exclude`;
    fails the test if any send fails. acks=all sends are idempotent (see producer_config)."""
    servers = bootstrap(cluster, exclude)
    return await asyncio.to_thread(send_values, servers, topic, values, {"acks": acks})


@dataclass(frozen=True)
class Record:
    """A consumed record (librdkafka's Message without its methods)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int

    @classmethod
    def of(cls, msg: Message) -> Record:
        partition, offset = position(msg)
        topic = msg.topic()
        assert topic is not None
        return cls(topic, partition, offset, msg.key(), msg.value(), msg.timestamp()[1])


def read_records(
    servers: str,
    topic: str,
    expected: int | None = None,
    timeout: float = 30.0,
    *,
    partitions: Collection[int] | None = None,
) -> list[Record]:
    """Records of `partitions` (None: every partition of the topic) from their log start,
    until `expected` of them (None: until the high watermarks as of the call) or `timeout`,
    in the order the consumer returned them. Fails on a record whose CRC is wrong."""
    deadline = time.monotonic() + timeout
    with consuming(servers) as consumer:
        if partitions is None:
            md = topic_metadata(consumer, topic, timeout)
            partitions = sorted(md.topics[topic].partitions)
        next_offset: dict[int, int] = {}
        ends: dict[int, int] = {}
        if expected is None:
            for p in partitions:
                next_offset[p], ends[p] = watermarks(consumer, topic, p, timeout)
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])

        def done() -> bool:
            if expected is not None:
                return len(got) >= expected
            return all(next_offset[p] >= end for p, end in ends.items())

        got: list[Record] = []
        while not done() and (remaining := deadline - time.monotonic()) > 0:
            for msg in consume_ready(consumer, 10_000, min(remaining, 0.5)):
                if (err := msg.error()) is not None:
                    if err.fatal() or err.code() == KafkaError._BAD_MSG:
                        raise KafkaException(err)
                    continue  # librdkafka retries (a broker down, a leader moving)
                record = Record.of(msg)
                got.append(record)
                next_offset[record.partition] = record.offset + 1
        return got


async def consume_records(
    cluster: LocalCluster,
    topic: str,
    expected: int | None = None,
    timeout: float = 30.0,
    *,
    exclude: Collection[int] = (),
) -> list[Record]:
    """Records from the start, until `expected` of them (None: until the end offsets as of
    the call) or `timeout`, bootstrapping from brokers not in `exclude`."""
    servers = bootstrap(cluster, exclude)
    return await asyncio.to_thread(read_records, servers, topic, expected, timeout)


async def consume_all(cluster: LocalCluster, topic: str, expected: int) -> list[bytes]:
    return [r.value or b"" for r in await consume_records(cluster, topic, expected)]


# --- state: ZooKeeper, a broker's Metadata, the files ---------------------------------------


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
    """The Metadata answer of whatever broker listens at host:port to Kafka's Metadata
    request for every topic (creating none), in the shape of the broker's metadata cache."""
    conn = KafkaConnection(host, port, client_id="cluster-tests")
    try:
        resp = await conn.call(metadata_request(None), timeout_s=10)
    finally:
        await conn.close()
    return MetadataResponse(
        [BrokerNode(b.node_id, b.host, b.port, b.rack) for b in resp.brokers],
        resp.controller_id,
        [
            MetadataTopic(
                int(t.error_code),
                t.name,
                [
                    MetadataPartition(
                        int(p.error_code),
                        p.partition_index,
                        p.leader_id,
                        p.leader_epoch,
                        list(p.replica_nodes),
                        list(p.isr_nodes),
                        list(p.offline_replicas),
                    )
                    for p in t.partitions
                ],
                # Kafka's zero id means none, as the metadata cache's None does.
                None if t.topic_id is None or t.topic_id.int == 0 else kafka_uuid_text(t.topic_id),
            )
            for t in resp.topics
        ],
    )


async def produce_at(
    host: str,
    port: int,
    tp: TopicPartition,
    records: bytes,
    *,
    acks: int,
    timeout_ms: int,
    timeout_s: float | None = None,
) -> tuple[int, int]:
    """(error code, base offset) of one Kafka Produce of `records`, exactly as given, to
    `tp` sent to the broker at host:port alone: no client's retries, batching or checks in
    between. NetworkError when no answer comes within `timeout_s` (by default 10 s more
    than the request's own timeout)."""
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(acks),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        topic_data=(
            TopicProduceData(
                name=TopicName(tp.topic),
                partition_data=(
                    PartitionProduceData(index=i32(tp.partition), records=Records(records)),
                ),
            ),
        ),
    )
    conn = KafkaConnection(host, port, client_id="cluster-tests")
    try:
        resp = await conn.call(
            request, timeout_s=timeout_ms / 1000 + 10 if timeout_s is None else timeout_s
        )
    finally:
        await conn.close()
    p = resp.responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


def replica_batches(log_dir: Path, tp: TopicPartition) -> list[tuple[BatchHeader, bytes]]:
    """(header, bytes) of every batch in a replica's segment files, read from disk the way a
    recovering broker would (a torn last batch ends the segment)."""
    return log_files.read_batches(log_dir, tp)


def replica_records(log_dir: Path, tp: TopicPartition, end_offset: int) -> dict[int, bytes | None]:
    """offset -> value of every record below `end_offset` in a replica's segment files."""
    return log_files.read_records(log_dir, tp, end_offset)


def http_get(
    url: str, method: str = "GET", timeout: float = 10, headers: Mapping[str, str] | None = None
) -> tuple[int, bytes]:
    """(status, body) of a request to a broker's admin endpoint; an HTTP error status is
    returned, not raised. `headers`: e.g. the token of a secured cluster's endpoints."""
    req = urllib.request.Request(url, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def ctrl_c_as_in_a_terminal() -> None:
    """preexec_fn for a command a test stops with Ctrl-C (SIGINT): the default disposition,
    as in a terminal. A command started in the background by a non-interactive shell (as CI
    may start pytest) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler: the command would rightly ignore the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
