"""DeleteRecords (Kafka API 21) and `minikafka delete-records` against a real 3-broker
cluster, judged by librdkafka: the log start moves on the leader and, before the answer,
on every live follower (Kafka's DelayedDeleteRecords); consumers below it get
OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST answers it, the segments wholly below it go, and
every acknowledged record above it is still there. An offset beyond the high watermark is
OFFSET_OUT_OF_RANGE and changes nothing."""

from __future__ import annotations

import asyncio
import datetime
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.client.kafka_wire import KafkaConnection
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from tests.cluster.conftest import started_cluster, wait_until
from tests.cluster.helpers import (
    bootstrap,
    consuming,
    create_topic,
    deliver,
    http_get,
    producing,
    read_records,
    run_cli,
)

pytestmark = pytest.mark.timeout(240)

OUT_OF_RANGE_TEXT = (
    "org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not "
    "within the range of offsets maintained by the server."
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Retention runs often: the segments below a new log start go within a second.
    overrides = {"log.retention.check.interval.ms": "300", "log.segment.delete.delay.ms": "0"}
    with started_cluster(tmp_path_factory.mktemp("delete-records"), overrides) as cluster:
        yield cluster


def new_topic(cluster: LocalCluster, records: int) -> str:
    """A topic of one partition on all three brokers, small segments, `records` records
    acknowledged by every replica (acks=all), values b"v<offset>"."""
    name = f"dr-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, name, 1, 3, {"segment.bytes": "1024"}))
    offsets: list[int | None] = []
    with producing(bootstrap(cluster)) as producer:
        for start in range(0, records, 10):  # batches of 10 (each delivery flushes)
            values = [f"v{i}".encode() for i in range(start, min(records, start + 10))]
            delivered = deliver(producer, name, values, partitions=[0] * len(values))
            offsets += [m.offset() for m in delivered]
    assert offsets == list(range(records))
    return name


def partition_view(cluster: LocalCluster, broker_id: int, topic: str) -> dict[str, Any]:
    status, body = http_get(cluster.admin_url(broker_id) + f"/v1/partitions?topic={topic}")
    assert status == 200, body
    (p,) = json.loads(body)["partitions"]
    return p  # type: ignore[no-any-return]


def leader_of(cluster: LocalCluster, topic: str) -> int:
    st = cluster.zk_client().get_partition_state(TopicPartition(topic, 0))
    assert st is not None
    return st.leader


def delete_records(
    cluster: LocalCluster, tmp_path: Path, partitions: list[dict[str, Any]]
) -> CompletedProcess[str]:
    spec = tmp_path / f"offsets-{uuid.uuid4().hex[:6]}.json"
    spec.write_text(json.dumps({"partitions": partitions, "version": 1}))
    return run_cli(
        "delete-records", "--bootstrap-server", bootstrap(cluster), "--offset-json-file", str(spec)
    )


def watermarks(cluster: LocalCluster, topic: str) -> tuple[int, int]:
    """ListOffsets EARLIEST and LATEST as librdkafka asks the leader."""
    with consuming(bootstrap(cluster)) as consumer:
        low, high = consumer.get_watermark_offsets(
            KafkaTopicPartition(topic, 0), timeout=30, cached=False
        )
    return low, high


def segment_bases(cluster: LocalCluster, broker_id: int, topic: str) -> list[int]:
    d = cluster.log_dir(broker_id) / f"{topic}-0"
    return sorted(int(p.name.split(".")[0]) for p in d.glob("*.log"))


def test_delete_records_moves_the_log_start_on_the_leader_and_every_follower(
    shared: LocalCluster, tmp_path: Path
) -> None:
    cluster = shared
    topic = new_topic(cluster, 200)
    leader = leader_of(cluster, topic)
    assert segment_bases(cluster, leader, topic)[0] == 0
    result = delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": 120}])
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stdout == (
        "Executing records delete operation\n"
        "Records delete operation completed:\n"
        f"partition: {topic}-0\tlow_watermark: 120\n"
    )
    # Answered once every replica's log start got there: the followers have it already.
    for b in cluster.broker_ids:
        assert partition_view(cluster, b, topic)["log_start_offset"] == 120, b
    assert watermarks(cluster, topic) == (120, 200)

    # The retention pass deletes the segments wholly below the new start, on every replica.
    def segments_gone() -> bool:
        return all(0 < segment_bases(cluster, b, topic)[0] <= 120 for b in cluster.broker_ids)

    wait_until(segments_gone, 30, "the segments below offset 120 to be deleted")

    # Every acknowledged record above the new start is still there, in order.
    got = read_records(bootstrap(cluster), topic, 80)
    assert [(r.offset, r.value) for r in got] == [(o, f"v{o}".encode()) for o in range(120, 200)]

    # Below it: OFFSET_OUT_OF_RANGE (librdkafka's auto.offset.reset=error shows it).
    with consuming(bootstrap(cluster), {"auto.offset.reset": "error"}) as consumer:
        consumer.assign([KafkaTopicPartition(topic, 0, 50)])
        msg = None
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None:
                break
        assert msg is not None and msg.error() is not None
        err = msg.error()
        assert err.code() == KafkaError._AUTO_OFFSET_RESET, err
        assert "Offset out of range" in err.str(), err

    # A follower that becomes leader answers the new start (the old leader shut down).
    cluster.terminate(leader)
    try:
        wait_until(lambda: leader_of(cluster, topic) not in (leader, -1), 30, "another leader")
        assert watermarks(cluster, topic) == (120, 200)
    finally:
        cluster.start_broker(leader)


def test_an_offset_beyond_the_high_watermark_changes_nothing(
    shared: LocalCluster, tmp_path: Path
) -> None:
    cluster = shared
    topic = new_topic(cluster, 10)
    result = delete_records(
        cluster,
        tmp_path,
        [
            {"topic": topic, "partition": 0, "offset": 11},
            {"topic": "no-such-topic", "partition": 0, "offset": 1},
        ],
    )
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\terror: {OUT_OF_RANGE_TEXT}",
    ]
    assert lines[3].startswith("partition: no-such-topic-0\terror: ")
    assert "UnknownTopicOrPartitionException" in lines[3]
    assert watermarks(cluster, topic) == (0, 10)
    for b in cluster.broker_ids:
        assert partition_view(cluster, b, topic)["log_start_offset"] == 0

    # -1: up to the high watermark (every record deleted); a lower offset later: no change.
    result = delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": -1}])
    assert result.stdout.splitlines()[-1] == f"partition: {topic}-0\tlow_watermark: 10"
    result = delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": 4}])
    assert result.stdout.splitlines()[-1] == f"partition: {topic}-0\tlow_watermark: 10"
    assert watermarks(cluster, topic) == (10, 10)


