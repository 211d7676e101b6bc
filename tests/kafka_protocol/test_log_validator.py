"""What a leader does to the batches it is sent, as Kafka's LogValidator, seen from real
brokers: per-record errors in Produce responses (KIP-467: a batch refused for some of its
records is answered INVALID_RECORD, or INVALID_TIMESTAMP when timestamps are at fault, with
Kafka's summary message and each bad record's index in the batch and why, so a client can
tell the bad records from the good ones), and the topic configs behind it:
message.timestamp.type, message.timestamp.difference.max.ms, compression.type. Raw requests
read the responses as sent; librdkafka shows what a client makes of them."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    Producer,
)
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry
from kio.schema.produce.v8 import request as produce_v8
from kio.schema.produce.v9 import request as produce_v9
from kio.static.primitive import i16

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.storage import log_files
from minikafka.storage.record_batch import RecordBatchBuilder, build_batch
from tests.cluster.conftest import started_cluster, wait_until
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic
from tests.kafka_protocol.test_request_order import leader, wire
from tests.kafka_protocol.test_topic_configs import alter, describe

pytestmark = pytest.mark.timeout(180)

RECORDS = 100
KEYLESS = set(range(5, RECORDS, 10))  # 10 records of the 100 have no key


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("log-validator")) as cluster:
        yield cluster


def compacted_topic(cluster: LocalCluster) -> str:
    name = f"compact-{uuid.uuid4().hex[:8]}"
    create_topic(cluster.bootstrap_servers, name, 1, 3, **{"cleanup.policy": "compact"})
    return name


def batch() -> bytes:
    keys = [None if i in KEYLESS else b"k%d" % i for i in range(RECORDS)]
    return build_batch([b"v%d" % i for i in range(RECORDS)], keys=keys)


def produce_request(topic: str, records: bytes, version: int = 9) -> Any:
    """An acks=all Produce of one batch to partition 0, v8 or v9."""
    schema = produce_v8 if version == 8 else produce_v9
    return schema.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            schema.TopicProduceData(
                name=topic,
                partition_data=(schema.PartitionProduceData(index=0, records=records),),
            ),
        ),
    )


@pytest.mark.parametrize("version", [8, 9])  # the last legacy and the first flexible one
def test_a_batch_with_keyless_records_for_a_compacted_topic_names_each_of_them(
    shared: LocalCluster, version: int
) -> None:
    topic = compacted_topic(shared)
    request = produce_request(topic, batch(), version)
    with wire(shared, leader(shared, topic)) as w:
        (part,) = w.call(request).responses[0].partition_responses
    assert part.error_code == ErrorCode.INVALID_RECORD
    assert part.error_message == "One or more records have been rejected"
    why = f"Compacted topic cannot accept message without key in topic partition {topic}-0."
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (i, why) for i in sorted(KEYLESS)
    ]
    # Refused as a whole: nothing of the batch was appended.
    assert consume_from_beginning(shared.bootstrap_servers, topic, 1) == []


def test_librdkafka_tells_the_bad_records_from_the_good_ones_which_go_through_when_sent_again(
    shared: LocalCluster,
) -> None:
    """What librdkafka makes of the answer: the bad records of the refused batch fail with
    INVALID_RECORD, the others with an error saying another record of their batch was
    invalid; sent again, the good ones are written."""
    topic = compacted_topic(shared)
    reports: list[tuple[int, Any]] = []
    producer = Producer(
        {
            "bootstrap.servers": shared.bootstrap_servers,
            "linger.ms": 1000,  # the 100 records in one batch
            "enable.idempotence": False,
            "retries": 0,
        }
    )
    for i in range(RECORDS):
        key = None if i in KEYLESS else b"k%d" % i
        producer.produce(
            topic,
            b"v%d" % i,
            key,
            partition=0,
            on_delivery=lambda e, _m, i=i: reports.append((i, e)),
        )
    assert producer.flush(30) == 0
    assert len(reports) == RECORDS
    # The bad records are INVALID_RECORD; the others failed only for being in their batch
    # (librdkafka's _INVALID_DIFFERENT_RECORD): a client knows which ones to send again.
    codes = {i: e.code() if e is not None else None for i, e in reports}
    assert {i for i, c in codes.items() if c == KafkaError.INVALID_RECORD} == KEYLESS
    others = {c for i, c in codes.items() if i not in KEYLESS}
    assert others == {KafkaError._INVALID_DIFFERENT_RECORD}
    # The good records, sent again, are written; the topic holds exactly them.
    for i in sorted(set(range(RECORDS)) - KEYLESS):
        producer.produce(topic, b"v%d" % i, b"k%d" % i, partition=0)
    assert producer.flush(30) == 0
    values = [m.value() for m in consume_from_beginning(shared.bootstrap_servers, topic, 1)]
    assert values == [b"v%d" % i for i in range(RECORDS) if i not in KEYLESS]


# --- timestamps: message.timestamp.type and message.timestamp.difference.max.ms ------------


def produce_one(producer: Producer, topic: str, timestamp: int) -> Any:
    """One record with the producer's `timestamp`; its delivery report's (error, message)."""
    reports: list[tuple[Any, Any]] = []
    producer.produce(
        topic,
        b"x",
        partition=0,
        timestamp=timestamp,
        on_delivery=lambda e, m: reports.append((e, m)),
    )
    assert producer.flush(30) == 0
    return reports[0]


def test_log_append_time_is_the_leaders_clock_and_a_topic_switches_to_it_at_runtime(
    shared: LocalCluster,
) -> None:
    topic = f"stamped-{uuid.uuid4().hex[:8]}"
    create_topic(shared.bootstrap_servers, topic, 1, 3)
    producer = Producer({"bootstrap.servers": shared.bootstrap_servers, "acks": "all"})
    error, created = produce_one(producer, topic, 1000)
    assert error is None and created.timestamp() == (TIMESTAMP_CREATE_TIME, 1000)
    admin = AdminClient({"bootstrap.servers": shared.bootstrap_servers})
    alter(
        admin,
        topic,
        ConfigEntry(
            "message.timestamp.type", "LogAppendTime", incremental_operation=AlterConfigOpType.SET
        ),
    )
    assert describe(admin, topic)["message.timestamp.type"].value == "LogAppendTime"
    stamped: list[Any] = []

    def next_is_stamped() -> bool:
        before = time.time() * 1000
        error, m = produce_one(producer, topic, 1000)
        assert error is None
        stamped.append((before, m.timestamp(), time.time() * 1000))
        return m.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME

    # Every broker applies the change when ZooKeeper's notification reaches it.
    wait_until(next_is_stamped, 30, "a batch stamped with LogAppendTime")
    before, (_, appended_at), after = stamped[-1]
    assert before - 1000 <= appended_at <= after + 1000  # the broker's clock, not 1000
    # Consumers see each record's own type: the first as the producer set it, the last as
    # the leader stamped it (the produce response's log_append_time is what it stored).
    records = consume_from_beginning(shared.bootstrap_servers, topic, 1)
    assert records[0].timestamp() == (TIMESTAMP_CREATE_TIME, 1000)
    assert records[-1].timestamp() == (TIMESTAMP_LOG_APPEND_TIME, appended_at)


def test_records_too_far_from_the_leaders_clock_are_refused_one_by_one(
    shared: LocalCluster,
) -> None:
    topic = f"recent-{uuid.uuid4().hex[:8]}"
    create_topic(
        shared.bootstrap_servers, topic, 1, 3, **{"message.timestamp.difference.max.ms": "60000"}
    )
    now = int(time.time() * 1000)
    hour_ago = now - 3_600_000
    records = RecordBatchBuilder()
    for ts in (now, hour_ago, now):
        records.append(b"v", None, ts)
    request = produce_request(topic, records.build())
    with wire(shared, leader(shared, topic)) as w:
        (part,) = w.call(request).responses[0].partition_responses
    assert part.error_code == ErrorCode.INVALID_TIMESTAMP
    assert part.error_message == "One or more records have been rejected due to invalid timestamp"
    ((index, why),) = [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]
    assert index == 1 and why.startswith(
        f"Timestamp {hour_ago} of message with offset 1 is out of range"
    )
    # librdkafka fails the whole batch INVALID_TIMESTAMP (it tells bad records from good
    # ones only for INVALID_RECORD), and nothing of it is written.
    producer = Producer(
        {
            "bootstrap.servers": shared.bootstrap_servers,
            "linger.ms": 1000,
            "enable.idempotence": False,
            "retries": 0,
        }
    )
    codes: dict[int, Any] = {}
    for i, ts in enumerate((now, hour_ago, now)):
        producer.produce(
            topic,
            b"v",
            partition=0,
            timestamp=ts,
            on_delivery=lambda e, _m, i=i: codes.__setitem__(i, e and e.code()),
        )
    assert producer.flush(30) == 0
    assert codes[1] == KafkaError.INVALID_TIMESTAMP
    error, m = produce_one(producer, topic, now)
    assert error is None and m.offset() == 0  # nothing of the refused batches was written


# --- compression.type ---------------------------------------------------------------------


@pytest.mark.parametrize(("topic_codec", "stored"), [("zstd", 4), ("uncompressed", 0)])
def test_a_topics_compression_type_is_what_every_replica_stores(
    shared: LocalCluster, topic_codec: str, stored: int
) -> None:
    topic = f"codec-{uuid.uuid4().hex[:8]}"
    create_topic(shared.bootstrap_servers, topic, 1, 3, **{"compression.type": topic_codec})
    producer = Producer(
        {
            "bootstrap.servers": shared.bootstrap_servers,
            "acks": "all",
            "compression.type": "gzip",
            "linger.ms": 50,
        }
    )
    for i in range(50):
        producer.produce(topic, b"value-%d" % i * 20, b"key-%d" % i, partition=0)
    assert producer.flush(30) == 0
    tp = MkTopicPartition(topic, 0)

    def replicated() -> bool:
        return all(
            sum(h.record_count for h, _ in log_files.read_batches(shared.log_dir(b), tp)) == 50
            for b in shared.broker_ids
        )

    wait_until(replicated, 30, "every replica holding the 50 records")
    for b in shared.broker_ids:
        codecs = {h.attributes & 0x07 for h, _ in log_files.read_batches(shared.log_dir(b), tp)}
        assert codecs == {stored}, f"broker {b}"
    records = consume_from_beginning(shared.bootstrap_servers, topic, 1)
    assert [(m.key(), m.value()) for m in records] == [
        (b"key-%d" % i, b"value-%d" % i * 20) for i in range(50)
    ]


# --- AlterConfigs (the non-incremental API, key 33) ---------------------------------------


def test_alter_configs_replaces_every_override_of_a_topic(shared: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ConfigSource
    from kafka.admin import ConfigResource as KpConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    topic = f"replaced-{uuid.uuid4().hex[:8]}"
    create_topic(
        shared.bootstrap_servers,
        topic,
        1,
        3,
        **{"retention.ms": "1000000", "max.message.bytes": "50000"},
    )
    admin = AdminClient({"bootstrap.servers": shared.bootstrap_servers})
    # confluent-kafka's alter_configs sends AlterConfigs: what it names is all there is.
    resource = ConfigResource("topic", topic, set_config={"retention.ms": "7200000"})
    admin.alter_configs([resource])[resource].result(timeout=30)
    configs = describe(admin, topic)
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "7200000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert configs["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    # kafka-python's, told to send AlterConfigs (it sends IncrementalAlterConfigs when a
    # broker serves both); it sends the topic's other overrides along, knowing they would
    # otherwise go.
    kp = KafkaAdminClient(bootstrap_servers=shared.bootstrap_servers)
    try:
        kp.alter_configs(
            incremental=False,
            config_resources=[
                KpConfigResource(
                    ConfigResourceType.TOPIC, topic, configs={"cleanup.policy": "compact"}
                )
            ],
        )
    finally:
        kp.close()
    after = {"cleanup.policy": "compact", "retention.ms": "7200000"}
    assert shared.zk_client().get_topic_config(topic) == after
    # Refused as a whole, nothing changed: an unknown name, an invalid value.
    for bad in ({"retention.ms": "1", "no.such.config": "1"}, {"compression.type": "brotli"}):
        resource = ConfigResource("topic", topic, set_config=bad)
        with pytest.raises(KafkaException) as refused:
            admin.alter_configs([resource])[resource].result(timeout=30)
        assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert shared.zk_client().get_topic_config(topic) == after


# --- what clients read back: authorized operations (KIP-430) ------------------------------


def test_clients_asking_for_authorized_operations_get_every_one_a_resource_supports(
    shared: LocalCluster,
) -> None:
    """No authorizer: every operation, as Kafka answers (Metadata for topics,
    DescribeCluster, DescribeGroups), as librdkafka decodes the bit fields (the table
    itself is held to Kafka's figures in tests/unit/test_acl_operations.py)."""
    from confluent_kafka import Consumer, TopicCollection
    from confluent_kafka.admin import AclOperation

    from minikafka.security.operations import SUPPORTED_OPERATIONS, ResourceType

    def expected(resource: ResourceType) -> set[AclOperation]:
        return {AclOperation[op.name] for op in SUPPORTED_OPERATIONS[resource]}

    topic = f"ops-{uuid.uuid4().hex[:8]}"
    create_topic(shared.bootstrap_servers, topic, 1, 3)
    admin = AdminClient({"bootstrap.servers": shared.bootstrap_servers})
    described = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
    topic_ops = set(described[topic].result(timeout=30).authorized_operations)
    assert topic_ops == expected(ResourceType.TOPIC)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert set(cluster.authorized_operations) == expected(ResourceType.CLUSTER)
    # Not asked: none reported.
    assert not admin.describe_cluster().result(timeout=30).authorized_operations
    group = f"ops-{uuid.uuid4().hex[:8]}"
    member = Consumer({"bootstrap.servers": shared.bootstrap_servers, "group.id": group})
    member.subscribe([topic])
    try:
        wait_until(lambda: member.poll(0.2) is None and bool(member.assignment()), 60, "joined")
        (g,) = admin.describe_consumer_groups([group], include_authorized_operations=True).values()
        assert set(g.result(timeout=30).authorized_operations) == expected(ResourceType.GROUP)
    finally:
        member.close()


def test_list_offsets_max_timestamp_names_the_record_with_the_largest_timestamp(
    shared: LocalCluster,
) -> None:
    """KIP-734, as confluent-kafka's AdminClient asks it (ListOffsets v7)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    topic = f"maxts-{uuid.uuid4().hex[:8]}"
    create_topic(shared.bootstrap_servers, topic, 1, 3)
    producer = Producer({"bootstrap.servers": shared.bootstrap_servers, "acks": "all"})
    for ts in (1000, 9000, 3000, 9000, 2000):  # the first of the two largest counts
        produce_one(producer, topic, ts)
    admin = AdminClient({"bootstrap.servers": shared.bootstrap_servers})
    tp = TopicPartition(topic, 0)
    answer = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(timeout=30)
    assert (answer.offset, answer.timestamp) == (1, 9000)
    latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(timeout=30)
    assert latest.offset == 5
