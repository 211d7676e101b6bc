"""The leader-epoch truncation scenarios of design §9 (KIP-101 and KIP-279), reproduced
deterministically with replica managers over real TCP in one event loop (see conftest.py).

Broker 1 is "A", broker 2 is "B". The test plays the controller: it decides who leads in
which epoch and delivers LeaderAndIsr to whom it wants, when it wants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.replication.fetcher import FetchPhase
from minikafka.replication.replica_manager import ClientMetadata
from minikafka.rpc.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProducePartitionResponse,
)
from minikafka.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile
from minikafka.storage.log import Log
from minikafka.storage.record_batch import decode_all

from .conftest import (
    TP,
    Broker,
    BrokerFactory,
    consumer_fetch,
    leader_and_isr,
    produce,
    send,
    state,
    wait_for,
)

REPLICAS = [1, 2]


def epochs(lg: Log) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in lg.leader_epoch_cache.entries]


def epochs_on_disk(lg: Log) -> list[tuple[int, int]]:
    entries = LeaderEpochCheckpointFile(lg.dir / LEADER_EPOCH_CHECKPOINT).read()
    return [(e.epoch, e.start_offset) for e in entries]


def error_of(resp: ProducePartitionResponse) -> ErrorCode:
    return ErrorCode(resp.error_code)


async def consume(b: Broker, epoch: int) -> tuple[int, list[bytes | None]]:
    """What a consumer of `b` sees: (HW, values below it)."""
    resp: FetchResponse = await send(b, consumer_fetch(0, epoch))
    p = resp.topics[0].partitions[0]
    assert p.error_code == ErrorCode.NONE
    data = bytes(cast(memoryview, p.records)) if p.records else b""
    return p.high_watermark, [r.value for r in decode_all(data)]


def is_fetching(b: Broker) -> bool:
    return any(
        TP in f.partitions and f.partitions[TP].phase is FetchPhase.FETCHING
        for f in b.fetchers.fetchers.values()
    )


def record_follower_fetch_offsets(leader: Broker, follower_id: int) -> list[int]:
    """Spy on the leader's fetch path: the offsets `follower_id` fetches from, in order."""
    offsets: list[int] = []
    real = leader.rm.fetch_messages

    async def spy(
        req: FetchRequest,
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> FetchResponse:
        if req.replica_id == follower_id:
            offsets.extend(p.fetch_offset for t in req.topics for p in t.partitions)
        return await real(req, readable, client)

    # The API layer calls rm.fetch_messages on every request, so patching the instance is
    # enough (what the follower sends is unchanged).
    leader.rm.fetch_messages = spy  # type: ignore[method-assign]
    return offsets


def record_epoch_queries(leader: Broker) -> list[tuple[int, int]]:
    """Spy on OffsetsForLeaderEpoch at the leader: (asked epoch, answered end offset)."""
    asked: list[tuple[int, int]] = []
    real = leader.rm.offsets_for_leader_epoch

    def spy(req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
        resp = real(req)
        # One partition per request in these tests: pair the question with the answer.
        [question] = [p for t in req.topics for p in t.partitions]
        [answer] = [r for t in resp.topics for r in t.partitions]
        asked.append((question.leader_epoch, answer.end_offset))
        return resp

    leader.rm.offsets_for_leader_epoch = spy  # type: ignore[method-assign]
    return asked


async def _acked_m2_above_followers_hw(brokers: BrokerFactory) -> tuple[Broker, Broker]:
    """B leads epoch 0 with ISR {B, A}; m1 and m2 are produced with acks=all and acked.

    A's long-poll fetch (60 s) makes the timing exact: A fetched m2, and its next fetch (at
    offset 2) is what let B's HW reach 2 and answer the producer. That fetch is parked at
    B, so A has m2 but still HW 1 (§7.7: it learns the HW from the next response).
    """
    a = brokers(1, replica_fetch_wait_max_ms=60_000)
    b = brokers(2)
    await a.start()
    await b.start()
    st = state(2, 0, [2, 1], REPLICAS)
    await leader_and_isr(b, st, [b.node])
    await leader_and_isr(a, st, [b.node])
    assert error_of(await produce(b, [b"m1"])) == ErrorCode.NONE
    assert error_of(await produce(b, [b"m2"])) == ErrorCode.NONE
    assert b.log.high_watermark == 2
    assert a.log_values() == [b"m1", b"m2"]
    assert (a.log.high_watermark, a.log.log_end_offset) == (1, 2)
    # The HW checkpoint task runs now: what survives A's crash is HW 1.
    a.log_manager.checkpoint_high_watermarks()
    return a, b


async def test_restarted_follower_keeps_acked_record_above_its_hw(
    brokers: BrokerFactory,
) -> None:
    """KIP-101 scenario 1 (loss), design §9: A crashes holding m2 above its HW, restarts from
    disk and follows B again. It must not cut m2 (its first fetch asks for offset 2, not 1),
    and once B dies and A leads, m2 is still there."""
    a, b = await _acked_m2_above_followers_hw(brokers)
    a = await brokers.restart(1)
    restored = a.log_manager.get_log(TP)
    assert restored is not None
    assert (restored.high_watermark, restored.log_end_offset) == (1, 2)  # HW from the checkpoint
    fetched_from = record_follower_fetch_offsets(b, follower_id=1)
    asked = record_epoch_queries(b)

    # The controller saw A go: ISR {B}, epoch 1. A comes back as B's follower in epoch 1.
    st = state(2, 1, [2], REPLICAS)
    await leader_and_isr(b, st, [b.node])
    await leader_and_isr(a, st, [b.node])
    # A reconciles by epoch (B: epoch 0 ends at 2), then fetches and rejoins the ISR (§7.4).
    await wait_for(lambda: b.rm.partitions[TP].isr == (2, 1))
    assert asked == [(0, 2)]
    assert fetched_from[0] == 2, f"A truncated below m2 after restarting: fetched {fetched_from}"
    assert a.log_values() == [b"m1", b"m2"]

    # B dies; the controller elects A, the only live ISR member, in epoch 2.
    await b.crash()
    await leader_and_isr(a, state(1, 2, [1], REPLICAS), [a.node])
    assert await consume(a, epoch=2) == (2, [b"m1", b"m2"])


async def test_restarted_follower_that_cannot_reach_the_leader_keeps_acked_record(
    brokers: BrokerFactory,
) -> None:
    """KIP-101 scenario 1 without a second chance: A restarts and becomes B's follower, but
    B is already gone, so A cannot re-fetch anything. A must not have cut its log to the
    checkpointed HW on the way (restart or becoming follower); elected, it serves m2."""
    a, b = await _acked_m2_above_followers_hw(brokers)
    dead_b = b.node
    await b.crash()
    a = await brokers.restart(1)
    # The controller has not noticed yet: A is told to follow B (unreachable) in epoch 0.
    await leader_and_isr(a, state(2, 0, [2, 1], REPLICAS), [dead_b])
    # Let its fetcher try (and fail) to reach B before the controller moves on.
    fetcher = a.fetchers.fetchers[2]
    await wait_for(lambda: fetcher.partitions[TP].delayed_until > 0)
    assert a.log_values() == [b"m1", b"m2"]
    # Then B's failure: A leads in epoch 1 with ISR {A} (it was in the ISR when m2 was acked).
    await leader_and_isr(a, state(1, 1, [1], REPLICAS), [a.node])
    assert await consume(a, epoch=1) == (2, [b"m1", b"m2"])
    assert epochs(a.log) == [(0, 0), (1, 2)]


async def test_diverged_follower_truncates_by_leader_epoch(
    brokers: BrokerFactory,
) -> None:
    """KIP-101 scenario 2 (design §9): A has m1, m2 in epoch 0; B has only m1, becomes leader
    in epoch 1 and writes m3 at offset 1. A must drop m2 and take m3, not keep m2 at 1."""
    a, b = brokers(1), brokers(2)
    await a.start()
    await b.start()
    # Epoch 0: A leads alone and writes m1, m2; B got m1 only.
    await leader_and_isr(a, state(1, 0, [1], [1, 2]), [a.node])
    await produce(a, [b"m1"], acks=1)
    await produce(a, [b"m2"], acks=1)
    await leader_and_isr(b, state(3, 0, [1], [1, 2]), [])  # B is a follower with no leader yet
    b_log = b.rm.partitions[TP].log
    first = a.rm.partitions[TP].log.read(0, 1 << 20, max_offset=1)
    assert first.slice is not None
    b_log.append_as_follower(first.read())
    assert b.log_values() == [b"m1"]
    # Epoch 1: B leads (A is down) and writes m3 at offset 1.
    await leader_and_isr(b, state(2, 1, [2], [1, 2]), [b.node])
    await produce(b, [b"m3"], acks=1)
    # A comes back as follower of B in epoch 2.
    st = state(2, 2, [2, 1], [1, 2])
    await leader_and_isr(b, st, [b.node])
    await leader_and_isr(a, st, [b.node])
    await wait_for(lambda: a.log_values() == [b"m1", b"m3"])
    # A's epoch history now matches the leader's data: m1 in epoch 0, m3 in epoch 1.
    assert [
        (e.epoch, e.start_offset) for e in a.rm.partitions[TP].log.leader_epoch_cache.entries
    ] == [
        (0, 0),
        (1, 1),
    ]


async def test_fast_leader_changes_follower_iterates_epoch_queries(
    brokers: BrokerFactory,
) -> None:
    """KIP-279, design §9: leadership flaps A→B→A→B in epochs 0..3 faster than the
    controller's requests reach the other broker, and each leader writes meanwhile.

    A ends with epochs (0,0),(2,1) and B with (0,0),(1,1),(3,2). A asks B about its epoch 2;
    B never had it and answers epoch 1 (ending at 2), which A does not have either, so A cuts
    back to where its own history leaves epoch 0 and must ask again (about epoch 0). It ends
    with B's log and epochs exactly; the acks=all records survive; A's m2 (acks=1, never
    replicated) is dropped."""
    a, b = brokers(1), brokers(2)
    await a.start()
    await b.start()
    both = [1, 2]  # the controller never removed anyone from the ISR

    # Epoch 0: A leads, B follows; m0 is committed.
    st0 = state(1, 0, both, REPLICAS)
    await leader_and_isr(a, st0, [a.node])
    await leader_and_isr(b, st0, [a.node])
    assert error_of(await produce(a, [b"m0"])) == ErrorCode.NONE
    await wait_for(lambda: b.log.high_watermark == 1)

    # Epoch 1: B leads; A never hears of it and still thinks it leads epoch 0.
    await leader_and_isr(b, state(2, 1, both, REPLICAS), [b.node])
    assert error_of(await produce(b, [b"m1"], acks=1)) == ErrorCode.NONE
    # Epoch 2: A leads; B never hears of it and still thinks it leads epoch 1.
    await leader_and_isr(a, state(1, 2, both, REPLICAS), [a.node])
    assert error_of(await produce(a, [b"m2"], acks=1)) == ErrorCode.NONE
    # Epoch 3: B leads again and writes; this time A is told to follow it.
    await leader_and_isr(b, state(2, 3, both, REPLICAS), [b.node])
    assert error_of(await produce(b, [b"m3"], acks=1)) == ErrorCode.NONE
    assert epochs(a.log) == [(0, 0), (2, 1)]
    assert epochs(b.log) == [(0, 0), (1, 1), (3, 2)]
    assert a.log_values() == [b"m0", b"m2"]
    assert b.log_values() == [b"m0", b"m1", b"m3"]

    asked = record_epoch_queries(b)
    fetched_from = record_follower_fetch_offsets(b, follower_id=1)
    await leader_and_isr(a, state(2, 3, both, REPLICAS), [b.node])
    await wait_for(lambda: is_fetching(a) and len(fetched_from) > 0)
    # First answer: epoch 1 ends at 2 (B has no epoch 2); A has no epoch 1, cuts m2 (offset
    # 1, where its epoch 2 began) and asks about epoch 0: it ends at 1 on B. Then it fetches
    # from offset 1.
    assert asked == [(2, 2), (0, 1)]
    assert fetched_from[0] == 1

    # A committed write after the flapping: both replicas have everything B has.
    assert error_of(await produce(b, [b"m4"])) == ErrorCode.NONE
    await wait_for(lambda: a.log.high_watermark == 4)
    assert b.log.high_watermark == 4
    assert a.log_values() == b.log_values() == [b"m0", b"m1", b"m3", b"m4"]
    whole_a = a.log.read(0, 1 << 20).read()
    assert whole_a == b.log.read(0, 1 << 20).read()  # byte for byte, epochs stamped included
    assert epochs(a.log) == epochs(b.log) == [(0, 0), (1, 1), (3, 2)]
    a.log.flush()  # new epochs reach the checkpoint before the recovery point passes them
    b.log.flush()
    assert epochs_on_disk(a.log) == epochs_on_disk(b.log) == [(0, 0), (1, 1), (3, 2)]


pytestmark = pytest.mark.timeout(60)


async def test_follower_forgets_an_epoch_it_led_without_writing(
    brokers: BrokerFactory,
) -> None:
    """B becomes leader in epoch 1 with an empty log and writes nothing, so its epoch cache
    says (1, 0) with no record behind it; A, which never heard of epoch 1, leads again in
    epoch 2 with m0 (epoch 0) at offset 0. B's reconciliation truncates nothing, but must
    still drop the (1, 0) entry at its LEO (Kafka's truncateTo does this even when it has no
    effect on the log); otherwise m0's epoch 0 is "below" B's latest epoch and B can never
    append it."""
    a, b = brokers(1), brokers(2)
    await a.start()
    await b.start()
    both = [1, 2]
    await leader_and_isr(a, state(1, 0, both, REPLICAS), [a.node])
    assert error_of(await produce(a, [b"m0"], acks=1)) == ErrorCode.NONE
    await leader_and_isr(b, state(2, 1, both, REPLICAS), [b.node])  # A never hears of it
    assert epochs(b.log) == [(1, 0)] and b.log.log_end_offset == 0

    st2 = state(1, 2, both, REPLICAS)
    await leader_and_isr(a, st2, [a.node])
    await leader_and_isr(b, st2, [a.node])
    await wait_for(lambda: b.log_values() == [b"m0"])
    b.log.flush()
    assert epochs(b.log) == epochs_on_disk(b.log) == [(0, 0)]
    assert error_of(await produce(a, [b"m1"])) == ErrorCode.NONE
    assert b.log_values() == a.log_values() == [b"m0", b"m1"]
    assert epochs(b.log) == epochs(a.log) == [(0, 0), (2, 1)]


def latest_offset(b: Broker, replica_id: int = -1, timestamp: int = -1) -> tuple[int, int]:
    """(error code, offset) of a ListOffsets for partition 0 of "t" at `timestamp` (-1:
    latest), as a consumer (-1) or a replica asks it."""
    resp = b.rm.list_offsets(
        ListOffsetsRequest(
            replica_id, [ListOffsetsTopic("t", [ListOffsetsPartition(0, timestamp)])]
        )
    )
    [p] = resp.topics[0].partitions
    return p.error_code, p.offset


async def test_a_new_leader_whose_hw_lags_its_epoch_start_answers_offset_not_available(
    brokers: BrokerFactory,
) -> None:
    """KIP-207: A holds m1, m2 with HW 1 when B (the leader that acked both) dies; elected
    with B still in the ISR, A's HW stays 1 below its epoch's start, 2. A consumer asking
    the latest offset would be told 1, lower than B told it: A answers OFFSET_NOT_AVAILABLE
    (retriable) until its HW reaches 2. Replicas are answered as before."""
    a, b = await _acked_m2_above_followers_hw(brokers)
    assert latest_offset(b) == (ErrorCode.NONE, 2)
    await b.crash()
    await leader_and_isr(a, state(1, 1, [1, 2], REPLICAS), [a.node])
    assert (a.log.high_watermark, a.log.log_end_offset) == (1, 2)
    assert latest_offset(a) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)
    # By timestamp: a record below the HW is found; none there may be above it: not available.
    assert latest_offset(a, timestamp=0) == (ErrorCode.NONE, 0)
    assert latest_offset(a, timestamp=10**15)[0] == ErrorCode.OFFSET_NOT_AVAILABLE
    assert latest_offset(a, timestamp=-2) == (ErrorCode.NONE, 0)  # earliest
    assert latest_offset(a, replica_id=2) == (ErrorCode.NONE, 2)  # a replica: the LEO
    # The controller takes B out of the ISR: A's HW reaches its epoch's start.
    await leader_and_isr(a, state(1, 2, [1], REPLICAS), [a.node])
    assert latest_offset(a) == (ErrorCode.NONE, 2)