def test_a_follower_that_does_not_fetch_times_the_request_out(shared: LocalCluster) -> None:
    """DelayedDeleteRecords: the leader's log start moves at once, the answer waits for the
    followers' and is REQUEST_TIMED_OUT when one does not get there within the timeout."""
    from kio.schema.delete_records.v2.request import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsTopic,
    )
    from kio.schema.types import TopicName
    from kio.static.primitive import i32, i32Timedelta, i64

    cluster = shared
    topic = new_topic(cluster, 30)
    leader = leader_of(cluster, topic)
    follower = next(b for b in cluster.broker_ids if b != leader)
    request = DeleteRecordsRequest(
        topics=(
            DeleteRecordsTopic(
                name=TopicName(topic),
                partitions=(DeleteRecordsPartition(partition_index=i32(0), offset=i64(20)),),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=1500)),
    )

    async def call() -> Any:
        host, port = cluster.broker_address(leader)
        conn = KafkaConnection(host, port, client_id="delete-records-test")
        try:
            return await conn.call(request, timeout_s=30)
        finally:
            await conn.close()

    cluster.pause(follower)
    try:
        response = asyncio.run(call())
    finally:
        cluster.resume(follower)
    ((p,),) = [t.partitions for t in response.topics]
    assert int(p.error_code) == ErrorCode.REQUEST_TIMED_OUT
    assert partition_view(cluster, leader, topic)["log_start_offset"] == 20
    # Once it fetches again it catches up with the new start.
    wait_until(
        lambda: partition_view(cluster, follower, topic)["log_start_offset"] == 20,
        30,
        "the paused follower to take the new log start",
    )
