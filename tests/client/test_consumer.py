"""The consumer against an in-process fake cluster: positions, fetches, leader changes."""

import pytest

from minikafka.client.consumer import Consumer, parse_fetched_records
from minikafka.client.errors import IllegalStateError, NoOffsetForPartitionError
from minikafka.common import TopicPartition
from minikafka.protocol import messages as m
from minikafka.protocol.errors import CorruptRecordError, ErrorCode, OffsetOutOfRangeError
from minikafka.storage.record_batch import CRC_OFFSET, build_batch
from tests.client.fake_broker import fetch_error

TP = TopicPartition("t", 0)


def fast_consumer(cluster, **kw):
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("request_timeout_ms", 2000)
    kw.setdefault("fetch_max_wait_ms", 100)
    return Consumer(cluster.bootstrap, **kw)


async def poll_values(consumer, count, timeout_ms=5000):
    """Poll until `count` records arrived (or a poll comes back empty)."""
    out = []
    while len(out) < count:
        records = await consumer.poll(timeout_ms)
        if not records:
            break
        out.extend(records)
    return [r.value for r in out]


# --- parsing fetched bytes ---------------------------------------------------------------


def stamped(values, base):
    return build_batch(values, base_offset=base)


def test_records_below_the_fetch_position_in_the_first_batch_are_skipped():
    data = stamped([b"a", b"b", b"c"], 10) + stamped([b"d"], 13)
    records, next_offset, error = parse_fetched_records(TP, data, 12)
    assert [(r.offset, r.value) for r in records] == [(12, b"c"), (13, b"d")]
    assert next_offset == 14 and error is None


def test_a_partial_batch_at_the_end_of_a_fetch_is_ignored():
    whole = stamped([b"a", b"b"], 0)
    data = whole + stamped([b"c"], 2)[:-5]
    records, next_offset, error = parse_fetched_records(TP, data, 0)
    assert [r.value for r in records] == [b"a", b"b"]
    assert next_offset == 2 and error is None
    # A tail too short even for the length field is ignored too.
    records, _, error = parse_fetched_records(TP, whole + b"\x00\x00", 0)
    assert len(records) == 2 and error is None


def test_a_corrupt_batch_stops_parsing_with_the_records_before_it():
    bad = bytearray(stamped([b"c"], 2))
    bad[CRC_OFFSET] ^= 0xFF
    records, next_offset, error = parse_fetched_records(
        TP, stamped([b"a", b"b"], 0) + bytes(bad), 0
    )
    assert [r.value for r in records] == [b"a", b"b"]
    assert next_offset == 2
    assert isinstance(error, CorruptRecordError)


def test_a_fetch_without_any_complete_batch_is_an_error():
    _, _, error = parse_fetched_records(TP, stamped([b"x" * 100], 0)[:50], 0)
    assert error is not None and "no complete record batch" in str(error)


# --- against the fake cluster --------------------------------------------------------------


