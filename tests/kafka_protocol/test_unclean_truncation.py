"""A consumer's position after an unclean leader election, end to end: the new leader's log
is shorter than what the consumer read from the old one, and has diverged since. librdkafka
asks the new leader, with OffsetForLeaderEpoch, where the epoch of its last fetched record
ends (KIP-320); the broker's answer (the largest epoch it has at or below that one, and
where it ends) is where the logs diverge, and the consumer goes on from there, reading
what the new leader wrote, instead of skipping it, starting over, or reading from an
offset that names other records."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.common import TopicPartition as MkTopicPartition
from tests.cluster.conftest import ClusterFactory, wait_until

pytestmark = pytest.mark.timeout(300)

TOPIC = "diverged"
TP = MkTopicPartition(TOPIC, 0)


def produce(bootstrap: str, values: list[bytes], acks: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False})
    errors: list[Any] = []
    for v in values:
        producer.produce(TOPIC, v, partition=0, on_delivery=lambda e, _m: e and errors.append(e))
    assert producer.flush(60) == 0 and not errors, errors


def test_a_consumer_detects_the_truncation_of_an_unclean_election_and_reads_the_new_log(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    bootstrap = cluster.bootstrap_servers
    zk = cluster.zk_client()
    first, second = 1, 2
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics(
        [
            NewTopic(
                TOPIC,
                1,
                replica_assignment=[[first, second]],
                config={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"},
            )
        ]
    )[TOPIC].result(timeout=60)

    def state() -> tuple[int, list[int], int]:
        st = zk.get_partition_state(TP)
        return (-1, [], -1) if st is None else (st.leader, list(st.isr), st.leader_epoch)

    wait_until(lambda: state()[:2] == (first, [first, second]), 60, "both replicas in sync")
    produce(bootstrap, [b"both-%d" % i for i in range(10)], "all")
    # The second replica goes (its session expires: out of the ISR); the first alone takes
    # ten more records.
    cluster.kill(second)
    wait_until(lambda: state()[1] == [first], 60, "the ISR without the second replica")
    produce(bootstrap, [b"first-only-%d" % i for i in range(10)], "1")

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "truncation",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        read: list[tuple[int, bytes]] = []
        errors: list[KafkaError] = []

        def poll_until(done: Any) -> bool:
            msg = consumer.poll(0.2)
            if msg is not None:
                if msg.error():
                    errors.append(msg.error())
                else:
                    read.append((msg.offset(), msg.value()))
            return bool(done())

        wait_until(lambda: poll_until(lambda: len(read) == 20), 60, "the first leader's log")
        assert read[-1] == (19, b"first-only-9")
        old_epoch = state()[2]

        # The first leader dies; the second comes back and, no ISR member being alive, is
        # elected uncleanly with its 10 records, and takes 5 new ones at offsets 10-14.
        cluster.kill(first)
        wait_until(lambda: state()[0] == -1, 60, "the partition offline")
        cluster.restart(second)
        wait_until(lambda: state()[0] == second and state()[2] > old_epoch, 60, "unclean election")
        produce(bootstrap, [b"new-%d" % i for i in range(5)], "all")

        wait_until(lambda: poll_until(lambda: len(read) == 25), 90, "the new leader's records")
        assert read[20:] == [(10 + i, b"new-%d" % i) for i in range(5)]
        # Straight on from the divergence point: with auto.offset.reset=earliest, a consumer
        # that had only met OFFSET_OUT_OF_RANGE would have started over from offset 0.
        assert errors == []
    finally:
        consumer.close()
