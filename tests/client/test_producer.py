"""The producer against an in-process fake cluster (real TCP, canned broker behaviour)."""

import asyncio

import pytest

from minikafka.client.errors import IllegalStateError, KafkaTimeoutError
from minikafka.client.partitioner import partition_for_key
from minikafka.client.producer import Producer, parse_acks
from minikafka.common import TopicPartition
from minikafka.protocol import messages as m
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidRequiredAcksError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from tests.client.fake_broker import FakePartition, produce_error
from tests.cluster.conftest import wait_until_async


def fast_producer(cluster, **kw):
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("request_timeout_ms", 2000)
    kw.setdefault("delivery_timeout_ms", 5000 + kw.get("linger_ms", 0))
    return Producer(cluster.bootstrap, **kw)


@pytest.mark.parametrize(("given", "wire"), [("all", -1), ("-1", -1), (-1, -1), ("0", 0), (1, 1)])
def test_acks_accepts_kafkas_spellings(given, wire):
    assert parse_acks(given) == wire


def test_acks_rejects_anything_else():
    with pytest.raises(ValueError):
        parse_acks("2")


def test_delivery_timeout_must_cover_linger_and_request_timeout():
    with pytest.raises(ValueError, match=r"delivery\.timeout\.ms"):
        Producer("localhost:9092", delivery_timeout_ms=1000, request_timeout_ms=2000)


async def test_send_and_wait_returns_the_offsets_the_leader_assigned(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster) as producer:
        first = await producer.send_and_wait("t", b"a", timestamp_ms=1234)
        second = await producer.send_and_wait("t", "b")
    assert (first.topic, first.partition, first.offset, first.timestamp) == ("t", 0, 0, 1234)
    assert second.offset == 1
    assert cluster.values("t", 0) == [b"a", b"b"]


async def test_records_sent_together_travel_in_one_batch_and_one_request(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster, linger_ms=10_000) as producer:
        futures = [await producer.send("t", f"v{i}".encode()) for i in range(10)]
        await producer.flush()
        offsets = [f.result().offset for f in futures]
    assert offsets == list(range(10))
    produces = cluster.requests_of(m.ProduceRequest)
    assert len(produces) == 1
    assert len(produces[0][1].topics[0].partitions) == 1


async def test_one_request_per_leader_carries_batches_for_many_partitions(cluster):
    # Partitions 0 and 3 are both led by broker 1 (replicas rotate over 3 brokers).
    cluster.create_topic("t", partitions=4)
    async with fast_producer(cluster, linger_ms=10_000) as producer:
        for p in range(4):
            await producer.send("t", b"x", partition=p)
        await producer.flush()
    per_broker = {}
    for broker, req in cluster.requests_of(m.ProduceRequest):
        per_broker.setdefault(broker, []).append(
            sorted(p.partition for t in req.topics for p in t.partitions)
        )
    assert per_broker == {1: [[0, 3]], 2: [[1]], 3: [[2]]}


async def test_keyed_records_go_to_the_murmur2_partition(cluster):
    cluster.create_topic("t", partitions=5)
    async with fast_producer(cluster) as producer:
        for key in (b"foobar", b"21", b"abc", b"k"):
            md = await producer.send_and_wait("t", b"v", key=key)
            assert md.partition == partition_for_key(key, 5)


async def test_keyless_records_stick_to_a_partition_for_a_batch(cluster):
    cluster.create_topic("t", partitions=3)
    async with fast_producer(cluster, linger_ms=10_000) as producer:
        futures = [await producer.send("t", b"v") for _ in range(5)]
        await producer.flush()
    assert len({f.result().partition for f in futures}) == 1


async def test_acks_zero_resolves_without_a_response_and_offset_minus_one(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster, acks=0) as producer:
        md = await producer.send_and_wait("t", b"fire-and-forget")
    assert md.offset == -1
    assert cluster.requests_of(m.ProduceRequest)[0][1].acks == 0


async def test_acks_all_goes_on_the_wire_as_minus_one(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster, acks="all") as producer:
        await producer.send_and_wait("t", b"v")
    assert cluster.requests_of(m.ProduceRequest)[0][1].acks == -1


