"""Shared helpers for replication tests that run whole replica managers in one event loop.

Each `Broker` is a replica manager, its fetchers, log manager and socket server (the
brokers' RPC), talking to the others over real TCP on loopback. No ZooKeeper and no
controller: a test plays the controller by sending LeaderAndIsr itself, and
`FakeStateZnodes` stands in for the state znodes' conditional writes. A producer's records
are handed to the broker's services in process, as its Kafka Produce handler hands them on:
what these tests check is replication (acks, the ISR, the high watermark), not the wire.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from minikafka.clock import SYSTEM_CLOCK, Clock
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.replication.fetcher import ReplicaFetcherManager
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.connection import BrokerConnection
from minikafka.rpc.messages import (
    BrokerNode,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ProducePartitionResponse,
)
from minikafka.server.broker_services import BrokerServices
from minikafka.server.metadata_cache import MetadataCache
from minikafka.server.network import SocketServer
from minikafka.server.rpc_apis import RpcApis
from minikafka.storage.log import Log
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
        self.overrides = overrides
        self.clock = clock
        self.config = BrokerConfig(
            broker_id=broker_id,
            log_dirs=(str(data / f"b{broker_id}"),),
            **{"replica_fetch_wait_max_ms": 100, "replica_fetch_backoff_ms": 50, **overrides},
        )
        self.znodes = FakeStateZnodes()
        # As the broker does: log.* overrides (segment size...) reach every log.
        self.log_manager = LogManager(
            [Path(d) for d in self.config.log_dirs], self.config.log_config()
        )
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
        self.services = BrokerServices(
            self.config,
            self.rm,
            MetadataCache(broker_id),
            cast(ZkClient, None),  # the admin paths are not used here
            None,
            SYSTEM_CLOCK.now_ms,
        )
        self.apis = RpcApis(self.services)
        self.server = SocketServer(self.apis.handle, "127.0.0.1", 0)
        self.stopped = False

    @property
    def node(self) -> BrokerNode:
        return BrokerNode(self.config.broker_id, "127.0.0.1", self.server.port)

    @property
    def log(self) -> Log:
        return self.rm.partitions[TP].log

    async def start(self) -> None:
        await self.server.start()

    async def _stop_serving(self) -> None:
        self.stopped = True
        await self.rm.shutdown()
        await self.fetchers.shutdown()
        await self.server.stop()

    async def stop(self) -> None:
        """Clean shutdown: checkpoints and the clean-shutdown marker are written."""
        if self.stopped:
            return
        await self._stop_serving()
        self.log_manager.shutdown()

    async def crash(self) -> None:
        """The process dies: nothing is flushed or checkpointed on the way out (what the
        periodic tasks wrote before stays; written bytes are in the page cache)."""
        if self.stopped:
            return
        await self._stop_serving()
        self.log_manager.close_without_shutdown()

    def log_values(self) -> list[bytes | None]:
        lg = self.rm.partitions[TP].log
        info = lg.read(lg.log_start_offset, 1 << 20)
        return [] if info.slice is None else [r.value for r in decode_all(info.read())]


class BrokerFactory:
    """`brokers(id, **overrides)` makes (once) and returns broker `id`; `restart` replaces a
    broker by a fresh process over the same log dir."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.made: dict[int, Broker] = {}

    def __call__(self, broker_id: int, **kwargs: Any) -> Broker:
        if broker_id not in self.made:
            self.made[broker_id] = Broker(broker_id, self.data, **kwargs)
        return self.made[broker_id]

    async def restart(self, broker_id: int, *, crash: bool = True) -> Broker:
        """Stop broker `id` (kill -9 style unless `crash=False`) and start a new process over
        its log dir, with the same clock and overrides: all in-memory state is rebuilt from
        disk (logs, checkpoints, leader-epoch caches)."""
        old = self.made[broker_id]
        await (old.crash() if crash else old.stop())
        new = Broker(broker_id, self.data, old.clock, **old.overrides)
        self.made[broker_id] = new
        await new.start()
        return new

    async def stop_all(self) -> None:
        for b in self.made.values():
            await b.stop()


@pytest.fixture
async def brokers(tmp_path: Path) -> AsyncIterator[BrokerFactory]:
    factory = BrokerFactory(tmp_path)
    yield factory
    await factory.stop_all()


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
    """An RPC request (a consumer's fetch, or what brokers send) over b's socket server."""
    conn = BrokerConnection("127.0.0.1", b.server.port)
    await conn.connect()
    try:
        return await conn.send(request, timeout_s=10)
    finally:
        await conn.close()


async def produce(
    b: Broker, values: list[bytes], acks: int = -1, timeout_ms: int = 5_000, partition: int = 0
) -> ProducePartitionResponse:
    """A producer's batch of `values` to partition `partition` of "t" on broker `b`: the
    partition's result, once `acks` has it (as its Produce answer would carry)."""
    tp = TopicPartition("t", partition)
    batch = build_batch(values, base_offset=0, partition_leader_epoch=0)
    # A produce that never completes fails the test, as `send` does after 10 s unanswered.
    results = await asyncio.wait_for(b.services.produce(acks, timeout_ms, {tp: batch}), 10)
    return results[tp]


def consumer_fetch(offset: int, epoch: int = -1) -> FetchRequest:
    return FetchRequest(
        -1, 0, 1, 1 << 20, [FetchTopic("t", [FetchPartition(0, offset, 1 << 20, epoch)])]
    )


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll `cond` until it holds; fail the test at the deadline."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail("condition not met in time")
        await asyncio.sleep(0.01)
