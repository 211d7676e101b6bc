"""DeleteRecords in the replica manager (Kafka's deleteRecords, deleteRecordsOnLeader and
DelayedDeleteRecords): the leader's log start moves at once, never beyond the HW; the
answer waits in the purgatory until every live follower reported a log start at least as
far (its next fetch after learning the new one), or is REQUEST_TIMED_OUT. One replica
manager, no sockets: the test plays the follower by sending its fetches."""

from __future__ import annotations

import asyncio

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.messages import FetchPartition, FetchRequest, FetchTopic

from .test_incremental_delayed_fetch import FOLLOWER, T0, append, lead, rm

__all__ = ["rm"]  # the fixture

E = ErrorCode


def alive(_broker: int) -> bool:
    return True


def dead(_broker: int) -> bool:
    return False


async def follower_fetch(rm: ReplicaManager, offset: int, log_start: int) -> int:
    """The follower's fetch of t-0 at `offset`, reporting its log start; the leader's log
    start the answer carries."""
    resp = await rm.fetch_messages(
        FetchRequest(
            FOLLOWER,
            0,
            1,
            1 << 20,
            [FetchTopic("t", [FetchPartition(0, offset, 1 << 20, 0, log_start)])],
        )
    )
    (p,) = resp.topics[0].partitions
    assert p.error_code == E.NONE
    return p.log_start_offset


async def test_the_answer_waits_for_the_followers_log_start(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1])  # the HW follows the leader's LEO
    await append(rm, T0, *(b"v%d" % i for i in range(10)))
    assert await follower_fetch(rm, 10, 0) == 0  # the follower is at the end, starting at 0
    task = asyncio.create_task(rm.delete_records(60_000, {T0: 6}, alive))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    assert rm.partitions[T0].log.log_start_offset == 6  # moved on the leader at once
    # The follower learns it from its next fetch and reports it in the one after.
    assert await follower_fetch(rm, 10, 0) == 6
    await asyncio.sleep(0)
    assert not task.done()
    await follower_fetch(rm, 10, 6)
    assert await asyncio.wait_for(task, 5) == {T0: (E.NONE, 6)}


async def test_a_dead_followers_log_start_does_not_count(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1])
    await append(rm, T0, b"a", b"b", b"c")
    assert await rm.delete_records(60_000, {T0: 2}, dead) == {T0: (E.NONE, 2)}


async def test_a_follower_that_never_reports_times_the_request_out(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1])
    await append(rm, T0, b"a", b"b", b"c")
    # Not fetched since this broker leads: its log start is unknown (-1), the low watermark.
    assert await rm.delete_records(50, {T0: 2}, alive) == {T0: (E.REQUEST_TIMED_OUT, -1)}
    assert rm.partitions[T0].log.log_start_offset == 2


async def test_offsets_beyond_the_hw_below_the_start_and_minus_one(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1])
    await append(rm, T0, *(b"v%d" % i for i in range(5)))
    log = rm.partitions[T0].log
    assert await rm.delete_records(1_000, {T0: 6}, dead) == {T0: (E.OFFSET_OUT_OF_RANGE, -1)}
    assert await rm.delete_records(1_000, {T0: -2}, dead) == {T0: (E.OFFSET_OUT_OF_RANGE, -1)}
    assert log.log_start_offset == 0
    assert await rm.delete_records(1_000, {T0: 3}, dead) == {T0: (E.NONE, 3)}
    assert await rm.delete_records(1_000, {T0: 1}, dead) == {T0: (E.NONE, 3)}  # no change
    assert log.log_start_offset == 3
    assert await rm.delete_records(1_000, {T0: -1}, dead) == {T0: (E.NONE, 5)}  # the HW
    assert log.log_start_offset == 5


async def test_not_the_leader_unknown_and_internal_partitions(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1, FOLLOWER], leader=FOLLOWER)
    offsets = {T0: 0, TopicPartition("nope", 0): 0, TopicPartition("__consumer_offsets", 0): 0}
    assert await rm.delete_records(1_000, offsets, alive) == {
        T0: (E.NOT_LEADER_OR_FOLLOWER, -1),
        TopicPartition("nope", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, -1),
        TopicPartition("__consumer_offsets", 0): (E.INVALID_TOPIC_EXCEPTION, -1),
    }