async def test_not_leader_refreshes_metadata_and_delivers_to_the_new_leader(cluster):
    cluster.create_topic("t", partitions=1)  # leader 1
    async with fast_producer(cluster) as producer:
        await producer.send_and_wait("t", b"before")
        cluster.move_leader("t", 0, 2)  # broker 1 now answers NOT_LEADER_OR_FOLLOWER
        md = await producer.send_and_wait("t", b"after")
    assert md.offset == 1
    produced_to = [b for b, _ in cluster.requests_of(m.ProduceRequest)]
    assert produced_to == [1, 1, 2]
    assert cluster.values("t", 0) == [b"before", b"after"]


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    ],
)
async def test_retriable_errors_are_retried_until_success(cluster, code):
    cluster.create_topic("t", partitions=1)
    cluster.inject(m.ProduceRequest, produce_error(code), times=2)
    async with fast_producer(cluster) as producer:
        md = await producer.send_and_wait("t", b"v")
    assert md.offset == 0
    assert len(cluster.requests_of(m.ProduceRequest)) == 3


async def test_a_lost_connection_is_retried_on_a_new_one(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster) as producer:
        await producer.send_and_wait("t", b"first")

        async def drop(broker_id, request):
            # Close the broker's side of every connection before answering.
            server = cluster.servers[broker_id]
            for task in list(server._connections):
                task.cancel()
            await asyncio.Event().wait()

        cluster.inject(m.ProduceRequest, drop)
        md = await producer.send_and_wait("t", b"second")
    assert md.offset == 1
    assert cluster.values("t", 0) == [b"first", b"second"]


async def test_a_dead_leader_is_replaced_after_a_metadata_refresh(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster) as producer:
        await producer.send_and_wait("t", b"a")
        await cluster.stop_broker(1)
        cluster.move_leader("t", 0, 3)
        md = await producer.send_and_wait("t", b"b")
    assert md.offset == 1


async def test_non_retriable_errors_fail_the_records_with_the_brokers_error(cluster):
    cluster.create_topic("t", partitions=1)
    cluster.inject(m.ProduceRequest, produce_error(ErrorCode.INVALID_REQUIRED_ACKS))
    async with fast_producer(cluster, linger_ms=10_000) as producer:
        futures = [await producer.send("t", b"v") for _ in range(3)]
        await producer.flush()
        for f in futures:
            with pytest.raises(InvalidRequiredAcksError):
                f.result()
        # The partition is usable again afterwards.
        ok = await producer.send("t", b"ok")
        await producer.flush()
        assert ok.result().offset == 0
    assert len(cluster.requests_of(m.ProduceRequest)) == 2


async def test_retries_zero_fails_on_the_first_retriable_error(cluster):
    cluster.create_topic("t", partitions=1)
    cluster.inject(m.ProduceRequest, produce_error(ErrorCode.NOT_ENOUGH_REPLICAS))
    async with fast_producer(cluster, retries=0) as producer:
        with pytest.raises(NotEnoughReplicasError):
            await producer.send_and_wait("t", b"v")


async def test_delivery_timeout_fails_records_that_keep_failing(cluster):
    cluster.create_topic("t", partitions=1)
    cluster.inject(m.ProduceRequest, produce_error(ErrorCode.NOT_LEADER_OR_FOLLOWER), times=10**6)
    async with fast_producer(
        cluster, delivery_timeout_ms=300, request_timeout_ms=200, retry_backoff_ms=20
    ) as producer:
        # Expired while waiting to retry: KafkaTimeoutError naming the last error. Or the
        # error itself, when a response comes back after delivery.timeout.ms (no retry is
        # allowed then, as in Kafka's canRetry): on a loaded machine either may come first.
        with pytest.raises(
            (KafkaTimeoutError, NotLeaderOrFollowerError), match="NOT_LEADER_OR_FOLLOWER"
        ):
            await producer.send_and_wait("t", b"v")
    assert len(cluster.requests_of(m.ProduceRequest)) > 1


