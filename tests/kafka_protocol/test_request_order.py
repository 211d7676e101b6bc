"""One connection's requests are processed and answered in the order they were sent, as
Kafka guarantees: real brokers and ZooKeeper, requests pipelined over raw sockets (all
written before any answer is read) and librdkafka's asynchronous commits. A request must
never overtake an earlier one, in its effect (an older commit overwriting a newer one, a
produce appended before an earlier one) or in its answer (a read not seeing the write
sent before it on the same connection)."""

from __future__ import annotations

import datetime
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i8, i32, i64

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.record_batch import build_batch, decode_all
from tests.cluster.conftest import started_cluster, wait_until
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic
from tests.kafka_protocol.wire import KafkaWire, request_frame

pytestmark = pytest.mark.timeout(180)

COMMITS = 50


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("order")) as cluster:
        yield cluster


def new_topic(cluster: LocalCluster) -> str:
    name = f"order-{uuid.uuid4().hex[:8]}"
    create_topic(cluster.bootstrap_servers, name, 1, 3)
    return name


def leader(cluster: LocalCluster, topic: str) -> int:
    """The leader of `topic`-0, once it knows it leads (its metadata says so: the
    controller's UpdateMetadata follows its LeaderAndIsr on the same connection)."""

    def current() -> int:
        st = cluster.zk_client().get_partition_state(MkTopicPartition(topic, 0))
        return -1 if st is None else st.leader

    def knows(broker_id: int) -> bool:
        with wire(cluster, broker_id) as w:
            resp = w.call(
                MetadataRequest(
                    topics=(MetadataRequestTopic(name=topic, topic_id=None),),
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                )
            )
        partitions = resp.topics[0].partitions
        return bool(partitions) and partitions[0].leader_id == broker_id

    wait_until(lambda: current() > 0 and knows(current()), 30, f"a leader for {topic}-0")
    return current()


def wire(cluster: LocalCluster, broker_id: int) -> KafkaWire:
    return KafkaWire(cluster.broker_host(broker_id), cluster.broker_ports[broker_id])


def coordinator(cluster: LocalCluster, group: str) -> int:
    """The group's coordinator, asked as a client asks (the first request creates the
    offsets topic: COORDINATOR_NOT_AVAILABLE until it has leaders)."""
    found: list[int] = []

    def ask() -> bool:
        with wire(cluster, 1) as w:
            resp = w.call(FindCoordinatorRequest(key=group, key_type=i8(0)))
        if resp.error_code == ErrorCode.NONE:
            found.append(int(resp.node_id))
        return bool(found)

    wait_until(ask, 60, f"a coordinator for {group}")
    return found[0]


def commit(group: str, topic: str, offset: int) -> OffsetCommitRequest:
    """A commit of a group with no members (generation -1), as an admin or a consumer
    managing its own partitions sends it."""
    partition = OffsetCommitRequestPartition(
        partition_index=i32(0), committed_offset=i64(offset), committed_metadata=None
    )
    return OffsetCommitRequest(
        group_id=group,
        member_id="",
        topics=(OffsetCommitRequestTopic(name=topic, partitions=(partition,)),),
    )


def offset_fetch(group: str, topic: str) -> OffsetFetchRequest:
    return OffsetFetchRequest(
        group_id=group,
        topics=(OffsetFetchRequestTopic(name=topic, partition_indexes=(i32(0),)),),
    )


def produce(topic: str, values: list[bytes], acks: int) -> ProduceRequest:
    """One batch without a producer id (no idempotence: nothing but the order of arrival
    puts it after the batches sent before it)."""
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name=topic,
                partition_data=(PartitionProduceData(index=0, records=build_batch(values)),),
            ),
        ),
    )


def latest_offset(topic: str) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=i32(-1),
        isolation_level=i8(0),
        topics=(
            ListOffsetsTopic(
                name=topic,
                partitions=(ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),),
            ),
        ),
    )


