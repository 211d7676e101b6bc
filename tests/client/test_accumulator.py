"""The record accumulator, driven step by step with explicit times (no clock, no I/O)."""

import pytest

from minikafka.client.accumulator import RecordAccumulator, estimate_record_size
from minikafka.client.errors import KafkaTimeoutError
from minikafka.common import TopicPartition
from minikafka.storage.record_batch import decode_records

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
TP_OTHER = TopicPartition("u", 0)
LEADERS = {TP0: 1, TP1: 2, TP_OTHER: 1}


def leader_of(tp):
    return LEADERS.get(tp)


def add(acc, tp, value, now=0, key=None):
    return acc.append(tp, 1000, key, value, (), now)


def values_of(batch):
    return [r.value for r in decode_records(batch.records())]


async def test_records_share_a_batch_until_batch_size_then_a_new_batch_starts():
    size = estimate_record_size(None, b"x" * 100, ())
    acc = RecordAccumulator(batch_size=3 * size, linger_ms=1000)
    results = [add(acc, TP0, b"x" * 100) for _ in range(4)]
    assert [r.new_batch_created for r in results] == [True, False, False, True]
    assert [r.batch_is_full for r in results] == [False, False, True, True]
    batches = list(acc.queued(TP0))
    assert [b.record_count for b in batches] == [3, 1]


async def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = RecordAccumulator(batch_size=100, linger_ms=1000)
    add(acc, TP0, b"small")
    big = add(acc, TP0, b"x" * 500)
    assert big.new_batch_created and big.batch_is_full
    assert [b.record_count for b in acc.queued(TP0)] == [1, 1]


async def test_a_partial_batch_is_not_ready_before_linger_ms_and_ready_after():
    acc = RecordAccumulator(batch_size=16384, linger_ms=50)
    add(acc, TP0, b"a", now=1000)
    early = acc.ready(leader_of, 1020)
    assert early.ready_nodes == set()
    assert early.next_check_ms == pytest.approx(30)
    assert acc.ready(leader_of, 1050).ready_nodes == {1}


async def test_a_full_batch_is_ready_at_once_despite_linger():
    acc = RecordAccumulator(batch_size=100, linger_ms=10_000)
    add(acc, TP0, b"x" * 80)
    add(acc, TP0, b"y" * 80)  # does not fit: the first batch is complete
    assert acc.ready(leader_of, 0).ready_nodes == {1}


async def test_linger_zero_makes_a_batch_ready_immediately():
    acc = RecordAccumulator(linger_ms=0)
    add(acc, TP0, b"a", now=5)
    assert acc.ready(leader_of, 5).ready_nodes == {1}


async def test_flush_makes_lingering_batches_ready():
    acc = RecordAccumulator(linger_ms=10_000)
    add(acc, TP0, b"a")
    assert acc.ready(leader_of, 1).ready_nodes == set()
    acc.begin_flush()
    assert acc.ready(leader_of, 1).ready_nodes == {1}
    acc.end_flush()
    assert acc.ready(leader_of, 1).ready_nodes == set()


async def test_drain_groups_partitions_by_leader_one_batch_each():
    acc = RecordAccumulator(linger_ms=0)
    add(acc, TP0, b"a")
    add(acc, TP1, b"b")
    add(acc, TP_OTHER, b"c")
    ready = acc.ready(leader_of, 0)
    assert ready.ready_nodes == {1, 2}
    drained = acc.drain(leader_of, ready.ready_nodes, 1 << 20, 0)
    assert sorted(b.tp.topic + str(b.tp.partition) for b in drained[1]) == ["t0", "u0"]
    assert [b.tp for b in drained[2]] == [TP1]


async def test_only_one_batch_per_partition_is_in_flight_so_order_holds():
    acc = RecordAccumulator(batch_size=50, linger_ms=0)
    for v in (b"a" * 30, b"b" * 30, b"c" * 30):  # three batches for one partition
        add(acc, TP0, v)
    first = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    assert [values_of(b) for b in first] == [[b"a" * 30]]
    # Muted while in flight: nothing more for that partition.
    assert acc.ready(leader_of, 0).ready_nodes == set()
    assert acc.drain(leader_of, {1}, 1 << 20, 0) == {}
    acc.complete(first[0], 0)
    second = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    assert [values_of(b) for b in second] == [[b"b" * 30]]