async def test_records_for_a_leaderless_partition_expire_after_delivery_timeout(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(
        cluster, delivery_timeout_ms=300, request_timeout_ms=200, retry_backoff_ms=20
    ) as producer:
        await producer.partitions_for("t")
        await cluster.stop_broker(1)  # the leader; nobody takes over
        with pytest.raises(KafkaTimeoutError, match="since batch creation"):
            await producer.send_and_wait("t", b"v", partition=0)


async def test_order_per_partition_survives_retries_with_one_request_in_flight(cluster):
    # Kafka's guarantee without idempotence: ordered across retries only with
    # max.in.flight.requests.per.connection=1 (with more, a retried batch may land after
    # the ones sent behind it).
    cluster.create_topic("t", partitions=1)
    cluster.inject(m.ProduceRequest, produce_error(ErrorCode.NOT_ENOUGH_REPLICAS), times=3)
    async with fast_producer(
        cluster, batch_size=64, max_in_flight_requests_per_connection=1
    ) as producer:
        futures = [await producer.send("t", f"{i:03d}".encode()) for i in range(30)]
        await producer.flush()
    assert [f.result().offset for f in futures] == list(range(30))
    assert cluster.values("t", 0) == [f"{i:03d}".encode() for i in range(30)]


async def test_a_record_larger_than_max_request_size_fails_without_being_sent(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster, max_request_size=1000) as producer:
        with pytest.raises(MessageTooLargeError, match=r"max\.request\.size"):
            await producer.send_and_wait("t", b"x" * 2000)
    assert cluster.requests_of(m.ProduceRequest) == []


async def test_a_topic_still_being_created_fails_after_max_block_ms(cluster):
    cluster.pending_topics.add("creating")
    async with fast_producer(cluster, max_block_ms=200) as producer:
        fut = await producer.send("creating", b"v")
        with pytest.raises(KafkaTimeoutError, match="creating not present in metadata"):
            await fut


async def test_a_topic_that_does_not_exist_fails_at_once(cluster):
    """UNKNOWN_TOPIC_OR_PARTITION in metadata (the broker checked and did not auto-create
    it) fails the send at the first answer, not after max.block.ms."""
    async with fast_producer(cluster, max_block_ms=60_000) as producer:
        fut = await producer.send("missing", b"v")
        with pytest.raises(UnknownTopicOrPartitionError, match="Topic missing does not exist"):
            await fut
    assert len(cluster.requests_of(m.MetadataRequest)) <= 2
    assert all(r.allow_auto_topic_creation for _, r in cluster.requests_of(m.MetadataRequest))


async def test_an_invalid_partition_fails_the_record_after_max_block_ms(cluster):
    cluster.create_topic("t", partitions=2)
    async with fast_producer(cluster, max_block_ms=300) as producer:
        with pytest.raises(
            KafkaTimeoutError,
            match="Partition 5 of topic t with partition count 2 is not present in metadata "
            "after 300 ms",
        ):
            await producer.send_and_wait("t", b"v", partition=5)


async def test_a_partition_added_after_the_first_look_is_waited_for(cluster):
    # Each broker learns of new partitions a little after the controller: as Kafka's
    # producer, ask again until max.block.ms rather than fail at the first answer.
    cluster.create_topic("t", partitions=2)
    async with fast_producer(cluster, max_block_ms=10_000) as producer:
        await producer.send_and_wait("t", b"first", partition=0)
        sent = asyncio.ensure_future(producer.send_and_wait("t", b"late", partition=2))
        await wait_until_async(
            lambda: len(cluster.requests_of(m.MetadataRequest)) >= 3, 5, "a metadata retry"
        )
        assert not sent.done()
        cluster.topics["t"][2] = FakePartition(1, 0, [1, 2, 3], [1, 2, 3])
        assert (await sent).partition == 2
    assert cluster.values("t", 2) == [b"late"]


async def test_close_delivers_what_is_queued(cluster):
    cluster.create_topic("t", partitions=1)
    producer = fast_producer(cluster, linger_ms=60_000, delivery_timeout_ms=70_000)
    futures = [await producer.send("t", b"v") for _ in range(3)]
    await producer.close()
    assert [f.result().offset for f in futures] == [0, 1, 2]


async def test_send_after_close_is_refused(cluster):
    cluster.create_topic("t", partitions=1)
    producer = fast_producer(cluster)
    await producer.close()
    with pytest.raises(IllegalStateError):
        await producer.send("t", b"v")


async def test_forced_close_fails_what_cannot_be_delivered(cluster):
    cluster.create_topic("t", partitions=1)
    never = asyncio.Event()

    async def hang(broker_id, request):
        await never.wait()

    cluster.inject(m.ProduceRequest, hang)
    producer = fast_producer(cluster)
    fut = await producer.send("t", b"v")
    await producer.close(timeout_ms=50)
    with pytest.raises(KafkaTimeoutError, match="closed forcefully"):
        fut.result()


async def test_buffer_memory_blocks_send_until_max_block_ms(cluster):
    cluster.create_topic("t", partitions=1)
    never = asyncio.Event()

    async def hang(broker_id, request):
        await never.wait()

    cluster.inject(m.ProduceRequest, hang)
    producer = fast_producer(cluster, buffer_memory=2000, max_block_ms=100)
    stuck = await producer.send("t", b"x" * 1500)
    fut = await producer.send("t", b"y" * 1500)
    with pytest.raises(KafkaTimeoutError, match="allocate memory"):
        fut.result()
    await producer.close(timeout_ms=0)
    with pytest.raises(KafkaTimeoutError, match="closed forcefully"):
        stuck.result()


class ProduceGate:
    """Holds produce requests at the broker until released, counting those held at once."""

    def __init__(self, cluster, answer=None):
        self.cluster = cluster
        self.answer = answer  # (arrival index, broker, request) -> response, or None: normal
        self.open = asyncio.Event()
        self.arrived = 0
        self.held = 0
        self.max_held = 0

    async def __call__(self, broker_id, request):
        index = self.arrived
        self.arrived += 1
        self.held += 1
        self.max_held = max(self.max_held, self.held)
        try:
            await self.open.wait()
        finally:
            self.held -= 1
        if self.answer is not None:
            response = self.answer(index, broker_id, request)
            if response is not None:
                return response
        return await self.cluster._on_ProduceRequest(broker_id, request)

    async def wait_held(self, n, timeout=5.0):
        async with asyncio.timeout(timeout):
            while self.held < n:
                await asyncio.sleep(0.005)


def batches_per_request(cluster):
    return [
        [p.partition for t in r.topics for p in t.partitions]
        for _, r in cluster.requests_of(m.ProduceRequest)
    ]


async def test_several_batches_of_one_partition_are_in_flight_up_to_max_in_flight(cluster):
    cluster.create_topic("t", partitions=1)
    gate = ProduceGate(cluster)
    cluster.inject(m.ProduceRequest, gate, times=10**6)
    async with fast_producer(
        cluster, batch_size=100, max_in_flight_requests_per_connection=5
    ) as producer:
        futures = [await producer.send("t", f"{i:080d}".encode()) for i in range(20)]
        await gate.wait_held(5)
        await asyncio.sleep(0.05)  # room for a sixth, were the limit not enforced
        assert (gate.held, gate.arrived) == (5, 5)
        gate.open.set()
        await producer.flush()
    assert gate.max_held == 5
    # One batch of the partition per request, as Kafka does; no retries, so still in order.
    assert batches_per_request(cluster) == [[0]] * 20
    assert [f.result().offset for f in futures] == list(range(20))
    assert cluster.values("t", 0) == [f"{i:080d}".encode() for i in range(20)]


async def test_one_request_at_a_time_with_max_in_flight_one(cluster):
    cluster.create_topic("t", partitions=1)
    gate = ProduceGate(cluster)
    cluster.inject(m.ProduceRequest, gate, times=10**6)
    async with fast_producer(
        cluster, batch_size=100, max_in_flight_requests_per_connection=1
    ) as producer:
        futures = [await producer.send("t", f"{i:080d}".encode()) for i in range(10)]
        await gate.wait_held(1)
        await asyncio.sleep(0.05)
        assert (gate.held, gate.arrived) == (1, 1)
        assert producer.accumulator.is_muted(TopicPartition("t", 0))  # Kafka's muting
        gate.open.set()
        await producer.flush()
    assert gate.max_held == 1
    assert [f.result().offset for f in futures] == list(range(10))


async def test_retries_may_reorder_batches_with_several_in_flight_as_in_kafka(cluster):
    # Kafka without idempotence: "if this is greater than 1 ... there is a risk of message
    # reordering after a failed send due to retries". The first batch fails retriably while
    # the next ones, already in flight, succeed: it lands after them.
    cluster.create_topic("t", partitions=1)

    def first_fails(index, broker_id, request):
        return (
            produce_error(ErrorCode.NOT_ENOUGH_REPLICAS)(broker_id, request) if index == 0 else None
        )

    gate = ProduceGate(cluster, first_fails)
    cluster.inject(m.ProduceRequest, gate, times=10**6)
    async with fast_producer(
        cluster, batch_size=100, max_in_flight_requests_per_connection=5
    ) as producer:
        futures = [await producer.send("t", f"{i:080d}".encode()) for i in range(3)]
        await gate.wait_held(3)
        gate.open.set()
        await producer.flush()
    assert [f.result().offset for f in futures] == [2, 0, 1]
    assert cluster.values("t", 0) == [f"{i:080d}".encode() for i in (1, 2, 0)]


async def test_retries_keep_order_with_max_in_flight_one_even_with_batches_queued(cluster):
    cluster.create_topic("t", partitions=1)

    def first_two_fail(index, broker_id, request):
        if index < 2:
            return produce_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)(broker_id, request)
        return None

    gate = ProduceGate(cluster, first_two_fail)
    cluster.inject(m.ProduceRequest, gate, times=10**6)
    async with fast_producer(
        cluster, batch_size=100, max_in_flight_requests_per_connection=1
    ) as producer:
        futures = [await producer.send("t", f"{i:080d}".encode()) for i in range(6)]
        await gate.wait_held(1)
        gate.open.set()
        await producer.flush()
    assert gate.max_held == 1
    assert [f.result().offset for f in futures] == list(range(6))
    assert cluster.values("t", 0) == [f"{i:080d}".encode() for i in range(6)]


