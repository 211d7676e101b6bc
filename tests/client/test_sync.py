"""The blocking facade, from plain (non-async) code."""

from collections.abc import Iterator

import pytest

from minikafka.client import NewTopic, SyncAdmin, SyncConsumer, SyncProducer, TopicPartition
from minikafka.client.errors import IllegalStateError
from minikafka.protocol.errors import TopicAlreadyExistsError
from tests.client.fake_broker import ThreadedCluster


@pytest.fixture
def threaded() -> Iterator[ThreadedCluster]:
    t = ThreadedCluster(3)
    yield t
    t.close()


def test_admin_producer_and_consumer_round_trip(threaded):
    bootstrap = threaded.cluster.bootstrap
    with SyncAdmin(bootstrap) as admin:
        admin.create_topics([NewTopic("t", 2, 3)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("t", 2, 3)])
        assert admin.list_topics() == ["t"]
        assert admin.describe_cluster().controller_id == 1
    with SyncProducer(bootstrap, linger_ms=5) as producer:
        futures = [producer.send("t", f"v{i}", partition=i % 2) for i in range(4)]
        producer.flush()
        assert [f.result().partition for f in futures] == [0, 1, 0, 1]
        assert producer.send_and_wait("t", b"last", partition=0).offset == 2
    with SyncConsumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("t", 0)])
        assert consumer.position(TopicPartition("t", 0)) == 0
        values = []
        while len(values) < 3:
            values.extend(r.value for r in consumer.poll(5000))
        assert values == [b"v0", b"v2", b"last"]
        assert consumer.end_offsets([TopicPartition("t", 0)]) == {TopicPartition("t", 0): 3}


def test_a_closed_sync_producer_refuses_to_send(threaded):
    producer = SyncProducer(threaded.cluster.bootstrap)
    producer.close()
    producer.close()  # twice is fine
    with pytest.raises(IllegalStateError):
        producer.send("t", b"v")