async def test_from_beginning_reads_everything_in_order(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a", b"b"])
    await cluster.append("t", 0, [b"c"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        await consumer.assign_topic("t")
        records = await consumer.poll(5000)
        assert [(r.offset, r.value) for r in records] == [(0, b"a"), (1, b"b"), (2, b"c")]
        assert records[0].timestamp == 5 and records[0].topic == "t"
        assert await consumer.position(TP) == 3


async def test_latest_reads_only_records_written_after_the_start(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"old"])
    async with fast_consumer(cluster) as consumer:
        consumer.assign([TP])
        assert await consumer.position(TP) == 1
        await cluster.append("t", 0, [b"new"])
        assert await poll_values(consumer, 1) == [b"new"]


async def test_assign_topic_assigns_every_partition(cluster):
    cluster.create_topic("t", partitions=3)
    for p in range(3):
        await cluster.append("t", p, [f"p{p}".encode()])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        tps = await consumer.assign_topic("t")
        assert tps == [TopicPartition("t", p) for p in range(3)]
        assert sorted(await poll_values(consumer, 3)) == [b"p0", b"p1", b"p2"]
    # One FetchRequest per leader, each for that leader's partition.
    first_fetches = {}
    for broker, req in cluster.requests_of(m.FetchRequest):
        first_fetches.setdefault(broker, [p.partition for t in req.topics for p in t.partitions])
    assert first_fetches == {1: [0], 2: [1], 3: [2]}


async def test_seek_moves_the_position_and_skips_earlier_records_of_a_batch(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a", b"b", b"c", b"d"])
    async with fast_consumer(cluster) as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 2)
        assert await poll_values(consumer, 2) == [b"c", b"d"]
        consumer.seek_to_beginning()
        assert await consumer.position(TP) == 0
        assert await poll_values(consumer, 4) == [b"a", b"b", b"c", b"d"]
        consumer.seek_to_end(TP)
        assert await consumer.position(TP) == 4


async def test_poll_returns_empty_when_nothing_arrives_in_time(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_consumer(cluster) as consumer:
        consumer.assign([TP])
        assert await consumer.poll(50) == []


async def test_max_poll_records_splits_a_fetch_across_polls(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [str(i).encode() for i in range(5)])
    async with fast_consumer(cluster, max_poll_records=2, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        sizes = []
        values = []
        while len(values) < 5:
            records = await consumer.poll(5000)
            sizes.append(len(records))
            values.extend(r.value for r in records)
        assert sizes == [2, 2, 1]
        assert values == [b"0", b"1", b"2", b"3", b"4"]
        assert len(cluster.requests_of(m.FetchRequest)) >= 1


async def test_fetch_passes_the_current_leader_epoch(cluster):
    cluster.create_topic("t", partitions=1)
    cluster.move_leader("t", 0, 1)  # same leader, epoch 1
    await cluster.append("t", 0, [b"a"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        assert await poll_values(consumer, 1) == [b"a"]
    (_, fetch), *_ = cluster.requests_of(m.FetchRequest)
    assert fetch.topics[0].partitions[0].current_leader_epoch == 1
    assert fetch.replica_id == -1


async def test_the_consumer_follows_a_leader_change(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        assert await poll_values(consumer, 1) == [b"a"]
        cluster.move_leader("t", 0, 2)  # broker 1 answers NOT_LEADER_OR_FOLLOWER from now on
        await cluster.append("t", 0, [b"b"])
        assert await poll_values(consumer, 1) == [b"b"]
    fetched_from = [b for b, _ in cluster.requests_of(m.FetchRequest)]
    assert fetched_from[0] == 1 and fetched_from[-1] == 2


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ],
)
async def test_leadership_errors_refresh_metadata_and_retry(cluster, code):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        await consumer.position(TP)
        metadata_before = len(cluster.requests_of(m.MetadataRequest))
        cluster.inject(m.FetchRequest, fetch_error(code), times=2)
        assert await poll_values(consumer, 1) == [b"a"]
    assert len(cluster.requests_of(m.MetadataRequest)) > metadata_before


async def test_a_dead_leader_is_left_for_the_new_one(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        assert await poll_values(consumer, 1) == [b"a"]
        await cluster.stop_broker(1)
        cluster.move_leader("t", 0, 2)
        await cluster.append("t", 0, [b"b"])
        assert await poll_values(consumer, 1) == [b"b"]


async def test_offset_out_of_range_resets_per_auto_offset_reset(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a", b"b"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 100)  # beyond the log end
        assert await poll_values(consumer, 2) == [b"a", b"b"]
    list_offsets = cluster.requests_of(m.ListOffsetsRequest)
    assert list_offsets[-1][1].topics[0].partitions[0].timestamp == m.EARLIEST_TIMESTAMP


async def test_offset_out_of_range_with_reset_none_raises(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_consumer(cluster, auto_offset_reset="none") as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 100)
        with pytest.raises(OffsetOutOfRangeError):
            for _ in range(10):
                await consumer.poll(1000)


async def test_no_position_with_reset_none_raises(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_consumer(cluster, auto_offset_reset="none") as consumer:
        consumer.assign([TP])
        with pytest.raises(NoOffsetForPartitionError):
            await consumer.poll(100)


async def test_a_seek_while_a_fetch_is_in_flight_drops_its_result(cluster):
    cluster.create_topic("t", partitions=1)
    await cluster.append("t", 0, [b"a", b"b", b"c"])
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        await consumer.position(TP)
        assert await consumer.poll(0) == []  # starts a fetch from offset 0
        consumer.seek(TP, 2)
        assert await poll_values(consumer, 1) == [b"c"]


async def test_beginning_and_end_offsets(cluster):
    cluster.create_topic("t", partitions=2)
    await cluster.append("t", 1, [b"a", b"b"])
    cluster.partition("t", 1).log_start_offset = 1
    async with fast_consumer(cluster) as consumer:
        tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
        assert await consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 1}
        assert await consumer.end_offsets(tps) == {tps[0]: 0, tps[1]: 2}


async def test_poll_without_assignment_is_refused(cluster):
    async with fast_consumer(cluster) as consumer:
        with pytest.raises(IllegalStateError):
            await consumer.poll(10)


async def test_seek_on_an_unassigned_partition_is_refused(cluster):
    async with fast_consumer(cluster) as consumer:
        with pytest.raises(IllegalStateError):
            consumer.seek(TP, 0)


async def test_headers_and_keys_round_trip_through_producer_and_consumer(cluster):
    from minikafka.client.producer import Producer

    cluster.create_topic("t", partitions=1)
    async with Producer(cluster.bootstrap) as producer:
        await producer.send_and_wait("t", b"v", key=b"k", headers=[("h", b"1")], timestamp_ms=77)
    async with fast_consumer(cluster, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        (record,) = await consumer.poll(5000)
    assert (record.key, record.value, record.headers, record.timestamp) == (
        b"k",
        b"v",
        (("h", b"1"),),
        77,
    )
