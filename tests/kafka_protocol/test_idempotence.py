"""The idempotent producer (InitProducerId, KIP-98 without transactions) against real
brokers: a produce whose acknowledgement is lost is retried and not written twice (the
loss injected on a raw connection: the request is sent, the connection dropped before the
answer), and kafka-python works with its defaults (idempotence on). The confluent-kafka
kill -9 test (test_confluent_kafka.py) checks that a failover duplicates nothing."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.record_batch import RecordBatchBuilder
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic
from tests.kafka_protocol.test_kafka_listener import latest_offset, produce, produce_error
from tests.kafka_protocol.wire import KafkaWire, request_frame

pytestmark = pytest.mark.timeout(180)


def ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


def test_a_retry_after_a_lost_acknowledgement_is_not_written_twice(cluster: LocalCluster) -> None:
    """What an idempotent client does when a produce's answer never comes: the connection
    is gone, so it connects again and sends the same batch (same producer id, epoch and
    sequence). The first try was written; the retry is answered with its offsets."""
    create_topic(cluster.bootstrap_servers, "once", 1, 3, **{"min.insync.replicas": "2"})
    st = cluster.zk_client().get_partition_state(MkTopicPartition("once", 0))
    assert st is not None

    def connect() -> KafkaWire:
        return KafkaWire(cluster.broker_host(st.leader), cluster.broker_ports[st.leader])

    with connect() as w:
        init = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout=ms(60000)))
    assert init.error_code == 0 and init.producer_epoch == 0

    def batch(seq: int) -> bytes:
        b = RecordBatchBuilder(producer_id=init.producer_id, producer_epoch=0, base_sequence=seq)
        for i in range(10):
            b.append(b"v%d" % (seq + i), None, 1000)
        return b.build()

    lost = connect()
    lost.send_raw(request_frame(produce("once", batch(0)), correlation_id=1))
    with connect() as w:
        # The first try is written (its answer will never be read) ...
        wait_until(lambda: latest_offset(w, "once") == 10, 30, "the first try appended")
        lost.close()
        # ... so the retry is answered with its offsets, and nothing is appended.
        assert produce_error(w, produce("once", batch(0)), correlation_id=2) == (0, 0)
        assert produce_error(w, produce("once", batch(10)), correlation_id=3) == (0, 10)
        assert latest_offset(w, "once") == 20
        # A gap in the sequence is refused.
        assert produce_error(w, produce("once", batch(50)), correlation_id=4)[0] == (
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
    log = [m.value() for m in consume_from_beginning(cluster.bootstrap_servers, "once", 1)]
    assert log == [b"v%d" % i for i in range(20)]


def test_kafka_python_with_its_defaults(make_cluster: ClusterFactory) -> None:
    from kafka import KafkaProducer

    cluster = make_cluster()
    create_topic(cluster.bootstrap_servers, "kp-defaults", 1, 3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)  # idempotent
    futures = [producer.send("kp-defaults", b"d%d" % i) for i in range(100)]
    producer.flush(60)
    assert [f.get(timeout=30).offset for f in futures] == list(range(100))
    producer.close()
    log = [m.value() for m in consume_from_beginning(cluster.bootstrap_servers, "kp-defaults", 1)]
    assert log == [b"d%d" % i for i in range(100)]
