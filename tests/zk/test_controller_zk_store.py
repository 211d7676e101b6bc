"""KazooControllerZkStore and KafkaController against a real ZooKeeper server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.controller.channel_manager import ControllerRequest, ResponseCallback
from minikafka.controller.controller import KafkaController
from minikafka.controller.zk_store import KazooControllerZkStore
from minikafka.rpc.messages import LeaderAndIsrRequest, UpdateMetadataRequest
from minikafka.zk.client import (
    BrokerInfo,
    ControllerMovedError,
    ZkClient,
    ZkNodeExistsError,
    expire_session,
)

from .conftest import ZkClientFactory

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


async def eventually(condition: Callable[[], bool], timeout: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or condition}")
        await asyncio.sleep(0.02)


def store(client: ZkClient) -> KazooControllerZkStore:
    return KazooControllerZkStore(client, asyncio.get_running_loop())


class CapturingSender:
    def __init__(self) -> None:
        self.brokers: set[int] = set()
        self.sent: list[tuple[int, ControllerRequest]] = []

    def add_broker(self, broker: BrokerInfo) -> None:
        self.brokers.add(broker.id)

    def remove_broker(self, broker_id: int) -> None:
        self.brokers.discard(broker_id)

    def send(
        self, broker_id: int, request: ControllerRequest, callback: ResponseCallback | None = None
    ) -> None:
        if broker_id in self.brokers:
            self.sent.append((broker_id, request))

    async def close(self) -> None:
        self.brokers.clear()

    def requests(self, kind: type, broker_id: int) -> list[Any]:
        return [r for b, r in self.sent if b == broker_id and isinstance(r, kind)]

    def leaders(self, broker_id: int) -> dict[TopicPartition, tuple[int, int]]:
        out = {}
        for req in self.requests(LeaderAndIsrRequest, broker_id):
            for s in req.partition_states:
                out[TopicPartition(s.topic, s.partition)] = (s.leader, s.leader_epoch)
        return out


# --- the store ----------------------------------------------------------------------------------


async def test_store_reads_and_fenced_writes(make_zk_client: ZkClientFactory) -> None:
    client = make_zk_client()
    zk = store(client)
    assert await zk.get_controller_id() is None
    epoch, fence = await zk.try_elect_controller(1) or (0, 0)
    assert (epoch, await zk.get_controller_id()) == (1, 1)
    assert await zk.try_elect_controller(1) == (1, fence)  # already ours

    broker_epoch = await asyncio.to_thread(client.register_broker, BrokerInfo(2, "h2", 9092))
    assert await zk.get_all_brokers() == {2: BrokerInfo(2, "h2", 9092, None, broker_epoch)}

    await asyncio.to_thread(
        client.create_topic, "t", {0: [2, 1], 1: [1, 2]}, {"unclean.leader.election.enable": "true"}
    )
    assert await zk.get_all_topics() == ["t"]
    assert await zk.get_assignments(["t", "missing"]) == {"t": {0: (2, 1), 1: (1, 2)}}
    assert await zk.get_topic_config("t") == {"unclean.leader.election.enable": "true"}

    created = await zk.create_partition_states(
        {TP0: LeaderAndIsr(2, 0, (2, 1), 1), TP1: LeaderAndIsr(1, 0, (1, 2), 1)}, fence
    )
    assert created[TP0].zk_version == 0
    with pytest.raises(ZkNodeExistsError):
        await zk.create_partition_states({TP0: LeaderAndIsr(2, 0, (2,), 1)}, fence)
    done, conflicts = await zk.update_partition_states(
        {TP0: (LeaderAndIsr(1, 1, (1,), 1), 0), TP1: (LeaderAndIsr(2, 1, (2,), 1), 5)}, fence
    )
    assert done == {TP0: LeaderAndIsr(1, 1, (1,), 1, 1)} and conflicts == [TP1]
    assert await zk.get_partition_states([TP0, TopicPartition("t", 9)]) == done

    name = await asyncio.to_thread(client.create_isr_change_notification, [TP0, TP1])
    assert await zk.get_isr_change_notifications() == [name]
    assert await zk.read_isr_change_notifications([name]) == [TP0, TP1]
    await zk.delete_isr_change_notifications([name], fence)
    assert await zk.get_isr_change_notifications() == []

    await asyncio.to_thread(client.create_preferred_replica_election, [TP1])
    assert await zk.get_preferred_replica_election() == [TP1]
    await zk.delete_preferred_replica_election(fence)
    assert await zk.get_preferred_replica_election() is None

    await asyncio.to_thread(client.request_topic_deletion, "t")
    assert await zk.get_topic_deletions() == ["t"]
    await zk.delete_topic_znodes("t", fence)
    assert await zk.get_all_topics() == [] and await zk.get_topic_deletions() == []
    assert await zk.get_topic_config("t") == {}


async def test_zombie_controller_writes_fail_after_another_is_elected(
    make_zk_client: ZkClientFactory, zk_connect: str
) -> None:
    zombie_client, successor_client = make_zk_client(), make_zk_client()
    zombie, successor = store(zombie_client), store(successor_client)
    won = await zombie.try_elect_controller(1)
    assert won is not None
    stale = won[1]
    await asyncio.to_thread(zombie_client.create_topic, "t", {0: [1, 2]}, {})
    await zombie.create_partition_states({TP0: LeaderAndIsr(1, 0, (1, 2), 1)}, stale)

    # The zombie's session expires (a long pause); the other broker takes over.
    credentials = zombie_client.session_credentials
    assert credentials is not None
    await asyncio.to_thread(expire_session, zk_connect, credentials)
    await eventually(
        lambda: successor_client.get_controller_id() is None, what="/controller to vanish"
    )
    assert await successor.try_elect_controller(2) == (2, stale + 1)

    # Back on a new session, the zombie still believes it is controller: its writes fail.
    await eventually(lambda: zombie_client.connected, what="zombie to reconnect")
    with pytest.raises(ControllerMovedError):
        await zombie.update_partition_states({TP0: (LeaderAndIsr(2, 1, (2,), 1), 0)}, stale)
    with pytest.raises(ControllerMovedError):
        await zombie.delete_topic_znodes("t", stale)
    assert await successor.get_partition_states([TP0]) == {TP0: LeaderAndIsr(1, 0, (1, 2), 1, 0)}
    assert await successor.get_all_topics() == ["t"]


async def test_watches_report_changes_on_the_loop_and_stop_when_cancelled(
    make_zk_client: ZkClientFactory,
) -> None:
    watcher, other = make_zk_client(), make_zk_client()
    zk = store(watcher)
    events: asyncio.Queue[str] = asyncio.Queue()
    await asyncio.to_thread(other.register_broker, BrokerInfo(1, "h", 1))
    brokers = await zk.watch_broker_ids(lambda: events.put_nowait("brokers"))
    await zk.watch_controller(lambda exists: events.put_nowait(f"controller {exists}"))
    await zk.watch_preferred_replica_election(lambda: events.put_nowait("preferred"))
    await zk.watch_topics(lambda: events.put_nowait("topics"))
    # Registration does not report the state it found (broker 1, no controller).
    assert events.empty()

    await asyncio.to_thread(other.register_broker, BrokerInfo(2, "h", 2))
    assert await asyncio.wait_for(events.get(), 10) == "brokers"
    await asyncio.to_thread(other.try_elect_controller, 2)
    assert await asyncio.wait_for(events.get(), 10) == "controller True"
    await asyncio.to_thread(other.create_preferred_replica_election, [TP0])
    assert await asyncio.wait_for(events.get(), 10) == "preferred"

    brokers.cancel()
    await asyncio.to_thread(other.register_broker, BrokerInfo(3, "h", 3))
    await asyncio.to_thread(other.create_topic, "t", {0: [1]})  # a control event after it
    assert await asyncio.wait_for(events.get(), 10) == "topics"
    assert events.empty()


# --- two controllers, end to end ------------------------------------------------------------------


async def test_two_controllers_failover(make_zk_client: ZkClientFactory) -> None:
    clients = {1: make_zk_client(), 2: make_zk_client()}
    admin = make_zk_client()
    senders = {1: CapturingSender(), 2: CapturingSender()}
    controllers: dict[int, KafkaController] = {}
    try:
        for b in (1, 2):
            await asyncio.to_thread(
                clients[b].register_broker, BrokerInfo(b, "127.0.0.1", 9090 + b)
            )
        await asyncio.to_thread(admin.register_broker, BrokerInfo(3, "127.0.0.1", 9093))
        for b in (1, 2):
            controllers[b] = KafkaController(
                BrokerConfig(broker_id=b, auto_leader_rebalance_enable=False),
                store(clients[b]),
                channel=senders[b],
            )
            await controllers[b].startup()
            if b == 1:
                await eventually(lambda: controllers[1].is_active, what="controller 1 elected")
        await eventually(lambda: controllers[2].controller_id == 1, what="2 to see controller 1")
        c1, c2 = controllers[1], controllers[2]
        assert c1.epoch == 1 and not c2.is_active
        assert senders[2].sent == []

        await asyncio.to_thread(admin.create_topic, "t", {0: [1, 2], 1: [2, 3]})
        await eventually(
            lambda: len(admin.get_partition_states([TP0, TP1])) == 2, what="state znodes"
        )
        states = await asyncio.to_thread(admin.get_partition_states, [TP0, TP1])
        assert states[TP0] == LeaderAndIsr(1, 0, (1, 2), 1, 0)
        assert states[TP1] == LeaderAndIsr(2, 0, (2, 3), 1, 0)
        await eventually(lambda: TP1 in senders[1].leaders(3), what="LeaderAndIsr to broker 3")
        assert senders[1].leaders(2) == {TP0: (1, 0), TP1: (2, 0)}

        # Broker 1's session ends: /controller and its registration go; 2 takes over.
        await asyncio.to_thread(clients[1].close)
        await eventually(lambda: c2.is_active, what="controller 2 elected")
        assert c2.epoch == 2 and c2.controller_id == 2
        # As the new controller it moves t-0's leadership off dead broker 1.
        await eventually(
            lambda: admin.get_partition_state(TP0) == LeaderAndIsr(2, 1, (2,), 2, 1),
            what="t-0 led by 2",
        )
        await eventually(lambda: senders[2].leaders(2).get(TP0) == (2, 1), what="LeaderAndIsr")
        assert await asyncio.to_thread(admin.get_controller_epoch) == (2, 2)
        um = senders[2].requests(UpdateMetadataRequest, 3)[-1]
        assert (um.controller_id, um.controller_epoch) == (2, 2)
        assert [b.node_id for b in um.live_brokers] == [2, 3]
    finally:
        for c in controllers.values():
            await c.shutdown()


async def test_controller_creates_a_topic_whose_states_exceed_a_zookeeper_request(
    make_zk_client: ZkClientFactory,
) -> None:
    """10,000 partitions: their state znodes would be ~2.6 MB as one multi (jute.maxbuffer is
    1 MiB, and ZooKeeper drops the connection of a larger request)."""
    client, admin = make_zk_client(), make_zk_client()
    sender = CapturingSender()
    for b in (1, 2, 3):
        await asyncio.to_thread(admin.register_broker, BrokerInfo(b, "127.0.0.1", 9090 + b))
    controller = KafkaController(
        BrokerConfig(broker_id=4, auto_leader_rebalance_enable=False),
        store(client),
        channel=sender,
    )
    n = 10_000
    try:
        await controller.startup()
        await eventually(lambda: controller.is_active, what="controller elected")
        started = time.monotonic()
        await asyncio.to_thread(
            admin.create_topic, "big", {p: [1 + (p + i) % 3 for i in range(3)] for p in range(n)}
        )
        await eventually(
            lambda: (
                sum(len(r.partition_states) for r in sender.requests(LeaderAndIsrRequest, 1)) == n
            ),
            timeout=120,
            what="LeaderAndIsr for every partition",
        )
        elapsed = time.monotonic() - started
        # Sent chunk by chunk, as their state znodes were written.
        assert len(sender.requests(LeaderAndIsrRequest, 1)) == 10
        tps = [TopicPartition("big", p) for p in range(n)]
        states = await asyncio.to_thread(admin.get_partition_states, tps)
        assert len(states) == n
        assert states[TopicPartition("big", 4321)] == LeaderAndIsr(2, 0, (2, 3, 1), 1, 0)
        print(f"controller created {n} partition states in {elapsed:.1f}s")
    finally:
        await controller.shutdown()
