"""Per-record errors in Produce responses (KIP-467), from real brokers: a batch refused for
some of its records is answered INVALID_RECORD with Kafka's summary message and, for each
bad record, its index in the batch and why, so that a client can tell the bad records from
the good ones. Raw requests read the response as sent; librdkafka shows what a client makes
of it."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from kio.schema.produce.v8.request import (
    PartitionProduceData as PartitionProduceDataV8,
)
from kio.schema.produce.v8.request import ProduceRequest as ProduceRequestV8
from kio.schema.produce.v8.request import TopicProduceData as TopicProduceDataV8
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16

from minikafka.cluster import LocalCluster
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.record_batch import build_batch
from tests.cluster.conftest import started_cluster
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic
from tests.kafka_protocol.test_request_order import leader, wire

pytestmark = pytest.mark.timeout(180)

RECORDS = 100
KEYLESS = set(range(5, RECORDS, 10))  # 10 records of the 100 have no key


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("record-errors")) as cluster:
        yield cluster


def compacted_topic(cluster: LocalCluster) -> str:
    name = f"compact-{uuid.uuid4().hex[:8]}"
    create_topic(cluster.bootstrap_servers, name, 1, 3, **{"cleanup.policy": "compact"})
    return name


def batch() -> bytes:
    keys = [None if i in KEYLESS else b"k%d" % i for i in range(RECORDS)]
    return build_batch([b"v%d" % i for i in range(RECORDS)], keys=keys)


@pytest.mark.parametrize("version", [8, 9])  # the last legacy and the first flexible one
def test_a_batch_with_keyless_records_for_a_compacted_topic_names_each_of_them(
    shared: LocalCluster, version: int
) -> None:
    topic = compacted_topic(shared)
    timeout = datetime.timedelta(seconds=30)
    request: Any
    if version == 8:
        request = ProduceRequestV8(
            transactional_id=None,
            acks=i16(-1),
            timeout=timeout,
            topic_data=(
                TopicProduceDataV8(
                    name=topic,
                    partition_data=(PartitionProduceDataV8(index=0, records=batch()),),
                ),
            ),
        )
    else:
        request = ProduceRequest(
            transactional_id=None,
            acks=i16(-1),
            timeout=timeout,
            topic_data=(
                TopicProduceData(
                    name=topic, partition_data=(PartitionProduceData(index=0, records=batch()),)
                ),
            ),
        )
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
