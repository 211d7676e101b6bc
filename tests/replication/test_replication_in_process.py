"""Leader and follower replica managers talking over real TCP inside one event loop.

No ZooKeeper and no controller: the test plays the controller by sending LeaderAndIsr
itself, which is exactly what these components see in a cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from minikafka.client.connection import BrokerConnection
from minikafka.clock import SYSTEM_CLOCK, Clock, ManualClock
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import (
    BrokerNode,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ProducePartition,
    ProduceRequest,
    ProduceResponse,
    ProduceTopic,
)
from minikafka.replication.fetcher import ReplicaFetcherManager
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.server.config import BrokerConfig
from minikafka.server.kafka_apis import KafkaApis
from minikafka.server.metadata_cache import MetadataCache
from minikafka.server.network import SocketServer
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.record_batch import build_batch, decode_all
from minikafka.zk.client import ZkClient

TP = TopicPartition("t", 0)


class FakeStateZnodes:
    """Stands in for the state znodes' conditional writes (the real ones are tested against
    ZooKeeper in tests/zk): a version per partition, bumped on each accepted write."""

    def __init__(self) -> None:
        self.version: dict[TopicPartition, int] = {}
        self.writes: list[tuple[int, ...]] = []
        self.notified: list[list[TopicPartition]] = []

    async def write(self, tp: TopicPartition, new: LeaderAndIsr, expected: int) -> int | None:
        if self.version.get(tp, 0) != expected:
            return None
        self.version[tp] = expected + 1
        self.writes.append(new.isr)
        return expected + 1

    async def notify(self, tps: list[TopicPartition]) -> None:
        self.notified.append(tps)


class Broker:
    def __init__(
        self, broker_id: int, data: Path, clock: Clock = SYSTEM_CLOCK, **overrides: Any
    ) -> None:
        self.config = BrokerConfig(
            broker_id=broker_id,
            log_dirs=(str(data / f"b{broker_id}"),),
            replica_fetch_wait_max_ms=100,
            replica_fetch_backoff_ms=50,
            **overrides,
        )
        self.znodes = FakeStateZnodes()
        self.log_manager = LogManager([Path(d) for d in self.config.log_dirs], LogConfig())
        self.log_manager.startup()

        async def no_overrides(topics: list[str]) -> dict[str, LogConfig]:
            return {}

        self.rm = ReplicaManager(
            self.config,
            self.log_manager,
            clock,
            no_overrides,
            isr_writer=self.znodes.write,
            isr_change_notifier=self.znodes.notify,
        )
        self.fetchers = ReplicaFetcherManager(self.rm, self.config)
        self.rm.fetcher_manager = self.fetchers
        self.apis = KafkaApis(
            self.config,
            self.rm,
            MetadataCache(broker_id),
            cast(ZkClient, None),  # the admin paths are not used here
            None,
            SYSTEM_CLOCK.now_ms,
        )
        self.server = SocketServer(self.apis.handle, "127.0.0.1", 0)

    @property
    def node(self) -> BrokerNode:
        return BrokerNode(self.config.broker_id, "127.0.0.1", self.server.port)

    async def start(self) -> None:
        await self.server.start()

    async def stop(self) -> None:
        await self.rm.shutdown()
        await self.fetchers.shutdown()
        await self.server.stop()
        self.log_manager.shutdown()

    def log_values(self) -> list[bytes | None]:
        lg = self.rm.partitions[TP].log
        info = lg.read(lg.log_start_offset, 1 << 20)
        return [] if info.slice is None else [r.value for r in decode_all(info.read())]


@pytest.fixture
async def brokers(tmp_path: Path) -> AsyncIterator[Callable[..., Broker]]:
    made: dict[int, Broker] = {}

    def get(broker_id: int, **kwargs: Any) -> Broker:
        if broker_id not in made:
            made[broker_id] = Broker(broker_id, tmp_path, **kwargs)
        return made[broker_id]

    yield get
    for b in made.values():
        await b.stop()


def state(
    leader: int, epoch: int, isr: list[int], replicas: list[int]
) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState("t", 0, 1, leader, epoch, isr, 0, replicas)


async def leader_and_isr(
    b: Broker, st: LeaderAndIsrPartitionState, leaders: list[BrokerNode], controller_epoch: int = 1
) -> LeaderAndIsrResponse:
    return await b.rm.become_leader_or_follower(
        LeaderAndIsrRequest(0, controller_epoch, -1, [st], leaders)
    )


async def send(b: Broker, request: Any) -> Any:
    conn = BrokerConnection("127.0.0.1", b.server.port)
    await conn.connect()
    try:
        return await conn.send(request, timeout_s=10)
    finally:
        await conn.close()


def produce(values: list[bytes], acks: int = -1, timeout_ms: int = 5_000) -> ProduceRequest:
    batch = build_batch(values, base_offset=0, partition_leader_epoch=0)
    return ProduceRequest(acks, timeout_ms, [ProduceTopic("t", [ProducePartition(0, batch)])])


def consumer_fetch(offset: int, epoch: int = -1) -> FetchRequest:
    return FetchRequest(
        -1, 0, 1, 1 << 20, [FetchTopic("t", [FetchPartition(0, offset, 1 << 20, epoch)])]
    )


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail("condition not met in time")
        await asyncio.sleep(0.01)


async def test_acks_all_is_answered_once_the_follower_has_the_records(
    brokers: Callable[[int], Broker],
) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])

    resp: ProduceResponse = await send(leader, produce([b"a", b"b", b"c"]))
    part = resp.topics[0].partitions[0]
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
    resp: ProduceResponse = await send(leader, produce([b"x"], acks=1))
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NONE
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
    resp: ProduceResponse = await send(leader, produce([b"x"], timeout_ms=200))
    assert resp.topics[0].partitions[0].error_code == ErrorCode.REQUEST_TIMED_OUT


async def test_acks_all_below_min_isr_is_rejected_before_append(
    brokers: Callable[[int], Broker],
) -> None:
    leader = brokers(1)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1], [1, 2]), [leader.node])
    leader.rm.partitions[TP].log.config = LogConfig(min_insync_replicas=2)
    resp: ProduceResponse = await send(leader, produce([b"x"]))
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NOT_ENOUGH_REPLICAS
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
    resp: ProduceResponse = await send(follower, produce([b"x"], acks=1))
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
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


async def test_diverged_follower_truncates_by_leader_epoch(
    brokers: Callable[[int], Broker],
) -> None:
    """KIP-101 scenario 2 (DESIGN §9): A has m1, m2 in epoch 0; B has only m1, becomes leader
    in epoch 1 and writes m3 at offset 1. A must drop m2 and take m3, not keep m2 at 1."""
    a, b = brokers(1), brokers(2)
    await a.start()
    await b.start()
    # Epoch 0: A leads alone and writes m1, m2; B got m1 only.
    await leader_and_isr(a, state(1, 0, [1], [1, 2]), [a.node])
    await send(a, produce([b"m1"], acks=1))
    await send(a, produce([b"m2"], acks=1))
    await leader_and_isr(b, state(3, 0, [1], [1, 2]), [])  # B is a follower with no leader yet
    b_log = b.rm.partitions[TP].log
    first = a.rm.partitions[TP].log.read(0, 1 << 20, max_offset=1)
    assert first.slice is not None
    b_log.append_as_follower(first.read())
    assert b.log_values() == [b"m1"]
    # Epoch 1: B leads (A is down) and writes m3 at offset 1.
    await leader_and_isr(b, state(2, 1, [2], [1, 2]), [b.node])
    await send(b, produce([b"m3"], acks=1))
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


async def test_caught_up_follower_joins_the_isr_and_the_change_is_propagated(
    brokers: Callable[..., Broker],
) -> None:
    clock = ManualClock(1_000_000)
    leader = brokers(1, clock=clock, isr_change_propagation_blackout_ms=5000)
    follower = brokers(2)
    await leader.start()
    await follower.start()
    await leader_and_isr(leader, state(1, 0, [1], [1, 2]), [leader.node])
    await send(leader, produce([b"a", b"b"], acks=1))
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


async def test_lagging_follower_is_removed_from_the_isr_after_the_lag_time(
    brokers: Callable[..., Broker],
) -> None:
    clock = ManualClock(1_000_000)
    leader = brokers(1, clock=clock, replica_lag_time_max_ms=10_000)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    await send(leader, produce([b"a"], acks=1))
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
    waiting = asyncio.create_task(send(leader, produce([b"x"], timeout_ms=10_000)))
    await wait_for(lambda: leader.rm.partitions[TP].log_end_offset == 1)
    await leader_and_isr(leader, state(1, 1, [1], [1, 2]), [leader.node])
    resp: ProduceResponse = await waiting
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NONE


async def test_acks_all_fails_when_the_leader_becomes_a_follower(
    brokers: Callable[..., Broker],
) -> None:
    leader = brokers(1)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    waiting = asyncio.create_task(send(leader, produce([b"x"], timeout_ms=10_000)))
    await wait_for(lambda: leader.rm.partitions[TP].log_end_offset == 1)
    await leader_and_isr(leader, state(2, 1, [2], [1, 2]), [])
    resp: ProduceResponse = await waiting
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
