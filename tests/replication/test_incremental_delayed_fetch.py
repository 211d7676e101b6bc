"""An incremental fetch (KIP-227) that must wait is a DelayedFetch in the replica manager's
purgatory, under its session's key: completed when a session partition brings min_bytes,
when its max wait passes, when a partition turns to an error (a leadership change), when a
later request supersedes it, and at shutdown. One replica manager, no sockets: the test
sends the fetches and appends itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.partition_state import FollowerState
from minikafka.replication.purgatory import FetchSessionKey
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.messages import (
    CONSUMER_REPLICA_ID,
    BrokerNode,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
)
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.record_batch import build_batch

pytestmark = pytest.mark.timeout(60)

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
FOLLOWER = 2
LONG_POLL_MS = 60_000  # longer than the test may run: only the purgatory can end the wait


@pytest.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ReplicaManager]:
    config = BrokerConfig(broker_id=1, log_dirs=(str(tmp_path),))
    log_manager = LogManager([tmp_path], config.log_config())
    log_manager.startup()

    async def no_overrides(topics: list[str]) -> dict[str, LogConfig]:
        return {}

    manager = ReplicaManager(config, log_manager, ManualClock(), no_overrides)
    yield manager
    await manager.shutdown()
    log_manager.shutdown()


async def lead(rm: ReplicaManager, isr: list[int], leader: int = 1, epoch: int = 0) -> None:
    states = [
        LeaderAndIsrPartitionState("t", tp.partition, 1, leader, epoch, isr, 0, [1, FOLLOWER])
        for tp in (T0, T1)
    ]
    nodes = [BrokerNode(b, "127.0.0.1", 9090 + b) for b in (1, FOLLOWER)]
    resp = await rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, states, nodes))
    assert {e.error_code for e in resp.partition_errors} == {ErrorCode.NONE}


async def append(rm: ReplicaManager, tp: TopicPartition, *values: bytes) -> None:
    base = rm.partitions[tp].log_end_offset
    batch = build_batch(list(values), base_offset=base, partition_leader_epoch=0)
    [resp] = (await rm.append_records(1, 1_000, {tp: batch})).values()
    assert resp.error_code == ErrorCode.NONE


async def open_session(rm: ReplicaManager, replica_id: int) -> int:
    """A full fetch of t-0 and t-1 at offset 0 that creates a session; returns its id."""
    parts = [FetchPartition(tp.partition, 0, 1 << 20) for tp in (T0, T1)]
    resp = await rm.fetch_messages(
        FetchRequest(replica_id, 0, 1, 1 << 20, [FetchTopic("t", parts)], session_epoch=0)
    )
    assert resp.error_code == ErrorCode.NONE and resp.session_id != 0
    return resp.session_id


def incremental(
    replica_id: int, session_id: int, epoch: int, max_wait_ms: int, min_bytes: int = 1
) -> FetchRequest:
    """An incremental fetch that lists nothing: every session partition as cached."""
    return FetchRequest(
        replica_id, max_wait_ms, min_bytes, 1 << 20, [], session_id=session_id, session_epoch=epoch
    )


async def parked(rm: ReplicaManager, session_id: int) -> None:
    """Run the loop, without letting time pass, until a fetch waits on the session."""
    for _ in range(100):
        if rm.purgatory.watched(FetchSessionKey(session_id)) == 1:
            return
        await asyncio.sleep(0)
    pytest.fail("no fetch parked on the session")


async def still_parked(rm: ReplicaManager, session_id: int, fetch: asyncio.Task[object]) -> None:
    for _ in range(5):  # the notifying step, the purgatory's check, a wake-up if any
        await asyncio.sleep(0)
    assert not fetch.done() and rm.purgatory.watched(FetchSessionKey(session_id)) == 1


def answered(resp: FetchResponse) -> dict[TopicPartition, tuple[int, int, bool]]:
    """Each answered partition: (error code, HW, whether it carries records)."""
    return {
        TopicPartition(t.name, p.partition): (p.error_code, p.high_watermark, bool(p.records))
        for t in resp.topics
        for p in t.partitions
    }


async def test_a_waiting_consumer_fetch_is_completed_when_data_arrives(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1])  # the HW follows the leader's LEO
    sid = await open_session(rm, CONSUMER_REPLICA_ID)
    fetch = asyncio.create_task(rm.fetch_messages(incremental(-1, sid, 1, LONG_POLL_MS)))
    await parked(rm, sid)
    await append(rm, T1, b"x")
    resp = await fetch
    assert resp.error_code == ErrorCode.NONE and resp.session_id == sid
    assert answered(resp) == {T1: (ErrorCode.NONE, 1, True)}  # only what moved
    assert rm.purgatory.watched(FetchSessionKey(sid)) == 0
    assert rm.fetch_sessions.get(sid).waiter is None  # type: ignore[union-attr]


async def test_a_waiting_fetch_is_completed_once_moved_partitions_bring_min_bytes(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1])
    sid = await open_session(rm, CONSUMER_REPLICA_ID)
    one = len(build_batch([b"x" * 100], base_offset=0, partition_leader_epoch=0))
    fetch = asyncio.create_task(
        rm.fetch_messages(incremental(-1, sid, 1, LONG_POLL_MS, min_bytes=2 * one))
    )
    await parked(rm, sid)
    await append(rm, T0, b"x" * 100)
    await still_parked(rm, sid, fetch)  # checked by the purgatory, not enough yet
    await append(rm, T1, b"y" * 100)
    resp = await fetch
    assert answered(resp) == {T0: (ErrorCode.NONE, 1, True), T1: (ErrorCode.NONE, 1, True)}


async def test_a_waiting_fetch_is_completed_empty_when_its_max_wait_passes(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1])
    sid = await open_session(rm, CONSUMER_REPLICA_ID)
    loop = asyncio.get_running_loop()
    started = loop.time()
    fetch = asyncio.create_task(rm.fetch_messages(incremental(-1, sid, 1, 50)))
    await parked(rm, sid)
    resp = await fetch  # nothing moves: the purgatory's timer ends it
    assert loop.time() - started >= 0.05
    assert resp.error_code == ErrorCode.NONE and resp.session_id == sid and resp.topics == []
    assert rm.purgatory.watched(FetchSessionKey(sid)) == 0
    # The session goes on: the next epoch is served.
    resp = await rm.fetch_messages(incremental(-1, sid, 2, 0))
    assert resp.error_code == ErrorCode.NONE and resp.topics == []


async def test_a_waiting_follower_fetch_is_completed_by_the_leaders_append(
    rm: ReplicaManager,
) -> None:
    """A caught-up follower's partitions are idle; an append moves the LEO (not the HW,
    which waits for the follower) and completes its parked fetch."""
    await lead(rm, isr=[1, FOLLOWER])
    sid = await open_session(rm, FOLLOWER)
    session = rm.fetch_sessions.get(sid)
    assert session is not None and set(session.idle) == {T0, T1}
    fetch = asyncio.create_task(rm.fetch_messages(incremental(FOLLOWER, sid, 1, LONG_POLL_MS)))
    await parked(rm, sid)
    await append(rm, T0, b"a", b"b")
    resp = await fetch
    assert answered(resp) == {T0: (ErrorCode.NONE, 0, True)}
    assert set(session.idle) == {T1} and list(session.dirty) == [T0]  # behind until it fetches


async def test_a_waiting_fetch_is_completed_with_an_error_when_leadership_moves(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1, FOLLOWER])
    sid = await open_session(rm, FOLLOWER)
    fetch = asyncio.create_task(rm.fetch_messages(incremental(FOLLOWER, sid, 1, LONG_POLL_MS)))
    await parked(rm, sid)
    await lead(rm, isr=[1, FOLLOWER], leader=FOLLOWER, epoch=1)  # broker 1 now follows
    resp = await fetch
    codes = {tp: err for tp, (err, _, _) in answered(resp).items()}
    assert codes == {T0: ErrorCode.NOT_LEADER_OR_FOLLOWER, T1: ErrorCode.NOT_LEADER_OR_FOLLOWER}


async def test_a_waiting_fetch_is_superseded_by_the_sessions_next_request(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1])
    sid = await open_session(rm, CONSUMER_REPLICA_ID)
    first = asyncio.create_task(rm.fetch_messages(incremental(-1, sid, 1, LONG_POLL_MS)))
    await parked(rm, sid)
    second = asyncio.create_task(rm.fetch_messages(incremental(-1, sid, 2, LONG_POLL_MS)))
    resp = await first
    assert resp.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH and resp.session_id == sid
    await parked(rm, sid)  # the second one waits in its place
    await rm.shutdown()  # and is answered at shutdown, as it stands
    resp = await second
    assert resp.error_code == ErrorCode.NONE and resp.topics == []


async def test_a_partition_that_moves_as_the_fetch_completes_is_not_left_idle(
    rm: ReplicaManager,
) -> None:
    """t-0, listed in the request, is read (nothing: settled); an append to t-1 completes
    the fetch in the purgatory's check, and an append to t-0 lands before the fetch resumes.
    t-0's records are in this response or the next: a settled read from before its append
    must not leave it idle with news."""
    await lead(rm, isr=[1])
    sid = await open_session(rm, CONSUMER_REPLICA_ID)
    listing_t0 = FetchRequest(
        -1,
        LONG_POLL_MS,
        1,
        1 << 20,
        [FetchTopic("t", [FetchPartition(0, 0, 1 << 20)])],
        session_id=sid,
        session_epoch=1,
    )
    fetch = asyncio.create_task(rm.fetch_messages(listing_t0))
    await parked(rm, sid)
    await append(rm, T1, b"y")  # the check that completes the fetch runs next ...
    late = asyncio.create_task(append(rm, T0, b"x"))  # ... this append right after it
    first = answered(await fetch)
    await late
    second = answered(await rm.fetch_messages(incremental(-1, sid, 2, 0)))
    assert first[T1] == (ErrorCode.NONE, 1, True)
    assert first.get(T0, (0, 0, False))[2] or second.get(T0, (0, 0, False))[2]


async def test_a_partition_that_moves_as_a_full_fetch_completes_is_not_left_idle(
    rm: ReplicaManager,
) -> None:
    """The same race for the full fetch that creates the session: a caught-up follower's
    t-0 was read settled before its append, which landed after the purgatory's check but
    before the session existed to be told. The new session must not hold t-0 idle: the
    follower's next fetch, at the same offset, gets the records."""
    await lead(rm, isr=[1, FOLLOWER])
    parts = [FetchPartition(tp.partition, 0, 1 << 20) for tp in (T0, T1)]
    full = FetchRequest(
        FOLLOWER, LONG_POLL_MS, 1, 1 << 20, [FetchTopic("t", parts)], session_epoch=0
    )
    fetch = asyncio.create_task(rm.fetch_messages(full))
    for _ in range(100):
        if rm.purgatory.watched(T0) == 1:
            break
        await asyncio.sleep(0)
    else:
        pytest.fail("the full fetch did not wait")
    await append(rm, T1, b"y")  # the check that completes the fetch runs next ...
    late = asyncio.create_task(append(rm, T0, b"x"))  # ... this append right after it
    resp = await fetch
    await late
    assert resp.session_id != 0 and answered(resp)[T1] == (ErrorCode.NONE, 0, True)
    if answered(resp)[T0][2]:
        return  # the records made it into this response after all
    again = FetchRequest(
        FOLLOWER,
        0,
        1,
        1 << 20,
        [FetchTopic("t", [FetchPartition(1, 1, 1 << 20)])],  # t-1 moved on; t-0 did not
        session_id=resp.session_id,
        session_epoch=1,
    )
    assert answered(await rm.fetch_messages(again)).get(T0, (0, 0, False))[2]


