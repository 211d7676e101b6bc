"""Leader and follower replica managers talking over real TCP inside one event loop.

No ZooKeeper and no controller: the test plays the controller by sending LeaderAndIsr
itself, which is exactly what these components see in a cluster. The brokers and helpers
are in conftest.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from minikafka.clock import ManualClock
from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.messages import FetchResponse, LeaderAndIsrRequest
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import decode_all

from .conftest import (
    TP,
    Broker,
    consumer_fetch,
    leader_and_isr,
    produce,
    send,
    state,
    wait_for,
)


async def test_acks_all_is_answered_once_the_follower_has_the_records(
    brokers: Callable[[int], Broker],
) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])

    part = await produce(leader, [b"a", b"b", b"c"])
    assert (part.error_code, part.base_offset) == (ErrorCode.NONE, 0)
    # acks=all returned, so the follower holds all three records and the HW covers them.
    assert follower.log_values() == [b"a", b"b", b"c"]
    assert leader.rm.partitions[TP].high_watermark == 3
    # The follower learns the HW on a later fetch (§7.7).
    await wait_for(lambda: follower.rm.partitions[TP].high_watermark == 3)

    fetched: FetchResponse = await send(leader, consumer_fetch(0))
    p = fetched.topics[0].partitions[0]
    assert p.error_code == ErrorCode.NONE and p.high_watermark == 3
    assert [r.value for r in decode_all(bytes(cast(memoryview, p.records)))] == [b"a", b"b", b"c"]


async def test_consumers_see_only_up_to_the_high_watermark(
    brokers: Callable[[int], Broker],
) -> None:
    leader = brokers(1)
    await leader.start()
    # Follower 2 is in the ISR but not running: the HW cannot pass what it has (nothing).
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    resp = await produce(leader, [b"x"], acks=1)
    assert resp.error_code == ErrorCode.NONE
    fetched: FetchResponse = await send(leader, consumer_fetch(0))
    p = fetched.topics[0].partitions[0]
    assert (p.error_code, p.high_watermark, p.log_end_offset) == (ErrorCode.NONE, 0, 1)
    assert not p.records


async def test_acks_all_times_out_when_the_follower_does_not_fetch(
    brokers: Callable[[int], Broker],
) -> None:
    leader = brokers(1)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    resp = await produce(leader, [b"x"], timeout_ms=200)
    assert resp.error_code == ErrorCode.REQUEST_TIMED_OUT


async def test_acks_all_below_min_isr_is_rejected_before_append(
    brokers: Callable[[int], Broker],
) -> None:
    leader = brokers(1)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1], [1, 2]), [leader.node])
    leader.rm.partitions[TP].log.config = LogConfig(min_insync_replicas=2)
    resp = await produce(leader, [b"x"])
    assert resp.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.rm.partitions[TP].log_end_offset == 0


async def test_produce_to_a_follower_is_refused_and_changes_nothing(
    brokers: Callable[[int], Broker],
) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])
    resp = await produce(follower, [b"x"], acks=1)
    assert resp.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert follower.rm.partitions[TP].log_end_offset == 0


async def test_stale_controller_epoch_and_old_leader_epoch_are_ignored(
    brokers: Callable[[int], Broker],
) -> None:
    b = brokers(1)
    await b.start()
    await leader_and_isr(b, state(1, 3, [1], [1]), [b.node], controller_epoch=5)
    stale = await b.apis.handle_leader_and_isr(
        LeaderAndIsrRequest(0, 4, -1, [state(2, 9, [2], [1, 2])], [])
    )
    assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    same_epoch = await leader_and_isr(b, state(2, 3, [1, 2], [1, 2]), [], controller_epoch=5)
    assert same_epoch.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    p = b.rm.partitions[TP]
    assert (p.leader_id, p.leader_epoch) == (1, 3)


async def test_fetch_with_old_or_future_leader_epoch_is_fenced(
    brokers: Callable[[int], Broker],
) -> None:
    b = brokers(1)
    await b.start()
    await leader_and_isr(b, state(1, 3, [1], [1]), [b.node])
    old: FetchResponse = await send(b, consumer_fetch(0, epoch=2))
    new: FetchResponse = await send(b, consumer_fetch(0, epoch=4))
    assert old.topics[0].partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert new.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


async def test_caught_up_follower_joins_the_isr_and_the_change_is_propagated(
    brokers: Callable[..., Broker],
) -> None:
    clock = ManualClock(1_000_000)
    leader = brokers(1, clock=clock, isr_change_propagation_blackout_ms=5000)
    follower = brokers(2)
    await leader.start()
    await follower.start()
    await leader_and_isr(leader, state(1, 0, [1], [1, 2]), [leader.node])
    await produce(leader, [b"a", b"b"], acks=1)
    assert leader.rm.partitions[TP].high_watermark == 2  # ISR is only the leader
    await leader_and_isr(follower, state(1, 0, [1], [1, 2]), [leader.node])
    # §7.4: once the follower's LEO reaches the HW (and the epoch start) it is added.
    await wait_for(lambda: leader.rm.partitions[TP].isr == (1, 2))
    assert leader.znodes.writes == [(1, 2)]
    assert leader.rm.partitions[TP].zk_version == 1
    # Propagation waits for 5 s without changes (§8.5), then writes one notification.
    await leader.rm.propagate_isr_changes()
    assert leader.znodes.notified == []
    clock.advance(5001)
    await leader.rm.propagate_isr_changes()
    assert leader.znodes.notified == [[TP]]


async def test_a_broker_shutting_down_does_not_fetch_as_a_new_follower(
    brokers: Callable[..., Broker],
) -> None:
    """A broker that asked for its controlled shutdown, made follower of a partition it led
    (the controller moved it), does not fetch: it would catch up and rejoin the ISR the
    controller just took it out of."""
    leader, leaving = brokers(1), brokers(2)
    await leader.start()
    await leaving.start()
    await leader_and_isr(leader, state(1, 0, [1], [1, 2]), [leader.node])
    await produce(leader, [b"a"], acks=1)
    leaving.rm.leaving = True
    await leader_and_isr(leaving, state(1, 0, [1], [1, 2]), [leader.node])
    assert not leaving.rm.partitions[TP].is_leader
    assert leaving.fetchers.partition_count() == 0
    leaving.rm.leaving = False  # a follower that is staying fetches and joins
    await leader_and_isr(leaving, state(1, 1, [1], [1, 2]), [leader.node])
    await leader_and_isr(leader, state(1, 1, [1], [1, 2]), [leader.node])
    await wait_for(lambda: leader.rm.partitions[TP].isr == (1, 2))


async def test_lagging_follower_is_removed_from_the_isr_after_the_lag_time(
    brokers: Callable[..., Broker],
) -> None:
    clock = ManualClock(1_000_000)
    leader = brokers(1, clock=clock, replica_lag_time_max_ms=10_000)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    await produce(leader, [b"a"], acks=1)
    assert leader.rm.partitions[TP].high_watermark == 0  # held back by follower 2
    await leader.rm.shrink_isrs()
    assert leader.rm.partitions[TP].isr == (1, 2)  # not lagging long enough yet
    clock.advance(10_001)
    await leader.rm.shrink_isrs()
    p = leader.rm.partitions[TP]
    assert p.isr == (1,)
    assert p.high_watermark == 1  # §7.3: HW recomputed without the removed follower
    assert leader.znodes.writes == [(1,)]


async def test_isr_write_rejected_by_zookeeper_keeps_the_old_isr(
    brokers: Callable[..., Broker],
) -> None:
    clock = ManualClock(1_000_000)
    leader = brokers(1, clock=clock, replica_lag_time_max_ms=10_000)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    leader.znodes.version[TP] = 7  # the controller wrote the znode meanwhile
    clock.advance(10_001)
    await leader.rm.shrink_isrs()
    assert leader.rm.partitions[TP].isr == (1, 2)
    assert leader.rm.failed_isr_updates == 1


async def test_acks_all_survives_an_epoch_bump_that_keeps_the_leader(
    brokers: Callable[..., Broker],
) -> None:
    """The controller removing a dead follower bumps the leader epoch but keeps the leader;
    a waiting acks=all produce then completes instead of failing (Kafka's DelayedProduce
    only fails when leadership is lost)."""
    leader = brokers(1)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    waiting = asyncio.create_task(produce(leader, [b"x"], timeout_ms=10_000))
    await wait_for(lambda: leader.rm.partitions[TP].log_end_offset == 1)
    await leader_and_isr(leader, state(1, 1, [1], [1, 2]), [leader.node])
    resp = await waiting
    assert resp.error_code == ErrorCode.NONE


async def test_acks_all_fails_when_the_leader_becomes_a_follower(
    brokers: Callable[..., Broker],
) -> None:
    leader = brokers(1)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    waiting = asyncio.create_task(produce(leader, [b"x"], timeout_ms=10_000))
    await wait_for(lambda: leader.rm.partitions[TP].log_end_offset == 1)
    await leader_and_isr(leader, state(2, 1, [2], [1, 2]), [])
    resp = await waiting
    assert resp.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