async def test_a_retried_batch_goes_back_first_and_waits_retry_backoff():
    acc = RecordAccumulator(batch_size=50, linger_ms=0, retry_backoff_ms=100)
    add(acc, TP0, b"a" * 30)
    add(acc, TP0, b"b" * 30)
    (batch,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    acc.reenqueue(batch, now_ms=10)
    backing_off = acc.ready(leader_of, 50)
    assert backing_off.ready_nodes == set()
    assert backing_off.next_check_ms == pytest.approx(60)
    assert acc.drain(leader_of, {1}, 1 << 20, 50) == {}  # the later batch may not overtake
    assert acc.ready(leader_of, 110).ready_nodes == {1}
    (again,) = acc.drain(leader_of, {1}, 1 << 20, 110)[1]
    assert again is batch and again.attempts == 1


async def test_a_closed_batch_takes_no_more_records():
    acc = RecordAccumulator(linger_ms=0)
    add(acc, TP0, b"a")
    (batch,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    later = add(acc, TP0, b"b")
    assert later.new_batch_created
    assert values_of(batch) == [b"a"]


async def test_drain_respects_max_request_size_but_always_sends_one_batch():
    acc = RecordAccumulator(batch_size=1000, linger_ms=0)
    add(acc, TP0, b"x" * 400)
    add(acc, TP_OTHER, b"y" * 400)
    drained = acc.drain(leader_of, {1}, 500, 0)
    assert len(drained[1]) == 1
    assert len(acc.drain(leader_of, {1}, 500, 0)[1]) == 1


async def test_partitions_without_a_leader_are_reported_not_drained():
    acc = RecordAccumulator(linger_ms=0)
    add(acc, TopicPartition("nowhere", 0), b"a")
    check = acc.ready(leader_of, 0)
    assert check.ready_nodes == set()
    assert check.unknown_leader_topics == {"nowhere"}


async def test_completion_resolves_each_record_with_its_offset_and_timestamp():
    acc = RecordAccumulator(linger_ms=0)
    futures = [acc.append(TP0, 1000 + i, None, b"v", (), 0).future for i in range(3)]
    (batch,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    acc.complete(batch, 40)
    results = [f.result() for f in futures]
    assert [(r.offset, r.timestamp) for r in results] == [(40, 1000), (41, 1001), (42, 1002)]
    assert batch.done.done() and not acc.has_incomplete()
    assert acc.buffered_bytes == 0


async def test_queued_batches_expire_after_delivery_timeout():
    acc = RecordAccumulator(linger_ms=0, delivery_timeout_ms=1000)
    fut = add(acc, TopicPartition("nowhere", 0), b"a", now=0).future
    assert acc.ready(leader_of, 0).next_check_ms == pytest.approx(1000)
    assert acc.expire_batches(999) == []
    assert len(acc.expire_batches(1000)) == 1
    with pytest.raises(KafkaTimeoutError, match="Expiring 1 record"):
        fut.result()


async def test_abort_on_new_batch_leaves_the_record_out():
    acc = RecordAccumulator(batch_size=50)
    assert add(acc, TP0, b"a" * 40).future is not None
    aborted = acc.append(TP0, 0, None, b"b" * 40, (), 0, abort_on_new_batch=True)
    assert aborted.future is None
    assert [b.record_count for b in acc.queued(TP0)] == [1]


async def test_without_message_order_guarantee_several_batches_of_a_partition_drain():
    # Kafka with max.in.flight.requests.per.connection > 1: no muting; each drain takes the
    # partition's next batch (one per partition per request), the caller bounds in-flight.
    acc = RecordAccumulator(batch_size=50, linger_ms=0, guarantee_message_order=False)
    for v in (b"a" * 30, b"b" * 30, b"c" * 30):
        add(acc, TP0, v)
    drained = [acc.drain(leader_of, {1}, 1 << 20, 0)[1] for _ in range(3)]
    assert [[values_of(b) for b in d] for d in drained] == [
        [[b"a" * 30]],
        [[b"b" * 30]],
        [[b"c" * 30]],
    ]
    assert not acc.is_muted(TP0)
    for d in drained:
        acc.complete(d[0], 0)
    assert not acc.has_incomplete() and acc.buffered_bytes == 0


async def test_a_retried_batch_goes_back_first_even_with_others_in_flight():
    acc = RecordAccumulator(
        batch_size=50, linger_ms=0, retry_backoff_ms=100, guarantee_message_order=False
    )
    for v in (b"a" * 30, b"b" * 30, b"c" * 30):
        add(acc, TP0, v)
    (first,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    (second,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    acc.reenqueue(first, now_ms=10)
    assert [values_of(b) for b in acc.queued(TP0)] == [[b"a" * 30], [b"c" * 30]]
    # Backing off holds the batches behind it too (Kafka drains the head only).
    assert acc.drain(leader_of, {1}, 1 << 20, 50) == {}
    (again,) = acc.drain(leader_of, {1}, 1 << 20, 110)[1]
    assert again is first and second.closed


async def test_an_expired_queued_batch_does_not_unmute_the_batch_in_flight():
    acc = RecordAccumulator(batch_size=50, linger_ms=0, delivery_timeout_ms=1000)
    add(acc, TP0, b"a" * 30, now=0)
    add(acc, TP0, b"b" * 30, now=500)
    (in_flight,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    add(acc, TP0, b"c" * 30, now=1200)
    assert len(acc.expire_batches(1500)) == 1  # the queued one created at 500
    assert acc.is_muted(TP0)
    assert acc.drain(leader_of, {1}, 1 << 20, 1500) == {}
    acc.complete(in_flight, 0)
    assert not acc.is_muted(TP0)
    assert [values_of(b) for b in acc.drain(leader_of, {1}, 1 << 20, 1500)[1]] == [[b"c" * 30]]


async def test_batch_became_full_is_reported_once_when_a_batch_fills_up():
    size = estimate_record_size(None, b"x" * 100, ())
    acc = RecordAccumulator(batch_size=2 * size, linger_ms=1000)
    results = [add(acc, TP0, b"x" * 100) for _ in range(5)]
    assert [r.new_batch_created for r in results] == [True, False, True, False, True]
    assert [r.batch_became_full for r in results] == [False, True, False, True, False]
    # batch_is_full stays true while a full batch waits (Kafka's wakeup condition).
    assert [r.batch_is_full for r in results] == [False, True, True, True, True]


async def test_batch_buffers_are_reused_once_a_batch_is_built():
    acc = RecordAccumulator(batch_size=1000, linger_ms=0)
    add(acc, TP0, b"a" * 100)
    (first,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]  # built: its buffer goes back
    assert (acc.pool.allocated, acc.pool.free_count) == (1, 1)
    add(acc, TP0, b"b" * 100)
    assert (acc.pool.allocated, acc.pool.reused, acc.pool.free_count) == (1, 1, 0)
    acc.complete(first, 0)
    (second,) = acc.drain(leader_of, {1}, 1 << 20, 0)[1]
    # Reuse left no trace of the first batch's records in either batch.
    assert values_of(first) == [b"a" * 100]
    assert values_of(second) == [b"b" * 100]
    acc.complete(second, 1)
    assert (acc.pool.allocated, acc.pool.free_count) == (1, 1)


async def test_a_batch_failed_before_sending_returns_its_buffer_and_odd_sizes_are_dropped():
    acc = RecordAccumulator(batch_size=200, linger_ms=0, delivery_timeout_ms=1000)
    add(acc, TopicPartition("nowhere", 0), b"a", now=0)
    acc.expire_batches(1000)
    assert acc.pool.free_count == 1
    add(acc, TP0, b"x" * 5000)  # a record larger than batch.size grows the buffer
    acc.drain(leader_of, {1}, 1 << 20, 0)
    assert acc.pool.free_count == 0  # not kept: it is no longer batch.size