async def test_a_follower_whose_fetch_state_is_stale_is_not_left_idle(
    rm: ReplicaManager,
) -> None:
    """A caught-up follower's partition read only inside a delayed fetch's wait (where its
    fetch state is not updated) after its state was reset (as a new leader's is) must stay
    dirty: idle, its LEO would stay unknown to the leader, holding the HW back."""
    await lead(rm, isr=[1, FOLLOWER])
    sid = await open_session(rm, FOLLOWER)
    session = rm.fetch_sessions.get(sid)
    assert session is not None and set(session.idle) == {T0, T1}
    p = rm.partitions[T0]
    p.replica_state.followers[FOLLOWER] = FollowerState(FOLLOWER)  # LEO unknown
    fetch = asyncio.create_task(rm.fetch_messages(incremental(FOLLOWER, sid, 1, 50)))
    await parked(rm, sid)
    rm.purgatory.notify(T0)  # read while waiting: nothing new, state not updated
    resp = await fetch
    assert resp.error_code == ErrorCode.NONE and resp.topics == []
    assert T0 in session.dirty and T0 not in session.idle
    await rm.fetch_messages(incremental(FOLLOWER, sid, 2, 0))
    assert p.replica_state.followers[FOLLOWER].log_end_offset == 0
    assert T0 in session.idle