def fetch_from_start(topic: str) -> FetchRequest:
    partition = FetchPartition(partition=i32(0), fetch_offset=i64(0), partition_max_bytes=1 << 20)
    return FetchRequest(
        replica_id=i32(-1),
        max_wait=datetime.timedelta(milliseconds=0),
        min_bytes=i32(1),
        topics=(FetchTopic(topic=topic, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


def committed(cluster: LocalCluster, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=30)
        return int(tp.offset)
    finally:
        c.close()


def test_pipelined_offset_commits_take_effect_in_the_order_sent(shared: LocalCluster) -> None:
    topic, group = new_topic(shared), f"g-{uuid.uuid4().hex[:8]}"
    with wire(shared, coordinator(shared, group)) as w:
        for round_ in range(3):
            offsets = range(round_ * COMMITS + 1, (round_ + 1) * COMMITS + 1)
            answers = w.pipeline([commit(group, topic, o) for o in offsets])
            assert [a.topics[0].partitions[0].error_code for a in answers] == [0] * COMMITS
            (fetched,) = w.call(offset_fetch(group, topic), 999).topics
            # The last commit sent is the one that stays: no older one overwrote it.
            assert fetched.partitions[0].committed_offset == offsets[-1]
    assert committed(shared, group, topic) == 3 * COMMITS


def test_pipelined_produces_without_idempotence_are_appended_in_the_order_sent(
    shared: LocalCluster,
) -> None:
    topic = new_topic(shared)
    # acks all, 1 and 0 alternate: an acks=0 batch must not overtake an acks=all one that
    # waits for its ISR, nor be answered.
    requests = [produce(topic, [b"%d" % i], acks=(-1, 1, 0)[i % 3]) for i in range(60)]
    with wire(shared, leader(shared, topic)) as w:
        w.send_raw(b"".join(request_frame(r, i) for i, r in enumerate(requests)))
        answers = [w.read_response(r, i) for i, r in enumerate(requests) if r.acks != 0]
    parts = [a.responses[0].partition_responses[0] for a in answers]
    assert [p.error_code for p in parts] == [0] * 40
    # An answered request's offset is its place in the sending order.
    assert [p.base_offset for p in parts] == [i for i in range(60) if i % 3 != 2]
    values = [m.value() for m in consume_from_beginning(shared.bootstrap_servers, topic, 1)]
    assert values == [b"%d" % i for i in range(60)]


def test_pipelined_reads_see_the_writes_sent_before_them(shared: LocalCluster) -> None:
    topic, group = new_topic(shared), f"g-{uuid.uuid4().hex[:8]}"
    with wire(shared, leader(shared, topic)) as w:
        # The produce waits for every ISR replica before it is answered; the ListOffsets
        # and the Fetch behind it are processed only after that, so they see its records
        # below the high watermark.
        produced, listed, fetched = w.pipeline(
            [
                produce(topic, [b"a", b"b", b"c"], acks=-1),
                latest_offset(topic),
                fetch_from_start(topic),
            ]
        )
    assert produced.responses[0].partition_responses[0].error_code == 0
    assert listed.topics[0].partitions[0].offset == 3
    (part,) = fetched.responses[0].partitions
    assert part.high_watermark == 3
    assert [r.value for r in decode_all(part.records)] == [b"a", b"b", b"c"]
    with wire(shared, coordinator(shared, group)) as w:
        answers = w.pipeline(
            [
                commit(group, topic, 7),
                offset_fetch(group, topic),
                commit(group, topic, 9),
                offset_fetch(group, topic),
            ]
        )
    assert [a.topics[0].partitions[0].committed_offset for a in answers[1::2]] == [7, 9]


def test_librdkafka_asynchronous_commits_leave_the_last_one_committed(
    shared: LocalCluster,
) -> None:
    topic, group = new_topic(shared), f"g-{uuid.uuid4().hex[:8]}"
    coordinator(shared, group)  # the offsets topic exists before the clock matters
    acknowledged: list[int] = []
    errors: list[Any] = []
    done = threading.Event()

    def on_commit(err: Any, partitions: list[TopicPartition]) -> None:
        if err is not None:
            errors.append(err)
        acknowledged.extend(p.offset for p in partitions if p.error is None)
        if len(acknowledged) + len(errors) >= COMMITS:
            done.set()

    consumer = Consumer(
        {
            "bootstrap.servers": shared.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "on_commit": on_commit,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        for offset in range(1, COMMITS + 1):
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=True)
        wait_until(
            lambda: consumer.poll(0.1) is None and done.is_set(), 60, "every commit's answer"
        )
        assert errors == []
        assert sorted(acknowledged) == list(range(1, COMMITS + 1))
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        assert tp.offset == COMMITS
    finally:
        consumer.close()
