"""The blocking facade, from plain (non-async) code."""

import re
from collections.abc import Iterator

import pytest

from minikafka.client import (
    NewPartitions,
    NewTopic,
    SyncAdmin,
    SyncConsumer,
    SyncProducer,
    TopicPartition,
)
from minikafka.client.errors import IllegalStateError
from minikafka.client.sync import ProducerRecord
from minikafka.protocol.errors import (
    InvalidPartitionsError,
    KafkaError,
    TopicAlreadyExistsError,
)
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


def test_send_many_queues_in_one_call_and_completes_with_every_metadata(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=2))
    with SyncProducer(threaded.cluster.bootstrap, linger_ms=5) as producer:
        records = [ProducerRecord("t", f"v{i}", partition=i % 2) for i in range(6)]
        metadata = producer.send_many(records).result(timeout=10)
        assert [(m.partition, m.offset) for m in metadata] == [
            (0, 0),
            (1, 0),
            (0, 1),
            (1, 1),
            (0, 2),
            (1, 2),
        ]


def test_send_many_stops_at_the_first_record_refused_at_once(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    with SyncProducer(threaded.cluster.bootstrap, max_block_ms=200) as producer:
        records = [ProducerRecord("t", b"ok"), ProducerRecord("ghost", b"x")]
        records += [ProducerRecord("ghost", b"x")] * 50  # not waited for one by one
        fut = producer.send_many(records)
        with pytest.raises(KafkaError, match="Topic ghost does not exist"):
            fut.result(timeout=5)
        producer.flush()
    with SyncConsumer(threaded.cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("t", 0)])
        assert consumer.end_offsets([TopicPartition("t", 0)]) == {TopicPartition("t", 0): 1}


def test_sync_admin_adds_partitions(threaded):
    with SyncAdmin(threaded.cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("t", 2, 3)])
        admin.create_partitions({"t": NewPartitions(4)}, None, True)  # validate only
        assert len(admin.describe_topics(["t"])[0].partitions) == 2
        admin.create_partitions({"t": NewPartitions(4)})
        assert [p.partition for p in admin.describe_topics(["t"])[0].partitions] == [0, 1, 2, 3]
        with pytest.raises(InvalidPartitionsError, match=r"Topic already has 4 partitions\."):
            admin.create_partitions({"t": NewPartitions(4)})


def test_clients_take_a_dict_of_kafka_config_names(threaded):
    """As confluent-kafka's clients do, and as the CLI's --producer-property does: dotted
    names, string or native values."""
    bootstrap = threaded.cluster.bootstrap
    with SyncAdmin({"bootstrap.servers": bootstrap, "request.timeout.ms": "5000"}) as admin:
        admin.create_topics([NewTopic("t", 1, 3)])
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": "5", "retries": 3}
    with SyncProducer(config) as producer:
        assert producer._producer.acks == -1
        assert producer._producer._retries == 3
        producer.send("t", b"v").result(timeout=10)
    consumer_config = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
    with SyncConsumer(consumer_config, max_poll_records=1) as consumer:
        consumer.assign([TopicPartition("t", 0)])
        assert [r.value for r in consumer.poll(5000)] == [b"v"]


@pytest.mark.parametrize(
    ("config", "kwargs", "error", "message"),
    [
        ({"linger.msec": 5}, {}, ValueError, "unknown producer property 'linger.msec' (known: "),
        ({"linger.ms": "soon"}, {}, ValueError, "linger.ms must be an integer, not 'soon'"),
        ({"linger.ms": 5}, {"linger_ms": 5}, TypeError, "linger.ms given both"),
        ({"compression.type": "brotli"}, {}, ValueError, "compression.type must be one of"),
    ],
)
def test_a_bad_config_dict_is_refused(threaded, config, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        SyncProducer({"bootstrap.servers": threaded.cluster.bootstrap, **config}, **kwargs)
