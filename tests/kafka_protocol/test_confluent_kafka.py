"""An unmodified Kafka client, confluent-kafka (librdkafka), against real minikafka brokers
and a real ZooKeeper: topics created with its AdminClient, records produced with acks=all
in every compression codec, consumed with assign from the beginning, and a kill -9 of the
partition leader in the middle of a stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from minikafka.client.librdkafka import watermarks
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.storage.record_batch import decode_all
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import replica_batches

pytestmark = pytest.mark.timeout(240)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def create_topic(bootstrap: str, name: str, partitions: int, rf: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config=configs)], operation_timeout=30
    )
    futures[name].result(timeout=60)


def consume_from_beginning(
    bootstrap: str, topic: str, partitions: int, timeout: float = 60
) -> list[Any]:
    """Every record of `topic` from offset 0 up to each partition's high watermark as of
    the call (assign, no group protocol)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "minikafka-tests",  # confluent-kafka requires one; no group API is used
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {p: watermarks(consumer, topic, p, 30)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[Any] = []
        next_offset = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + timeout
        while any(next_offset[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"read up to {next_offset} of {ends}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg)
            next_offset[msg.partition()] = msg.offset() + 1
        return got
    finally:
        consumer.close()


def test_admin_producer_and_consumer_round_trip_in_every_codec(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "orders", 3, 3, **{"min.insync.replicas": "2"})
    assignment = cluster.zk_client().get_assignment("orders")
    assert assignment is not None
    assert sorted(assignment) == [0, 1, 2]
    assert all(len(set(replicas)) == 3 for replicas in assignment.values())
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        create_topic(bootstrap, "orders", 3, 3)

    sent: dict[bytes, tuple[bytes, list[tuple[str, bytes]]]] = {}
    for codec in CODECS:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 5,
                "compression.type": codec,
            }
        )
        errors: list[KafkaError] = []
        for i in range(300):
            key = f"{codec}-{i}".encode()
            value = f"{codec} value {i} ".encode() * 8
            headers = [("codec", codec.encode()), ("i", str(i).encode())]
            sent[key] = (value, headers)
            producer.produce(
                "orders",
                value,
                key=key,
                headers=headers,
                on_delivery=lambda err, _msg, errors=errors: errors.append(err) if err else None,
            )
        assert producer.flush(60) == 0
        assert errors == []

    got = consume_from_beginning(bootstrap, "orders", 3)
    assert {m.key(): (m.value(), m.headers()) for m in got} == sent
    for p in range(3):
        offsets = [m.offset() for m in got if m.partition() == p]
        assert offsets == list(range(len(offsets))), f"partition {p}: gaps or repeats"

    # Stored as sent: the leader's log holds batches of every codec.
    codecs_on_disk: set[int] = set()
    for p in range(3):
        leader = cluster.zk_client().get_partition_state(MkTopicPartition("orders", p))
        assert leader is not None
        batches = replica_batches(cluster.log_dir(leader.leader), MkTopicPartition("orders", p))
        codecs_on_disk |= {h.attributes & 0x07 for h, _ in batches}
        assert len(decode_all(b"".join(raw for _, raw in batches))) == sum(
            1 for m in got if m.partition() == p
        )
    assert codecs_on_disk == {0, 1, 2, 3, 4}


def test_admin_adds_partitions_deletes_topics_and_describes_the_cluster(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "grow", 1, 3)
    create_topic(bootstrap, "doomed", 1, 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions("grow", 3)])["grow"].result(timeout=60)
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions("grow", 2)])["grow"].result(timeout=60)
    admin.delete_topics(["doomed"], operation_timeout=30)["doomed"].result(timeout=60)
    zk = cluster.zk_client()
    wait_until(lambda: not zk.topic_exists("doomed"), 30, "doomed deleted from ZooKeeper")
    assignment = zk.get_assignment("grow")
    assert assignment is not None and sorted(assignment) == [0, 1, 2]

    cluster_id = zk.get_or_create_cluster_id("not-this-one")
    described = admin.describe_cluster().result(timeout=30)
    controller = cluster.controller()
    assert controller is not None
    assert described.cluster_id == cluster_id
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert described.controller.id == controller[0]
    topics = admin.list_topics(timeout=30)
    assert topics.cluster_id == cluster_id
    assert "doomed" not in topics.topics
    assert len(topics.topics["grow"].partitions) == 3


def test_offsets_for_times_finds_the_first_record_at_or_after_a_time(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "times", 1, 3)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    base = 1_700_000_000_000
    for i in range(10):
        producer.produce("times", b"v%d" % i, partition=0, timestamp=base + 1000 * i)
        producer.flush(30)  # one batch each
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    try:
        for at, expected in ((base + 4500, 5), (base, 0), (base + 9000, 9)):
            (found,) = consumer.offsets_for_times([TopicPartition("times", 0, at)], timeout=30)
            assert found.offset == expected, at
        (after_all,) = consumer.offsets_for_times(
            [TopicPartition("times", 0, base + 60_000)], timeout=30
        )
        assert after_all.offset == -1  # no such record: the end (OFFSET_END)
        assert consumer.get_watermark_offsets(TopicPartition("times", 0), timeout=30) == (0, 10)
    finally:
        consumer.close()


class _Stream:
    """An idempotent producer thread sending numbered values with acks=all until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.acked: list[bytes] = []
        self.failed: list[KafkaError] = []
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 60000,
            }
        )
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.acked.append(msg.value())
        else:
            self.failed.append(err)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                self._producer.produce(self._topic, b"v%d" % i, on_delivery=self._on_delivery)
                i += 1
            except BufferError:
                pass
            self._producer.poll(0.001)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        assert self._producer.flush(60) == 0


@pytest.fixture
def stream_cleanup() -> Iterator[list[_Stream]]:
    streams: list[_Stream] = []
    yield streams
    for s in streams:
        s._stop.set()


def test_kill_9_of_the_leader_mid_stream_loses_nothing_and_duplicates_nothing(
    make_cluster: ClusterFactory, stream_cleanup: list[_Stream]
) -> None:
    cluster: LocalCluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "stream", 1, 3, **{"min.insync.replicas": "2"})
    tp = MkTopicPartition("stream", 0)
    stream = _Stream(bootstrap, "stream")
    stream_cleanup.append(stream)
    wait_until(lambda: len(stream.acked) >= 2000, 30, "2000 acknowledged records")
    before = cluster.zk_client().get_partition_state(tp)
    assert before is not None
    cluster.kill(before.leader)  # kill -9

    def new_leader() -> bool:
        st = cluster.zk_client().get_partition_state(tp)
        return st is not None and st.leader not in (before.leader, -1)

    wait_until(new_leader, 30, "a new leader")
    acked_at_kill = len(stream.acked)
    wait_until(lambda: len(stream.acked) >= acked_at_kill + 2000, 60, "acks from the new leader")
    stream.stop()
    assert stream.failed == []

    alive = ",".join(
        f"127.0.0.1:{port}" for b, port in cluster.broker_ports.items() if b != before.leader
    )
    records = consume_from_beginning(alive, "stream", 1)
    assert [m.offset() for m in records] == list(range(len(records)))
    log = [m.value() for m in records]
    missing = set(stream.acked) - set(log)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    # Idempotence: batches retried to the new leader (their acknowledgements lost with the
    # old one) are not written twice, so the log holds each value once, in send order.
    assert len(log) == len(set(log)), f"{len(log) - len(set(log))} records written twice"
    assert log == sorted(log, key=lambda v: int(v[1:]))