async def test_batch_buffers_are_reused_across_requests(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster, batch_size=1000) as producer:
        for _ in range(5):
            futures = [await producer.send("t", b"x" * 300) for _ in range(9)]
            await producer.flush()
        pool = producer.accumulator.pool
        assert all(f.done() and not f.exception() for f in futures)
        assert pool.reused > 0
        assert pool.allocated <= 2  # the open batch's and the one being built, at most
    assert cluster.values("t", 0) == [b"x" * 300] * 45


async def test_send_yields_so_full_batches_leave_before_the_buffer_fills(cluster):
    # Kafka's send() runs on the caller's thread while the Sender ships full batches. A
    # tight loop of sends must let the sender run too, not fill buffer.memory first.
    cluster.create_topic("t", partitions=1)
    record = b"x" * 1000
    count = 400  # 400 kB of records, 100 batches; the buffer could hold them all
    async with fast_producer(cluster, batch_size=4096, buffer_memory=1 << 20) as producer:
        futures = []
        most_buffered = 0
        for _ in range(count):
            futures.append(await producer.send("t", record))
            most_buffered = max(most_buffered, producer.accumulator.buffered_bytes)
        sent_during_loop = len(cluster.requests_of(m.ProduceRequest))
        done_during_loop = sum(f.done() for f in futures)
        await producer.flush()
    assert sent_during_loop >= 10
    assert done_during_loop > 0
    # (about half, here: the caller still gets most turns of the loop)
    assert most_buffered < count * len(record) * 3 // 4
    assert [f.result().offset for f in futures] == list(range(count))


