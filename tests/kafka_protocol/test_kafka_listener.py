"""The Kafka listener against what no well-behaved client sends, over raw sockets to real
brokers: each bad request gets Kafka's error code or a closed connection, the log stays as
it was, and the broker keeps serving.

Requests are built with kio (tests/kafka_protocol/wire.py) exactly as a Kafka client would
build them, then damaged where the test says."""

from __future__ import annotations

import datetime
import os
import re
import struct
from pathlib import Path

import crc32c
import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.fetch.v10.request import FetchPartition as FetchPartitionV10
from kio.schema.fetch.v10.request import FetchRequest as FetchRequestV10
from kio.schema.fetch.v10.request import FetchTopic as FetchTopicV10
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.record_batch import build_batch
from tests.cluster.conftest import wait_until
from tests.kafka_protocol.wire import KafkaWire, request_frame

pytestmark = pytest.mark.timeout(120)

LATEST = -1


def wire(cluster: LocalCluster, broker_id: int) -> KafkaWire:
    return KafkaWire(cluster.broker_host(broker_id), cluster.broker_ports[broker_id])


def ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


def produce(topic: str, records: bytes, acks: int = -1, partition: int = 0) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=ms(10000),
        topic_data=(
            TopicProduceData(
                name=topic,
                partition_data=(PartitionProduceData(index=partition, records=records),),
            ),
        ),
    )


def produce_error(
    w: KafkaWire, request: ProduceRequest, correlation_id: int = 1
) -> tuple[int, int]:
    resp = w.call(request, correlation_id)
    p = resp.responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


def latest_offset(w: KafkaWire, topic: str) -> int:
    error, offset = list_latest(w, topic)
    assert error == 0
    return offset


def list_latest(w: KafkaWire, topic: str) -> tuple[int, int]:
    resp = w.call(
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name=topic,
                    partitions=(ListOffsetsPartition(partition_index=0, timestamp=LATEST),),
                ),
            ),
        )
    )
    p = resp.topics[0].partitions[0]
    return int(p.error_code), p.offset


