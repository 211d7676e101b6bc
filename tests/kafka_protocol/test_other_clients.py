"""Three more unmodified Kafka clients against real brokers and a real ZooKeeper:
kafka-python, aiokafka and kcat (Debian's package, librdkafka 2.0). Each creates a topic
or has it created, produces with acks=all in each codec it offers, survives a kill -9 of
the partition leader (the client follows the new leader), and reads everything back with
assign from the beginning: no acknowledged record lost.

kafka-python and aiokafka (idempotence on by default in kafka-python, off in aiokafka)
are checked for nothing lost and a log without gaps; duplicates are checked where the
producer is idempotent."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.storage.record_batch import iter_batches
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import replica_batches
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic

pytestmark = pytest.mark.timeout(240)


def kill_leader(cluster: LocalCluster, topic: str) -> tuple[int, str]:
    """kill -9 of the partition leader; waits for a new one. Returns (the killed broker,
    the bootstrap servers of the others)."""
    tp = MkTopicPartition(topic, 0)
    st = cluster.zk_client().get_partition_state(tp)
    assert st is not None
    cluster.kill(st.leader)

    def moved() -> bool:
        now = cluster.zk_client().get_partition_state(tp)
        return now is not None and now.leader not in (st.leader, -1)

    wait_until(moved, 30, f"a new leader of {tp}")
    alive = ",".join(f"127.0.0.1:{p}" for b, p in cluster.broker_ports.items() if b != st.leader)
    return st.leader, alive


def check_log(bootstrap: str, topic: str, acked: set[bytes], *, idempotent: bool) -> None:
    records = consume_from_beginning(bootstrap, topic, 1)
    assert [m.offset() for m in records] == list(range(len(records))), "gaps in the log"
    values = [m.value() for m in records]
    missing = acked - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost: {sorted(missing)[:5]}"
    if idempotent:
        assert len(values) == len(set(values)), "an idempotent producer's record written twice"


def codecs_stored(cluster: LocalCluster, broker: int, topic: str) -> set[int]:
    batches = replica_batches(cluster.log_dir(broker), MkTopicPartition(topic, 0))
    return {h.attributes & 0x07 for h, _ in batches}


def test_kafka_python(make_cluster: ClusterFactory) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    cluster = make_cluster()
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    admin.create_topics(
        [NewTopic("kp", 1, 3, topic_configs={"min.insync.replicas": "2"})], timeout_ms=30000
    )
    admin.close()
    acked: set[bytes] = set()

    def produce(bootstrap: str, codec: str, n: int, tag: str = "") -> None:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            compression_type=codec,
            retries=10,
        )
        futures = [
            (v, producer.send("kp", v)) for v in (f"{tag}{codec}-{i}".encode() for i in range(n))
        ]
        producer.flush(60)
        for v, f in futures:
            f.get(timeout=60)
            acked.add(v)
        producer.close()

    for codec in ("gzip", "snappy", "lz4", "zstd"):
        produce(cluster.bootstrap_servers, codec, 200)
    leader = cluster.zk_client().get_partition_state(MkTopicPartition("kp", 0))
    assert leader is not None
    assert codecs_stored(cluster, leader.leader, "kp") >= {1, 2, 3, 4}
    _, alive = kill_leader(cluster, "kp")
    produce(cluster.bootstrap_servers, "gzip", 200, "after-")  # the dead broker is listed too
    check_log(alive, "kp", acked, idempotent=True)

    consumer = KafkaConsumer(
        bootstrap_servers=alive,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    consumer.assign([TopicPartition("kp", 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(acked) and time.monotonic() < deadline:
        for records in consumer.poll(1000).values():
            got += [r.value for r in records]
    consumer.close()
    assert acked <= set(got)


def test_aiokafka(make_cluster: ClusterFactory) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    cluster = make_cluster()
    create_topic(cluster.bootstrap_servers, "aio", 1, 3, **{"min.insync.replicas": "2"})
    acked: set[bytes] = set()

    async def produce(codec: str, n: int, tag: str = "") -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, acks="all", compression_type=codec
        )
        await producer.start()
        try:
            for i in range(n):
                v = f"{tag}{codec}-{i}".encode()
                await producer.send_and_wait("aio", v)
                acked.add(v)
        finally:
            await producer.stop()

    async def consume(bootstrap: str) -> list[bytes]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition("aio", 0)])
            await consumer.seek_to_beginning()
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(got) < len(acked) and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    got += [r.value for r in records]
            return got
        finally:
            await consumer.stop()

    for codec in ("gzip", "snappy", "lz4", "zstd"):
        asyncio.run(produce(codec, 100))
    leader = cluster.zk_client().get_partition_state(MkTopicPartition("aio", 0))
    assert leader is not None
    assert codecs_stored(cluster, leader.leader, "aio") >= {1, 2, 3, 4}
    _, alive = kill_leader(cluster, "aio")
    asyncio.run(produce("gzip", 100, "after-"))
    check_log(alive, "aio", acked, idempotent=False)
    assert acked <= set(asyncio.run(consume(alive)))


def test_kcat(make_cluster: ClusterFactory) -> None:
    assert shutil.which("kcat"), "kcat is missing: scripts/test installs Debian's kcat package"
    cluster = make_cluster()
    create_topic(cluster.bootstrap_servers, "kc", 1, 3, **{"min.insync.replicas": "2"})

    def kcat(*args: str, stdin: str | None = None, bootstrap: str | None = None) -> str:
        done = subprocess.run(
            ["kcat", "-b", bootstrap or cluster.bootstrap_servers, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def produce(codec: str, n: int) -> set[str]:
        lines = {f"{codec}-{i}" for i in range(n)}
        # -P exits 0 only once every message is delivered (acks=all: -1).
        kcat(
            "-P",
            "-t",
            "kc",
            "-z",
            codec,
            "-X",
            "request.required.acks=-1",
            stdin="\n".join(sorted(lines)) + "\n",
        )
        return lines

    # librdkafka up to 2.11 (kcat's is 2.0) compresses with gzip, snappy or lz4 only when
    # the broker offers Produce v0, which Kafka 4 and minikafka no longer do (v3 is the
    # first with Kafka's v2 record batches); it sends those uncompressed, and zstd as zstd.
    acked = produce("zstd", 100) | produce("none", 100)
    leader = cluster.zk_client().get_partition_state(MkTopicPartition("kc", 0))
    assert leader is not None
    data = b"".join(
        raw for _, raw in replica_batches(cluster.log_dir(leader.leader), MkTopicPartition("kc", 0))
    )
    assert {h.attributes & 0x07 for _, h in iter_batches(data)} == {0, 4}
    _, alive = kill_leader(cluster, "kc")
    acked |= produce("zstd", 100)
    out = kcat("-C", "-t", "kc", "-o", "beginning", "-e", "-q", bootstrap=alive)
    assert acked <= set(out.split())
    metadata = kcat("-L", "-t", "kc", bootstrap=alive)
    assert 'topic "kc" with 1 partitions' in metadata