async def test_a_send_cancelled_while_yielding_has_queued_nothing(cluster):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster, linger_ms=10_000) as producer:
        first = await producer.send("t", b"first")  # a new batch: the next send yields
        task = asyncio.create_task(producer.send("t", b"cancelled"))
        await asyncio.sleep(0)  # the task is now in its yield
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await producer.flush()
    assert first.result().offset == 0
    assert cluster.values("t", 0) == [b"first"]


@pytest.mark.parametrize("bad", [12345, {"user": 1}, 1.5, ["a"]])
async def test_a_value_that_is_not_bytes_or_str_is_refused_and_nothing_is_sent(cluster, bad):
    cluster.create_topic("t", partitions=1)
    async with fast_producer(cluster) as producer:
        with pytest.raises(TypeError, match=r"must be bytes or str, not .*serialize it first"):
            await producer.send("t", bad)
        with pytest.raises(TypeError, match="must be bytes or str"):
            await producer.send("t", b"v", key=bad)
        with pytest.raises(TypeError, match="must be bytes or str"):
            await producer.send("t", b"v", headers=[("h", bad)])
        # bytes-like and text still go, as themselves
        for ok in (b"b", bytearray(b"ba"), memoryview(b"mv"), "s"):
            await producer.send_and_wait("t", ok)
    assert cluster.values("t", 0) == [b"b", b"ba", b"mv", b"s"]