def fetch_from_start(topic: str, offset: int = 0) -> FetchRequest:
    """Fetch v12 of partition 0 from `offset`, as a consumer (replica id -1)."""
    partition = FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    return FetchRequest(
        replica_id=-1,
        max_wait=ms(100),
        min_bytes=1,
        topics=(FetchTopic(topic=topic, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


def with_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def cut_short(frame: bytes) -> bytes:
    """The frame without its last bytes, its size prefix made to match: a request whose
    body ends before its fields do."""
    body = frame[4:-2]
    return struct.pack(">i", len(body)) + body


def readme_api_table() -> dict[int, tuple[int, int]]:
    """The README's table of Kafka APIs served: api key -> (min, max) version."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+)(?:-(\d+))? \|$", readme, re.MULTILINE)
    assert rows, "the README has no table of the Kafka APIs served"
    return {int(key): (int(low), int(high or low)) for _, key, low, high in rows}


def test_api_versions_answer_and_the_kip_511_fallback(cluster: LocalCluster) -> None:
    with wire(cluster, 1) as w:
        resp = w.call(ApiVersionsRequest(client_software_name="raw", client_software_version="1"))
        assert resp.error_code == 0
        served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert served == readme_api_table()  # the README's table says exactly this
        assert served[0] == (3, 13)  # Produce
        assert served[1] == (4, 17)  # Fetch
        assert served[32] == (1, 4)  # DescribeConfigs
        assert served[18] == (0, 3)  # ApiVersions
        assert served[11] == (0, 9)  # JoinGroup
        assert 24 not in served  # AddPartitionsToTxn: no transactions
        # An ApiVersions version from the future: a v0 answer, UNSUPPORTED_VERSION, ranges.
        frame = struct.pack(">hhih", 18, 99, 7, 3) + b"raw" + b"\x00" * 3
        w.send_raw(struct.pack(">i", len(frame)) + frame)
        answer = w.read_frame()
        assert answer is not None
        correlation_id, error = struct.unpack_from(">ih", answer)
        assert (correlation_id, error) == (7, ErrorCode.UNSUPPORTED_VERSION)
        # The connection stays usable.
        assert w.call(
            ApiVersionsRequest(client_software_name="raw", client_software_version="1"), 8
        )


@pytest.mark.parametrize(
    "bad",
    [
        # Transactions are not served.
        request_frame(ListTransactionsRequest(state_filters=(), producer_id_filters=())),
        cut_short(
            request_frame(
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                )
            )
        ),
        struct.pack(">i", 64) + os.urandom(64),
        struct.pack(">i", 200 * 1024 * 1024),  # over socket.request.max.bytes
    ],
    ids=["unserved-api", "truncated", "garbage", "oversized"],
)
def test_unreadable_requests_close_the_connection_and_the_broker_serves_on(
    cluster: LocalCluster, bad: bytes
) -> None:
    with wire(cluster, 1) as w:
        w.send_raw(bad)
        assert w.closed_by_broker()
    with wire(cluster, 1) as w:
        assert w.call(ApiVersionsRequest(client_software_name="raw", client_software_version="1"))


def test_produce_errors_are_kafkas_and_leave_the_log_unchanged(cluster: LocalCluster) -> None:
    with wire(cluster, 1) as w:
        created = w.call(
            CreateTopicsRequest(
                topics=(
                    CreatableTopic(
                        name="t", num_partitions=1, replication_factor=3, assignments=(), configs=()
                    ),
                ),
                timeout=ms(30000),
                validate_only=False,
            )
        )
        assert int(created.topics[0].error_code) == 0
        assert (created.topics[0].num_partitions, created.topics[0].replication_factor) == (1, 3)

    def leader() -> int:
        st = cluster.zk_client().get_partition_state(TopicPartition("t", 0))
        return -1 if st is None else st.leader

    wait_until(lambda: leader() > 0, 30, "a leader for t-0")
    leader_id = leader()
    follower_id = next(b for b in (1, 2, 3) if b != leader_id)
    good = build_batch([b"a", b"b"])
    corrupt = bytearray(good)
    corrupt[-1] ^= 1
    lying = bytearray(good)
    struct.pack_into(">i", lying, 23, 2)  # last offset delta 2, record count 3: one missing
    struct.pack_into(">i", lying, 57, 3)

    with wire(cluster, leader_id) as w:
        wait_until(lambda: list_latest(w, "t")[0] == 0, 30, "the leader to lead t-0")
        assert produce_error(w, produce("t", bytes(corrupt)))[0] == ErrorCode.CORRUPT_MESSAGE
        assert produce_error(w, produce("t", with_crc(lying)))[0] == ErrorCode.INVALID_RECORD
        assert produce_error(w, produce("t", good, acks=2))[0] == ErrorCode.INVALID_REQUIRED_ACKS
        assert produce_error(w, produce("nope", good))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produce_error(w, produce("t", good, partition=5))[0] == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        assert latest_offset(w, "t") == 0
        # Nothing bad reached the log; a good batch is stored at offset 0.
        assert produce_error(w, produce("t", good)) == (ErrorCode.NONE, 0)
        assert latest_offset(w, "t") == 2
        # acks=0: no answer, and the next request is answered in order.
        w.send_raw(request_frame(produce("t", good, acks=0), correlation_id=50))
        assert produce_error(w, produce("t", good), correlation_id=51) == (ErrorCode.NONE, 4)

        fetched = w.call(fetch_from_start("t"))
        part = fetched.responses[0].partitions[0]
        assert (part.error_code, part.high_watermark, part.last_stable_offset) == (0, 6, 6)
        records = part.records
        # Served as stored: the client's batch, base offset and leader epoch stamped.
        assert records[16 : len(good)] == good[16:]

    with wire(cluster, follower_id) as w:
        assert produce_error(w, produce("t", good))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        # Before v11 (no client metadata) only the leader serves a consumer's Fetch.
        old = w.call(
            FetchRequestV10(
                replica_id=-1,
                max_wait=ms(100),
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=(
                    FetchTopicV10(
                        topic="t",
                        partitions=(
                            FetchPartitionV10(
                                partition=0,
                                current_leader_epoch=-1,
                                fetch_offset=0,
                                log_start_offset=-1,
                                partition_max_bytes=1 << 20,
                            ),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            )
        )
        assert old.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        # From v11 a follower serves it too (KIP-392), up to the HW it knows; an offset past
        # its log end is out of range. A Fetch error comes with an empty record set, never a
        # null one (librdkafka cannot parse a null one, and would retry at once, forever),
        # and unknown offsets, as Kafka's (librdkafka then goes back to the leader).
        fetched = w.call(fetch_from_start("t", 1000))
        part = fetched.responses[0].partitions[0]
        assert (part.error_code, part.records) == (ErrorCode.OFFSET_OUT_OF_RANGE, b"")
        offsets = (part.high_watermark, part.last_stable_offset, part.log_start_offset)
        assert offsets == (-1, -1, -1)
        # Metadata for a missing topic, without auto-creation: UNKNOWN_TOPIC_OR_PARTITION.
        meta = w.call(
            MetadataRequest(
                topics=(MetadataRequestTopic(topic_id=None, name="missing"),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        assert [(t.name, int(t.error_code)) for t in meta.topics] == [
            ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        ]
        assert sorted(b.node_id for b in meta.brokers) == [1, 2, 3]
        # A name no topic can have (found by the fuzz test: it once failed the request).
        deleted = w.call(
            DeleteTopicsRequest(
                topics=(DeleteTopicState(name="bad/name", topic_id=None),), timeout=ms(5000)
            )
        )
        assert [(r.name, int(r.error_code)) for r in deleted.responses] == [
            ("bad/name", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        ]


def test_a_starting_broker_answers_clients_only_once_registered(cluster: LocalCluster) -> None:
    """As Kafka's socket server: a restarted broker takes clients' connections at once but
    answers their requests only once it has started (registered, and told of the cluster by
    the controller). Its metadata before that is empty, "no brokers", which sends librdkafka
    back to its bootstrap list (and could stall an idempotent producer)."""
    old = cluster.registrations()[3].epoch
    cluster.kill(3)
    # Its old registration lives on until the session expires (6 s): the new process waits
    # that long before it can register.
    cluster.start_broker(3, wait=False)
    host, port = cluster.broker_address(3)
    wait_until(lambda: can_connect(host, port), 30, "broker 3's listener")
    with KafkaWire(host, port, timeout=30) as wire:
        answer = wire.call(
            MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        registration = cluster.registrations().get(3)
    assert registration is not None and registration.epoch > old
    assert {b.node_id for b in answer.brokers} == {1, 2, 3}


def can_connect(host: str, port: int) -> bool:
    try:
        with KafkaWire(host, port, timeout=1):
            return True
    except OSError:
        return False
