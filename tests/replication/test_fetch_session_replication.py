"""KIP-227 fetch sessions between real replica managers over loopback TCP (see conftest;
the test plays the controller): followers replicate through incremental sessions, idle
partitions cost nothing on the wire yet stay in the ISR, a lost session (evicted, leader
restarted) is replaced by a full fetch, and sessions can be switched off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, FetchSession
from minikafka.replication.partition_state import FollowerState
from minikafka.replication.purgatory import FetchSessionKey
from minikafka.replication.replica_manager import ClientMetadata
from minikafka.rpc.messages import (
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
)
from minikafka.server.network import SocketServer

from .conftest import TP, Broker, BrokerFactory, leader_and_isr, produce, state, wait_for

pytestmark = pytest.mark.timeout(90)


@dataclass
class Exchange:
    session_id: int
    epoch: int
    listed: list[TopicPartition]
    forgotten: list[TopicPartition]
    error_code: int = -99
    answered: list[TopicPartition] = field(default_factory=list)
    response_session_id: int = -1

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


def spy_fetches(leader: Broker, follower_id: int) -> list[Exchange]:
    """Every fetch `follower_id` sends `leader`, with what came back."""
    seen: list[Exchange] = []
    real = leader.rm.fetch_messages

    async def spy(
        req: FetchRequest,
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> FetchResponse:
        if req.replica_id != follower_id:
            return await real(req, readable, client)
        ex = Exchange(
            req.session_id,
            req.session_epoch,
            [TopicPartition(t.name, p.partition) for t in req.topics for p in t.partitions],
            [TopicPartition(f.name, p) for f in req.forgotten_topics for p in f.partitions],
        )
        seen.append(ex)
        resp = await real(req)
        ex.error_code = resp.error_code
        ex.answered = [
            TopicPartition(t.name, p.partition) for t in resp.topics for p in t.partitions
        ]
        ex.response_session_id = resp.session_id
        return resp

    leader.rm.fetch_messages = spy  # type: ignore[method-assign]
    return seen


def answered(seen: list[Exchange]) -> list[Exchange]:
    return [ex for ex in seen if ex.error_code != -99]


def states(
    leader: int, epoch: int, isr: list[int], replicas: list[int], partitions: range
) -> list[LeaderAndIsrPartitionState]:
    return [
        LeaderAndIsrPartitionState("t", p, 1, leader, epoch, isr, 0, replicas) for p in partitions
    ]


async def leader_and_isr_many(
    b: Broker, sts: list[LeaderAndIsrPartitionState], leaders: list[Broker]
) -> None:
    await b.rm.become_leader_or_follower(
        LeaderAndIsrRequest(0, 1, -1, sts, [x.node for x in leaders])
    )


async def replicating_pair(
    brokers: BrokerFactory, **leader_overrides: object
) -> tuple[Broker, Broker]:
    leader, follower = brokers(1, **leader_overrides), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])
    assert (await produce(leader, [b"a", b"b"])).error_code == ErrorCode.NONE
    await wait_for(lambda: follower.log.high_watermark == 2)
    return leader, follower


async def test_a_follower_replicates_through_an_incremental_session(
    brokers: BrokerFactory,
) -> None:
    leader, follower = await replicating_pair(brokers)
    [session] = leader.rm.fetch_sessions.sessions.values()
    fetcher = follower.fetchers.fetchers[1]
    assert fetcher.session.metadata.session_id == session.id
    seen = spy_fetches(leader, 2)
    await wait_for(lambda: len(seen) >= 5)
    # Idle: incremental requests that list nothing, answered with nothing; the partition
    # is idle on the leader (its follower state refreshed in place, not read).
    done = answered(seen)[1:]
    assert all(not ex.full and ex.listed == [] and ex.answered == [] for ex in done)
    assert all(ex.response_session_id == session.id for ex in done)
    assert TP in session.idle and not session.dirty
    epochs = [ex.epoch for ex in seen]
    assert epochs == list(range(epochs[0], epochs[0] + len(epochs)))
    # New data: only the partition that moved is listed and answered.
    assert (await produce(leader, [b"c"])).error_code == ErrorCode.NONE
    assert follower.log_values() == [b"a", b"b", b"c"]
    await wait_for(lambda: any(ex.answered == [TP] for ex in seen))  # the data, the new HW
    await wait_for(lambda: any(ex.listed == [TP] for ex in seen))  # the follower's new offset
    await wait_for(lambda: follower.log.high_watermark == 3)
    assert all(not ex.full for ex in seen)
    assert fetcher.failed_requests == 0


async def test_a_parked_incremental_fetch_wakes_on_new_data(brokers: BrokerFactory) -> None:
    """A 30 s long poll on the session: each acks=all produce completes as soon as the
    follower has the data, not when the poll expires."""
    leader, follower = brokers(1), brokers(2, replica_fetch_wait_max_ms=30_000)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])
    loop = asyncio.get_running_loop()
    for i in range(5):
        started = loop.time()
        assert (await produce(leader, [f"m{i}".encode()])).error_code == ErrorCode.NONE
        assert loop.time() - started < 5
    assert len(follower.log_values()) == 5
    [session] = leader.rm.fetch_sessions.sessions.values()
    # Parked in the purgatory, on the session.
    await wait_for(lambda: leader.rm.purgatory.watched(FetchSessionKey(session.id)) == 1)


async def test_many_idle_partitions_cost_nothing_on_the_wire(brokers: BrokerFactory) -> None:
    parts = range(40)
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    sts = states(1, 0, [1, 2], [1, 2], parts)
    await leader_and_isr_many(leader, sts, [leader])
    await leader_and_isr_many(follower, sts, [leader])
    [session] = await _one_session(leader)
    await wait_for(lambda: len(session.idle) == len(parts))
    seen = spy_fetches(leader, 2)
    assert (await produce(leader, [b"x"], partition=7)).error_code == ErrorCode.NONE
    tp7 = TopicPartition("t", 7)
    assert follower.rm.partitions[tp7].log.log_end_offset == 1
    await wait_for(lambda: len(seen) >= 4)
    # Every response carried only partition 7, and only the requests after its append list it.
    assert {tp for ex in seen for tp in ex.answered} == {tp7}
    assert {tp for ex in seen for tp in ex.listed} == {tp7}
    assert all(not ex.full for ex in seen)


async def _one_session(leader: Broker) -> list[FetchSession[FollowerState]]:
    await wait_for(lambda: len(leader.rm.fetch_sessions) == 1)
    return list(leader.rm.fetch_sessions.sessions.values())


async def test_an_idle_caught_up_follower_stays_in_the_isr(brokers: BrokerFactory) -> None:
    """replica.lag.time.max.ms = 1 s. The follower sends incremental fetches that list
    nothing for 3 s: the leader still counts it as fetching at the end of the log, so the
    isr-expiration check keeps it. Once it stops fetching, it is removed after the lag."""
    leader, follower = await replicating_pair(brokers, replica_lag_time_max_ms=1000)
    seen = spy_fetches(leader, 2)
    p = leader.rm.partitions[TP]
    loop = asyncio.get_running_loop()
    end = loop.time() + 3
    while loop.time() < end:
        await asyncio.sleep(0.25)  # the isr-expiration task runs every lag / 2
        await leader.rm.shrink_isrs()
        assert p.isr == (1, 2)
        age = leader.rm._clock.now_ms() - p.replica_state.followers[2].last_caught_up_time_ms
        assert age < 1000
    assert len(seen) > 10 and all(ex.listed == [] and not ex.full for ex in seen[1:])
    assert leader.znodes.writes == []
    # Negative control: the follower dies; its idle session refreshes nothing any more.
    await follower.crash()
    await asyncio.sleep(1.2)
    assert (await produce(leader, [b"c"], acks=1)).error_code == ErrorCode.NONE
    await leader.rm.shrink_isrs()
    assert p.isr == (1,)


async def test_an_evicted_session_is_replaced_by_a_full_fetch(brokers: BrokerFactory) -> None:
    leader, follower = await replicating_pair(brokers)
    fetcher = follower.fetchers.fetchers[1]
    [old] = leader.rm.fetch_sessions.sessions.values()
    seen = spy_fetches(leader, 2)
    leader.rm.fetch_sessions.remove(old.id)
    await wait_for(lambda: len(leader.rm.fetch_sessions) == 1)
    [new] = leader.rm.fetch_sessions.sessions.values()
    assert new.id != old.id
    # One incremental request got FETCH_SESSION_ID_NOT_FOUND, the next one was full (at
    # once: no backoff), and created the new session.
    codes = [ex.error_code for ex in seen]
    i = codes.index(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert seen[i].session_id == old.id and seen[i + 1].full
    assert seen[i + 1].listed == [TP] and seen[i + 1].response_session_id == new.id
    assert fetcher.failed_requests == 0
    assert (await produce(leader, [b"c"])).error_code == ErrorCode.NONE
    assert follower.log_values() == [b"a", b"b", b"c"]


async def test_a_stale_epoch_gets_a_full_fetch_that_closes_the_old_session(
    brokers: BrokerFactory,
) -> None:
    leader, follower = await replicating_pair(brokers)
    [old] = leader.rm.fetch_sessions.sessions.values()
    seen = spy_fetches(leader, 2)
    await wait_for(lambda: len(seen) >= 1)
    old.epoch += 5  # as if another request had moved the session on
    await wait_for(lambda: old.id not in leader.rm.fetch_sessions.sessions)
    await wait_for(lambda: len(leader.rm.fetch_sessions) == 1)
    codes = [ex.error_code for ex in seen]
    i = codes.index(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    # Kafka's nextCloseExisting: the full request names the old session, which is closed.
    assert (seen[i + 1].session_id, seen[i + 1].epoch) == (old.id, INITIAL_EPOCH)
    assert (await produce(leader, [b"c"])).error_code == ErrorCode.NONE
    assert follower.log_values() == [b"a", b"b", b"c"]


async def test_replication_survives_a_leader_restart_that_loses_the_session(
    brokers: BrokerFactory,
) -> None:
    leader, follower = await replicating_pair(brokers)
    fetcher = follower.fetchers.fetchers[1]
    full_before = fetcher.session.full_requests
    port = leader.server.port
    # The leader process restarts at the same address: its sessions are gone.
    new = await brokers.restart(1)
    await new.server.stop()
    new.server = SocketServer(new.apis.handle, "127.0.0.1", port)
    await new.start()
    await leader_and_isr(new, state(1, 0, [1, 2], [1, 2]), [new.node])
    assert follower.fetchers.fetchers[1] is fetcher  # same fetcher, same address
    assert (await produce(new, [b"c"])).error_code == ErrorCode.NONE
    assert follower.log_values() == [b"a", b"b", b"c"]
    assert fetcher.session.full_requests > full_before
    [session] = new.rm.fetch_sessions.sessions.values()
    assert fetcher.session.metadata.session_id == session.id


async def test_a_partition_that_changes_leader_is_forgotten_by_the_old_session(
    brokers: BrokerFactory,
) -> None:
    b1, b2 = brokers(1), brokers(2)
    await b1.start()
    await b2.start()
    both = [1, 2]
    sts = states(1, 0, both, both, range(2))
    await leader_and_isr_many(b1, sts, [b1])
    await leader_and_isr_many(b2, sts, [b1])
    [s1] = await _one_session(b1)
    seen = spy_fetches(b1, 2)
    # Partition 1 moves to broker 2 (epoch 1); broker 1 follows it there.
    moved = states(2, 1, both, both, range(1, 2))
    await leader_and_isr_many(b2, moved, [b2])
    await leader_and_isr_many(b1, moved, [b2])
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    await wait_for(lambda: any(tp1 in ex.forgotten for ex in seen))
    assert tp1 not in s1.partitions
    assert (await produce(b2, [b"on-2"], partition=1)).error_code == ErrorCode.NONE
    assert (await produce(b1, [b"on-1"], partition=0)).error_code == ErrorCode.NONE
    assert b1.rm.partitions[tp1].log.log_end_offset == 1
    assert b2.rm.partitions[tp0].log.log_end_offset == 1
    assert len(b2.rm.fetch_sessions) == 1  # broker 1's session on broker 2


async def test_sessions_can_be_disabled(brokers: BrokerFactory) -> None:
    """max.incremental.fetch.session.cache.slots=0: the leader never creates a session, so
    every fetch is a full one listing every partition, as before KIP-227; an idle follower
    stays in the ISR that way too."""
    leader, follower = await replicating_pair(
        brokers, max_incremental_fetch_session_cache_slots=0, replica_lag_time_max_ms=1000
    )
    seen = spy_fetches(leader, 2)
    await asyncio.sleep(1.5)
    await leader.rm.shrink_isrs()
    assert leader.rm.partitions[TP].isr == (1, 2)
    assert len(seen) >= 5 and len(leader.rm.fetch_sessions) == 0
    assert all(ex.full and ex.listed == [TP] and ex.answered == [TP] for ex in answered(seen))
    assert all(ex.response_session_id == 0 for ex in answered(seen))
    assert (await produce(leader, [b"c"])).error_code == ErrorCode.NONE
    assert follower.log_values() == [b"a", b"b", b"c"]
