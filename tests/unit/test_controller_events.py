"""KafkaController's event handling against an in-memory ZooKeeper and a capturing sender.

Deterministic: the fake store calls watch callbacks synchronously (they only enqueue), and
each step ends with `wait_for_idle()`, which returns once the event queue is drained.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pytest

from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition, parse_kafka_uuid
from minikafka.config.broker import BrokerConfig
from minikafka.controller.channel_manager import (
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
    ControllerRequest,
    ResponseCallback,
)
from minikafka.controller.context import ControllerContext, format_items, format_partitions
from minikafka.controller.controller import KafkaController
from minikafka.controller.events import ApiError, AutoPreferredReplicaLeaderElection
from minikafka.protocol.errors import (
    BrokerNotAvailableError,
    ErrorCode,
    NotControllerError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
)
from minikafka.rpc.connection import BrokerConnection
from minikafka.rpc.messages import (
    BrokerNode,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    PartitionError,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from minikafka.rules.election import ElectionType
from minikafka.rules.reassignment import ReplicaAssignment
from minikafka.server.network import SocketServer
from minikafka.zk.client import ControllerMovedError, ZkNodeExistsError, ZkNoNodeError
from minikafka.zk.codecs import BrokerInfo
from minikafka.zk.server import pick_free_port

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
T2 = TopicPartition("t", 2)


# --- fakes ------------------------------------------------------------------------------------


class FakeWatch:
    def __init__(self, cb: Callable[..., None]) -> None:
        self.cb = cb
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeZk:
    """ZooKeeper as the controller sees it (the `ControllerZkStore` protocol), in memory.

    Writes check the controller-epoch fence and zk versions as the real multi does; changes
    fire the watches ZooKeeper would fire. Helpers named like the broker / admin operations
    play the other participants.
    """

    def __init__(self) -> None:
        self._zxid = itertools.count(100)
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, dict[int, tuple[int, ...]]] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.topic_ids: dict[str, str | None] = {}
        self.states: dict[TopicPartition, LeaderAndIsr] = {}
        self.controller: int | None = None
        self.controller_epoch = 0
        self.controller_epoch_version = 0
        self.isr_notifications: dict[str, list[TopicPartition]] = {}
        self._isr_seq = itertools.count()
        self.preferred: list[TopicPartition] | None = None
        # `/admin/reassign_partitions`, and the moving partitions' adding/removing replicas.
        self.reassign: dict[TopicPartition, tuple[int, ...]] | None = None
        self.reassigning: dict[TopicPartition, ReplicaAssignment] = {}
        self.deletions: set[str] = set()
        self.watches: dict[str, list[FakeWatch]] = {}
        # Concurrent writes to apply just before the controller's next write of a partition.
        self.before_next_update: dict[TopicPartition, LeaderAndIsr] = {}
        self.fenced_writes = 0

    # --- plumbing ---

    def _fire(self, kind: str, *args: object) -> None:
        for w in list(self.watches.get(kind, [])):
            if not w.cancelled:
                w.cb(*args)

    def _watch(self, kind: str, cb: Callable[..., None]) -> FakeWatch:
        w = FakeWatch(cb)
        self.watches.setdefault(kind, []).append(w)
        return w

    def live_watches(self, kind: str) -> int:
        return sum(not w.cancelled for w in self.watches.get(kind, []))

    def _fence(self, version: int) -> None:
        if version != self.controller_epoch_version:
            self.fenced_writes += 1
            raise ControllerMovedError(f"controller epoch version is not {version}")

    # --- other participants ---

    def register_broker(self, broker_id: int) -> int:
        epoch = next(self._zxid)
        self.brokers[broker_id] = BrokerInfo(
            broker_id, f"host{broker_id}", 9000 + broker_id, None, epoch
        )
        self._fire("brokers")
        return epoch

    def kill_broker(self, broker_id: int) -> None:
        del self.brokers[broker_id]
        self._fire("brokers")

    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        config: Mapping[str, str] | None = None,
        topic_id: str | None = None,
    ) -> None:
        """An admin's CreateTopics (a topic id given: as minikafka writes it; None: as a
        tool that knows no topic ids does)."""
        self.topic_configs[topic] = dict(config or {})
        self.topics[topic] = {p: tuple(r) for p, r in assignment.items()}
        self.topic_ids[topic] = topic_id
        self._fire("topics")

    def add_partitions(self, topic: str, assignment: Mapping[int, Iterable[int]]) -> None:
        """An admin's CreatePartitions: the topic's assignment znode gets new partitions."""
        self.topics[topic] = {**self.topics[topic], **{p: tuple(r) for p, r in assignment.items()}}
        self._fire(f"topic:{topic}")

    def set_state(self, tp: TopicPartition, state: LeaderAndIsr) -> None:
        """Write a state znode as someone else would (a leader's ISR change, a setup)."""
        old = self.states.get(tp)
        self.states[tp] = replace(state, zk_version=0 if old is None else old.zk_version + 1)
        self._fire(f"state:{tp}")

    def request_reassignment(self, reassignment: dict[TopicPartition, tuple[int, ...]]) -> None:
        """kafka-reassign-partitions.sh --zookeeper: `/admin/reassign_partitions` created."""
        assert self.reassign is None
        self.reassign = dict(reassignment)
        self._fire("reassign")

    def request_deletion(self, topic: str) -> None:
        self.deletions.add(topic)
        self._fire("deletions")

    def notify_isr_change(self, tps: list[TopicPartition]) -> None:
        self.isr_notifications[f"isr_change_{next(self._isr_seq):010d}"] = tps
        self._fire("isr")

    def request_preferred_election(self, tps: list[TopicPartition]) -> None:
        self.preferred = tps
        self._fire("preferred")

    def elect_other_controller(self, broker_id: int, fire: bool = False) -> None:
        """Another broker wins (after our session lost /controller): epoch + 1."""
        self.controller = broker_id
        self.controller_epoch += 1
        self.controller_epoch_version += 1
        if fire:
            self._fire("controller", True)

    def delete_controller_znode(self) -> None:
        self.controller = None
        self._fire("controller", False)

    # --- ControllerZkStore ---

    async def get_controller_id(self) -> int | None:
        return self.controller

    async def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        if self.controller is None:
            self.controller = broker_id
            self.controller_epoch += 1
            self.controller_epoch_version += 1
            self._fire("controller", True)
            return self.controller_epoch, self.controller_epoch_version
        if self.controller == broker_id:
            return self.controller_epoch, self.controller_epoch_version
        return None

    async def delete_controller(self, controller_epoch_zk_version: int) -> None:
        self._fence(controller_epoch_zk_version)
        self.delete_controller_znode()

    async def get_all_brokers(self) -> dict[int, BrokerInfo]:
        return dict(self.brokers)

    async def get_all_topics(self) -> list[str]:
        return sorted(self.topics)

    async def get_assignments(self, topics: Iterable[str]) -> dict[str, dict[int, tuple[int, ...]]]:
        return {t: dict(self.topics[t]) for t in topics if t in self.topics}

    async def get_full_assignments(
        self, topics: Iterable[str]
    ) -> dict[str, dict[int, ReplicaAssignment]]:
        return {
            t: {
                p: self.reassigning.get(TopicPartition(t, p), ReplicaAssignment.of(r))
                for p, r in self.topics[t].items()
            }
            for t in topics
            if t in self.topics
        }

    async def get_topic_ids(self, topics: Iterable[str]) -> dict[str, str | None]:
        return {t: self.topic_ids.get(t) for t in topics if t in self.topics}

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        return dict(self.topic_configs.get(topic, {}))

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, ReplicaAssignment],
        controller_epoch_zk_version: int,
        topic_id: str | None,
    ) -> None:
        self._fence(controller_epoch_zk_version)
        if topic not in self.topics:
            raise ZkNoNodeError(f"no topic {topic}")
        self.topics[topic] = {p: a.replicas for p, a in assignment.items()}
        for p, a in assignment.items():
            tp = TopicPartition(topic, p)
            if a.is_being_reassigned:
                self.reassigning[tp] = a
            else:
                self.reassigning.pop(tp, None)
        self.topic_ids[topic] = topic_id
        self._fire(f"topic:{topic}")

    async def get_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        return {tp: self.states[tp] for tp in tps if tp in self.states}

    async def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderAndIsr], controller_epoch_zk_version: int
    ) -> dict[TopicPartition, LeaderAndIsr]:
        self._fence(controller_epoch_zk_version)
        for tp in states:
            if tp.topic not in self.topics:
                raise ZkNoNodeError(f"no topic {tp.topic}")
            if tp in self.states:
                raise ZkNodeExistsError(f"{tp} exists")
        created = {tp: replace(s, zk_version=0) for tp, s in states.items()}
        self.states.update(created)
        return created

    async def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        controller_epoch_zk_version: int,
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        self._fence(controller_epoch_zk_version)
        for tp in list(updates):
            if tp in self.before_next_update:
                self.set_state(tp, self.before_next_update.pop(tp))
        done: dict[TopicPartition, LeaderAndIsr] = {}
        conflicts: list[TopicPartition] = []
        for tp, (new, expected) in updates.items():
            if tp not in self.states or self.states[tp].zk_version != expected:
                conflicts.append(tp)
                continue
            done[tp] = self.states[tp] = replace(new, zk_version=expected + 1)
        return done, conflicts

    async def get_isr_change_notifications(self) -> list[str]:
        return sorted(self.isr_notifications)

    async def read_isr_change_notifications(self, names: Iterable[str]) -> list[TopicPartition]:
        return [tp for n in names for tp in self.isr_notifications.get(n, [])]

    async def delete_isr_change_notifications(
        self, names: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        self._fence(controller_epoch_zk_version)
        for n in names:
            self.isr_notifications.pop(n, None)
        self._fire("isr")

    async def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        return self.preferred

    async def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> None:
        self._fence(controller_epoch_zk_version)
        self.preferred = None

    async def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        return None if self.reassign is None else dict(self.reassign)

    async def set_or_delete_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Iterable[int]],
        controller_epoch_zk_version: int,
    ) -> None:
        self._fence(controller_epoch_zk_version)
        self.reassign = {tp: tuple(r) for tp, r in reassignment.items()} or None

    async def get_topic_deletions(self) -> list[str]:
        return sorted(self.deletions)

    async def delete_topic_deletion_requests(
        self, topics: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        self._fence(controller_epoch_zk_version)
        self.deletions -= set(topics)
        self._fire("deletions")

    async def delete_topic_znodes(self, topic: str, controller_epoch_zk_version: int) -> None:
        self._fence(controller_epoch_zk_version)
        self.topics.pop(topic, None)
        self.topic_configs.pop(topic, None)
        self.deletions.discard(topic)
        for tp in [tp for tp in self.states if tp.topic == topic]:
            del self.states[tp]
        self._fire("topics")
        self._fire("deletions")

    async def watch_controller(self, cb: Callable[[bool], None]) -> FakeWatch:
        return self._watch("controller", cb)

    async def watch_broker_ids(self, cb: Callable[[], None]) -> FakeWatch:
        return self._watch("brokers", cb)

    async def watch_topics(self, cb: Callable[[], None]) -> FakeWatch:
        return self._watch("topics", cb)

    async def watch_topic_deletions(self, cb: Callable[[], None]) -> FakeWatch:
        return self._watch("deletions", cb)

    async def watch_isr_change_notifications(self, cb: Callable[[], None]) -> FakeWatch:
        return self._watch("isr", cb)

    async def watch_preferred_replica_election(self, cb: Callable[[], None]) -> FakeWatch:
        return self._watch("preferred", cb)

    async def watch_partition_reassignment(self, cb: Callable[[], None]) -> FakeWatch:
        return self._watch("reassign", cb)

    async def watch_partition_state(self, tp: TopicPartition, cb: Callable[[], None]) -> FakeWatch:
        return self._watch(f"state:{tp}", cb)

    async def watch_partition_modifications(
        self, topics: Iterable[str], cb: Callable[[str], None]
    ) -> dict[str, FakeWatch]:
        return {t: self._watch(f"topic:{t}", functools.partial(cb, t)) for t in topics}


@dataclass
class Sent:
    broker_id: int
    request: ControllerRequest
    callback: ResponseCallback | None


class CapturingSender:
    """A `BrokerRequestSender` that records what the channel manager would send."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.sent: list[Sent] = []
        self.dropped: list[Sent] = []
        self.closes = 0
        self.log: list[str] = []

    def add_broker(self, broker: BrokerInfo) -> None:
        self.log.append(f"add {broker.id}")
        self.brokers.setdefault(broker.id, broker)

    def remove_broker(self, broker_id: int) -> None:
        self.log.append(f"remove {broker_id}")
        self.brokers.pop(broker_id, None)

    def send(
        self, broker_id: int, request: ControllerRequest, callback: ResponseCallback | None = None
    ) -> None:
        # The channel manager drops requests for brokers it has no channel to.
        (self.sent if broker_id in self.brokers else self.dropped).append(
            Sent(broker_id, request, callback)
        )

    async def close(self) -> None:
        self.closes += 1
        self.brokers.clear()

    def clear(self) -> None:
        self.sent.clear()

    def requests(self, kind: type, broker_id: int | None = None) -> list[Any]:
        return [
            s.request
            for s in self.sent
            if isinstance(s.request, kind) and (broker_id is None or s.broker_id == broker_id)
        ]

    def receivers(self, kind: type) -> set[int]:
        return {s.broker_id for s in self.sent if isinstance(s.request, kind)}

    def leader_and_isr(self, broker_id: int) -> dict[TopicPartition, LeaderAndIsrPartitionState]:
        """The last LeaderAndIsr state each partition got on this broker."""
        out: dict[TopicPartition, LeaderAndIsrPartitionState] = {}
        for req in self.requests(LeaderAndIsrRequest, broker_id):
            for s in req.partition_states:
                out[TopicPartition(s.topic, s.partition)] = s
        return out

    def update_metadata(self, broker_id: int) -> dict[TopicPartition, UpdateMetadataPartitionState]:
        out: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        for req in self.requests(UpdateMetadataRequest, broker_id):
            for s in req.partition_states:
                out[TopicPartition(s.topic, s.partition)] = s
        return out

    def stop_replicas(self, broker_id: int) -> list[StopReplicaPartition]:
        return [p for r in self.requests(StopReplicaRequest, broker_id) for p in r.partitions]


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def zk() -> FakeZk:
    return FakeZk()


@pytest.fixture
def sender() -> CapturingSender:
    return CapturingSender()


Starter = Callable[..., Awaitable[KafkaController]]


@pytest.fixture
async def start(zk: FakeZk, sender: CapturingSender) -> AsyncIterator[Starter]:
    controllers: list[KafkaController] = []

    async def start(broker_id: int = 1, **overrides: Any) -> KafkaController:
        overrides.setdefault("auto_leader_rebalance_enable", False)
        config = BrokerConfig(broker_id=broker_id, **overrides)
        controller = KafkaController(config, zk, channel=sender)
        controllers.append(controller)
        await controller.startup()
        await controller.wait_for_idle()
        return controller

    yield start
    for c in controllers:
        await c.shutdown()


def brokers(zk: FakeZk, *ids: int) -> dict[int, int]:
    return {i: zk.register_broker(i) for i in ids}


def state(leader: int, epoch: int, isr: Iterable[int], controller_epoch: int = 1) -> LeaderAndIsr:
    return LeaderAndIsr(leader, epoch, tuple(isr), controller_epoch)


def lai(s: LeaderAndIsr) -> tuple[int, int, tuple[int, ...]]:
    return s.leader, s.leader_epoch, s.isr


def existing_topic(
    zk: FakeZk, assignment: dict[int, tuple[int, ...]], **states: LeaderAndIsr
) -> None:
    """A topic `t` created (with states) before this controller took over."""
    zk.topics["t"] = assignment
    zk.topic_configs["t"] = {}
    for p, s in states.items():
        zk.set_state(TopicPartition("t", int(p.lstrip("p"))), s)


# --- election and epoch ------------------------------------------------------------------------


async def test_first_controller_gets_epoch_1_and_tells_every_broker(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    epochs = brokers(zk, 1, 2, 3)
    c = await start(1)
    assert c.is_active and c.epoch == 1 and c.controller_id == 1
    assert zk.controller == 1 and zk.controller_epoch == 1
    assert sender.receivers(UpdateMetadataRequest) == {1, 2, 3}
    for b in (1, 2, 3):
        (um,) = sender.requests(UpdateMetadataRequest, b)
        assert (um.controller_id, um.controller_epoch, um.broker_epoch) == (1, 1, epochs[b])
        assert um.live_brokers == [BrokerNode(i, f"host{i}", 9000 + i) for i in (1, 2, 3)]
    # The controller watches what §8.2 lists.
    for kind in ("brokers", "topics", "deletions", "isr", "preferred", "controller"):
        assert zk.live_watches(kind) == 1, kind


async def test_other_controller_then_reelection_on_deletion(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    zk.elect_other_controller(2)
    c = await start(1)
    assert not c.is_active and c.controller_id == 2
    assert sender.sent == []
    zk.delete_controller_znode()  # controller 2's session ended
    await c.wait_for_idle()
    assert c.is_active and c.controller_id == 1 and c.epoch == 2 == zk.controller_epoch


async def test_controller_change_to_another_broker_resigns(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    zk.elect_other_controller(2, fire=True)
    await c.wait_for_idle()
    assert not c.is_active and c.controller_id == 2
    assert zk.live_watches("brokers") == 0 and zk.live_watches("controller") == 1
    assert sender.closes == 1 and c.context.live_brokers == {}


async def test_expire_resigns_and_new_session_reelects(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    c.on_zk_session_expired()
    await c.wait_for_idle()
    assert not c.is_active and c.controller_id == -1
    zk.controller = None  # the ephemeral /controller went with the session
    c.on_zk_session_reestablished()
    await c.wait_for_idle()
    assert c.is_active and c.epoch == 2


async def test_failover_loads_the_cluster_and_acts_on_it(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    zk.controller_epoch, zk.controller_epoch_version = 4, 4  # earlier controllers
    existing_topic(
        zk,
        {0: (2, 3), 1: (4, 3), 2: (3, 2)},
        p0=state(2, 3, (2, 3), 4),
        p1=state(4, 5, (4, 3), 4),  # broker 4 died while nobody was controller
    )  # t-2 has no state: its controller died before creating it
    c = await start(1)
    assert c.epoch == 5
    # Replicas on live brokers get their partition's state ...
    assert lai(zk.states[T0]) == (2, 3, (2, 3))
    assert sender.leader_and_isr(2)[T0].leader_epoch == 3
    # ... offline partitions a new leader from the ISR, written by this controller ...
    assert lai(zk.states[T1]) == (3, 6, (3,)) and zk.states[T1].controller_epoch == 5
    assert sender.leader_and_isr(3)[T1].leader == 3
    # ... and partitions without state their first one.
    assert lai(zk.states[T2]) == (3, 0, (3, 2))
    assert sender.leader_and_isr(2)[T2].is_new
    um = sender.update_metadata(1)
    assert um[T1].offline_replicas == [4] and um[T1].leader == 3


async def test_failover_removes_followers_that_died_without_a_controller(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """The previous controller (broker 4) dies; it followed t-0. Nobody was controller to
    handle its failure, so the new one does at failover (Kafka's replica state machine
    startup: replicas on dead brokers go offline and leave the ISR with a new epoch)."""
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3, 4), 1: (2, 4)}, p0=state(2, 3, (2, 3, 4)), p1=state(2, 1, (2,)))
    await start(1)
    assert lai(zk.states[T0]) == (2, 4, (2, 3))
    assert sender.leader_and_isr(2)[T0].leader_epoch == 4
    assert lai(zk.states[T1]) == (2, 1, (2,))  # 4 was not in its ISR: unchanged


def record_state_reads(zk: FakeZk) -> list[list[TopicPartition]]:
    """The partitions of each read of state znodes the controller makes from now on."""
    reads: list[list[TopicPartition]] = []
    get = zk.get_partition_states

    async def recording(tps: Iterable[TopicPartition]) -> dict[TopicPartition, LeaderAndIsr]:
        tps = list(tps)
        reads.append(tps)
        return await get(tps)

    zk.get_partition_states = recording  # type: ignore[method-assign]
    return reads


async def test_failover_does_not_read_again_the_states_it_elected_without_a_dead_broker(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """The previous controller (broker 4) led t-0 and followed t-1. The new one elects t-0's
    leader without 4 and then removes 4 from the ISRs: t-0's state, just written without
    4 in this event, is not read again (only a replica that fetches is added back), while
    t-1's is written. At 30,000 partitions those reads were 10,000 and about 2 s."""
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (4, 2, 3), 1: (2, 4)}, p0=state(4, 3, (4, 2, 3)), p1=state(2, 1, (2, 4)))
    reads = record_state_reads(zk)
    await start(1)
    assert lai(zk.states[T0]) == (2, 4, (2, 3))
    assert lai(zk.states[T1]) == (2, 2, (2,))
    assert [r for r in reads if T0 in r] == [[T0, T1]]  # the failover's load alone


async def test_failover_sends_each_partition_state_once_after_the_elections(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """Brokers first learn the live brokers alone; then one LeaderAndIsr and one
    UpdateMetadata carry every partition's state, the new leaders of partitions whose
    leader died while there was no controller included (not their old state first)."""
    brokers(zk, 1, 2, 3)
    existing_topic(
        zk,
        {0: (2, 3), 1: (4, 3)},
        p0=state(2, 3, (2, 3)),
        p1=state(4, 5, (4, 3)),  # its leader, broker 4, died with the old controller
    )
    await start(1)
    for broker in (2, 3):
        requests = sender.requests(LeaderAndIsrRequest, broker)
        named = [s for r in requests for s in r.partition_states]
        assert sorted((s.partition, s.leader) for s in named) == (
            [(0, 2)] if broker == 2 else [(0, 2), (1, 3)]
        )
    for broker in (1, 2, 3):
        first, *rest = sender.requests(UpdateMetadataRequest, broker)
        assert first.partition_states == [] and sorted(b.node_id for b in first.live_brokers) == [
            1,
            2,
            3,
        ]
        # The first with partitions names them all, with the new leader; none names the
        # dead one (the ISR change of partition 1 may follow in a later one).
        with_states = [r for r in rest if r.partition_states]
        assert sorted((s.partition, s.leader) for s in with_states[0].partition_states) == [
            (0, 2),
            (1, 3),
        ]
        assert all(s.leader != 4 for r in rest for s in r.partition_states)


async def test_failover_deletes_stale_isr_notifications(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1)
    zk.isr_notifications["isr_change_0000000000"] = [T0]
    await start(1)
    assert zk.isr_notifications == {}


# --- topic creation ------------------------------------------------------------------------------


async def test_new_topic_gets_states_and_leader_and_isr(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    epochs = brokers(zk, 1, 2, 3)
    c = await start(1)
    sender.clear()
    zk.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
    await c.wait_for_idle()
    assert zk.states[T0] == LeaderAndIsr(1, 0, (1, 2, 3), 1, 0)
    assert zk.states[T1] == LeaderAndIsr(2, 0, (2, 3, 1), 1, 0)
    assert sender.receivers(LeaderAndIsrRequest) == {1, 2, 3}
    (req,) = sender.requests(LeaderAndIsrRequest, 3)
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (1, 1, epochs[3])
    assert req.partition_states == [
        LeaderAndIsrPartitionState("t", 0, 1, 1, 0, [1, 2, 3], 0, [1, 2, 3], is_new=True),
        LeaderAndIsrPartitionState("t", 1, 1, 2, 0, [2, 3, 1], 0, [2, 3, 1], is_new=True),
    ]
    assert req.live_leaders == [BrokerNode(1, "host1", 9001), BrokerNode(2, "host2", 9002)]
    # LeaderAndIsr goes before UpdateMetadata, which every broker gets.
    kinds = [type(s.request).__name__ for s in sender.sent if s.broker_id == 3]
    assert kinds == ["LeaderAndIsrRequest", "UpdateMetadataRequest"]
    assert sender.receivers(UpdateMetadataRequest) == {1, 2, 3}
    assert sender.update_metadata(2)[T1].offline_replicas == []


async def test_topic_ids_go_to_every_broker_and_a_topic_without_one_gets_one(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    zk.create_topic("old", {0: [1, 2, 3]})  # written by a tool that knows no topic ids
    c = await start(1)
    given = zk.topic_ids["old"]
    assert given is not None and parse_kafka_uuid(given)
    with_states = [um for um in sender.requests(UpdateMetadataRequest, 2) if um.partition_states]
    assert with_states and all(um.topic_ids == {"old": given} for um in with_states)
    sender.clear()
    zk.create_topic("new", {0: [1, 2, 3]}, topic_id="AAAAAAAAAAAAAAAAAAAAAQ")
    await c.wait_for_idle()
    assert zk.topic_ids["new"] == "AAAAAAAAAAAAAAAAAAAAAQ"  # kept as written
    (um,) = sender.requests(UpdateMetadataRequest, 3)
    assert um.topic_ids == {"new": "AAAAAAAAAAAAAAAAAAAAAQ"}
    assert c.context.topic_ids == {"old": given, "new": "AAAAAAAAAAAAAAAAAAAAAQ"}


async def test_new_topic_with_dead_replicas(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    sender.clear()
    zk.create_topic("t", {0: [2, 3], 1: [3, 4]})
    await c.wait_for_idle()
    # ISR = the live assigned replicas; a partition with none has no leader.
    assert lai(zk.states[T0]) == (2, 0, (2,))
    assert lai(zk.states[T1]) == (NO_LEADER, 0, (3, 4))
    assert sender.receivers(LeaderAndIsrRequest) == {2}
    assert sender.update_metadata(1)[T1].offline_replicas == [3, 4]
    # Once a replica comes, it leads (all the logs were empty).
    zk.register_broker(4)
    await c.wait_for_idle()
    assert lai(zk.states[T1]) == (4, 1, (4,))
    assert sender.leader_and_isr(4)[T1].leader == 4


# --- broker failure ------------------------------------------------------------------------------


async def test_leader_failure_moves_leadership_within_the_isr(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3, 4)
    existing_topic(zk, {0: (2, 3, 4)}, p0=state(2, 0, (2, 3, 4)))
    c = await start(1)
    sender.clear()
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (3, 1, (3, 4))
    assert sender.receivers(LeaderAndIsrRequest) == {3, 4}
    assert sender.leader_and_isr(4)[T0] == LeaderAndIsrPartitionState(
        "t", 0, 1, 3, 1, [3, 4], 1, [2, 3, 4]
    )
    assert sender.receivers(UpdateMetadataRequest) == {1, 3, 4}
    # The election's batch goes out first (as in Kafka), before the ISR removals' batch,
    # which ends with the live brokers for everyone.
    um, live = sender.requests(UpdateMetadataRequest, 1)
    assert um.partition_states[0].leader == 3
    assert [b.node_id for b in um.live_brokers] == [1, 3, 4]
    assert [b.node_id for b in live.live_brokers] == [1, 3, 4]
    assert um.partition_states[0].offline_replicas == [2]
    assert "remove 2" in sender.log and sender.dropped == []


async def test_follower_failure_shrinks_the_isr_with_a_new_leader_epoch(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3, 4)
    existing_topic(
        zk, {0: (3, 2, 4), 1: (3, 4, 2)}, p0=state(3, 7, (3, 2, 4)), p1=state(3, 2, (3, 4))
    )
    c = await start(1)
    sender.clear()
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (3, 8, (3, 4))
    assert lai(zk.states[T1]) == (3, 2, (3, 4))  # 2 was not in its ISR: unchanged
    assert sender.leader_and_isr(3)[T0].leader_epoch == 8
    assert T1 not in sender.leader_and_isr(3)
    # Both partitions' offline replicas changed.
    assert sender.update_metadata(3)[T1].offline_replicas == [2]


async def test_last_isr_member_failure_leaves_partition_offline_until_it_returns(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(2, 4, (2,)))
    c = await start(1)
    zk.kill_broker(2)
    await c.wait_for_idle()
    # 3 is live but out of sync: no clean leader; the ISR keeps its last member.
    assert lai(zk.states[T0]) == (NO_LEADER, 5, (2,))
    assert sender.leader_and_isr(3)[T0].leader == NO_LEADER
    sender.clear()
    zk.register_broker(2)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (2, 6, (2,))
    assert sender.leader_and_isr(2)[T0].leader == 2
    assert sender.leader_and_isr(3)[T0].leader == 2


@pytest.mark.parametrize(
    ("broker_unclean", "topic_config", "expected"),
    [
        (False, {}, (NO_LEADER, 5, (2,))),
        (True, {}, (3, 5, (3,))),
        (False, {"unclean.leader.election.enable": "true"}, (3, 5, (3,))),
        (True, {"unclean.leader.election.enable": "false"}, (NO_LEADER, 5, (2,))),
    ],
)
async def test_unclean_leader_election(
    zk: FakeZk,
    sender: CapturingSender,
    start: Starter,
    broker_unclean: bool,
    topic_config: dict[str, str],
    expected: tuple[int, int, tuple[int, ...]],
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(2, 4, (2,)))
    zk.topic_configs["t"] = topic_config
    c = await start(1, unclean_leader_election_enable=broker_unclean)
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == expected
    assert c.context.unclean_leader_elections == (1 if expected[0] == 3 else 0)


async def test_election_retries_after_a_concurrent_write(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3, 4)
    existing_topic(zk, {0: (2, 3, 4)}, p0=state(2, 0, (2, 3, 4)))
    c = await start(1)
    # The leader shrinks the ISR between the controller's read and its write.
    zk.before_next_update[T0] = state(2, 0, (2, 4))
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (4, 1, (4,))
    assert zk.states[T0].zk_version == 2


# --- broker startup and bounce --------------------------------------------------------------------


async def test_broker_startup(zk: FakeZk, sender: CapturingSender, start: Starter) -> None:
    brokers(zk, 1, 2)
    existing_topic(zk, {0: (2, 3), 1: (1, 2)}, p0=state(2, 1, (2,)), p1=state(1, 0, (1, 2)))
    c = await start(1)
    sender.clear()
    epoch3 = zk.register_broker(3)
    await c.wait_for_idle()
    # The others hear of the new broker; it gets the whole cluster ...
    assert sender.requests(UpdateMetadataRequest, 1)[0].partition_states == []
    assert set(sender.update_metadata(3)) == {T0, T1}
    # ... and the state of its replicas (it follows 2 and will catch up).
    assert sender.leader_and_isr(3) == {
        T0: LeaderAndIsrPartitionState("t", 0, 1, 2, 1, [2], 0, [2, 3])
    }
    assert sender.requests(LeaderAndIsrRequest, 3)[0].broker_epoch == epoch3
    assert c.context.live_broker_ids == {1, 2, 3}


async def test_bounced_broker_is_a_failure_then_a_startup(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3), 1: (3, 2)}, p0=state(2, 0, (2, 3)), p1=state(3, 0, (3, 2)))
    c = await start(1)
    sender.clear()
    sender.log.clear()
    # Broker 2 restarted quickly: same id, newer registration, one watch event.
    new_epoch = zk.register_broker(2)
    await c.wait_for_idle()
    assert sender.log == ["remove 2", "add 2"]
    assert lai(zk.states[T0]) == (3, 1, (3,))  # leadership moved off it
    assert lai(zk.states[T1]) == (3, 1, (3,))  # and it left the ISR
    to_2 = sender.leader_and_isr(2)
    assert to_2[T0].leader == 3 and to_2[T1].leader == 3
    assert {r.broker_epoch for r in sender.requests(LeaderAndIsrRequest, 2)} == {new_epoch}
    assert c.context.live_brokers[2].epoch == new_epoch


# --- controlled shutdown ------------------------------------------------------------------------


async def test_controlled_shutdown_moves_leadership_and_removes_follower(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    epochs = brokers(zk, 1, 2, 3, 4)
    existing_topic(
        zk,
        {0: (2, 3, 4), 1: (3, 2, 4), 2: (2, 3)},
        p0=state(2, 0, (2, 3, 4)),
        p1=state(3, 0, (3, 2, 4)),
        p2=state(2, 0, (2,)),  # 3 is out of sync: nobody can take over
    )
    existing_topic_single = {0: (2,)}
    zk.topics["single"] = existing_topic_single
    zk.set_state(TopicPartition("single", 0), state(2, 0, (2,)))
    c = await start(1)
    sender.clear()
    remaining = await c.controlled_shutdown(2, epochs[2])
    # Led partitions with another live ISR member move; RF=1 partitions are not counted.
    assert remaining == [T2]
    assert lai(zk.states[T0]) == (3, 1, (3, 4))
    # The leaving broker hears it too, so it stops leading.
    assert sender.leader_and_isr(2)[T0].leader == 3
    # Followed partitions: out of the ISR with a new leader epoch, replica stopped.
    assert lai(zk.states[T1]) == (3, 1, (3, 4))
    assert sender.leader_and_isr(3)[T1].isr == [3, 4]
    assert T1 not in sender.leader_and_isr(2)
    assert sender.stop_replicas(2) == [StopReplicaPartition("t", 1, False, 0)]
    # The new leaders go out in a request of their own, before the followed partitions'
    # ISR changes (Kafka's two handleStateChanges batches).
    first, second = sender.requests(LeaderAndIsrRequest, 3)
    assert [(s.partition, s.leader) for s in first.partition_states] == [(0, 3)]
    assert [(s.partition, s.isr) for s in second.partition_states] == [(1, [3, 4])]
    assert c.context.shutting_down_broker_ids == {2}
    # Shutting-down brokers count as offline replicas in metadata.
    assert sender.update_metadata(1)[T0].offline_replicas == [2]
    # The broker dies for real later: no longer shutting down, no longer live.
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert c.context.shutting_down_broker_ids == set()
    assert lai(zk.states[T2]) == (NO_LEADER, 1, (2,))


async def test_controlled_shutdown_rejections(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    epochs = brokers(zk, 1, 2)
    c = await start(1)
    with pytest.raises(StaleBrokerEpochError):
        await c.controlled_shutdown(2, epochs[2] - 1)
    with pytest.raises(BrokerNotAvailableError):
        await c.controlled_shutdown(7, 1)
    assert c.context.shutting_down_broker_ids == set()
    assert await c.controlled_shutdown(2, epochs[2] + 1) == []  # newer is fine
    other = KafkaController(BrokerConfig(broker_id=2), zk, channel=CapturingSender())
    await other.startup()
    await other.wait_for_idle()
    try:
        with pytest.raises(NotControllerError):
            await other.controlled_shutdown(2, epochs[2])
    finally:
        await other.shutdown()


# --- topic deletion -------------------------------------------------------------------------------


def answer_stop_replicas(sender: CapturingSender, broker_id: int, error: int = 0) -> None:
    """The broker answers its StopReplica(delete_partition=True) requests."""
    for s in list(sender.sent):
        req = s.request
        if s.broker_id == broker_id and isinstance(req, StopReplicaRequest) and s.callback:
            assert all(p.delete_partition for p in req.partitions)
            s.callback(
                StopReplicaResponse(
                    0, [PartitionError(p.topic, p.partition, error) for p in req.partitions]
                )
            )
            sender.sent.remove(s)


async def test_topic_deletion(zk: FakeZk, sender: CapturingSender, start: Starter) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [2, 3], 1: [3, 2]})
    await c.wait_for_idle()
    sender.clear()
    zk.request_deletion("t")
    await c.wait_for_idle()
    # Brokers drop it from their metadata, replicas are told to delete their logs.
    assert sender.requests(UpdateMetadataRequest, 1)[0].deleted_topics == ["t"]
    assert sender.stop_replicas(2) == [
        StopReplicaPartition("t", 0, True),
        StopReplicaPartition("t", 1, True),
    ]
    assert c.context.topics_to_be_deleted == {"t"}
    answer_stop_replicas(sender, 2)
    await c.wait_for_idle()
    assert "t" in zk.topics  # waits for every replica
    answer_stop_replicas(sender, 3)
    await c.wait_for_idle()
    assert "t" not in zk.topics and zk.deletions == set() and T0 not in zk.states
    assert c.context.all_topics == set() and T0 not in c.context.partition_leadership
    assert sender.requests(UpdateMetadataRequest, 1)[-1].deleted_topics == ["t"]
    # Re-creating the topic starts from scratch.
    zk.create_topic("t", {0: [2]})
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (2, 0, (2,))


async def test_topic_deletion_disabled_drops_the_request(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1, delete_topic_enable=False)
    zk.create_topic("t", {0: [2]})
    await c.wait_for_idle()
    sender.clear()
    zk.request_deletion("t")
    await c.wait_for_idle()
    assert zk.deletions == set() and "t" in zk.topics
    assert sender.requests(StopReplicaRequest) == []
    assert c.context.topics_to_be_deleted == set()


async def test_topic_deletion_waits_for_a_dead_replica(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [2, 3]})
    await c.wait_for_idle()
    zk.kill_broker(3)
    await c.wait_for_idle()
    sender.clear()
    zk.request_deletion("t")
    await c.wait_for_idle()
    answer_stop_replicas(sender, 2)
    await c.wait_for_idle()
    assert "t" in zk.topics and c.context.topics_ineligible_for_deletion == {"t"}
    # A failed broker does not get the topic's LeaderAndIsr when it comes back, only the
    # deletion it missed.
    sender.clear()
    zk.register_broker(3)
    await c.wait_for_idle()
    assert "t" not in {s.topic for s in sender.leader_and_isr(3).values()}
    assert sender.stop_replicas(3) == [StopReplicaPartition("t", 0, True)]
    assert sender.stop_replicas(2) == []  # its replica is already deleted
    answer_stop_replicas(sender, 3)
    await c.wait_for_idle()
    assert "t" not in zk.topics and c.context.topics_to_be_deleted == set()


async def test_topic_deletion_retried_after_a_replica_failed_to_delete(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    zk.create_topic("t", {0: [2]})
    await c.wait_for_idle()
    zk.request_deletion("t")
    await c.wait_for_idle()
    answer_stop_replicas(sender, 2, error=ErrorCode.KAFKA_STORAGE_ERROR)
    await c.wait_for_idle()
    assert "t" in zk.topics and c.context.topics_ineligible_for_deletion == {"t"}
    # Kafka retries once the broker restarts.
    sender.clear()
    zk.register_broker(2)
    await c.wait_for_idle()
    answer_stop_replicas(sender, 2)
    await c.wait_for_idle()
    assert "t" not in zk.topics


# --- partitions added to existing topics (CreatePartitions) ------------------------------------

T3 = TopicPartition("t", 3)
T4 = TopicPartition("t", 4)


async def test_added_partitions_get_states_leader_and_isr_and_metadata(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    epochs = brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    await c.wait_for_idle()
    before = {tp: zk.states[tp] for tp in (T0, T1, T2)}
    sender.clear()
    zk.add_partitions("t", {3: [1, 2, 3], 4: [2, 3, 1]})
    await c.wait_for_idle()
    # Kafka's onNewPartitionCreation, as for a new topic: first state, leader epoch 0 ...
    assert zk.states[T3] == LeaderAndIsr(1, 0, (1, 2, 3), 1, 0)
    assert zk.states[T4] == LeaderAndIsr(2, 0, (2, 3, 1), 1, 0)
    assert {tp: zk.states[tp] for tp in (T0, T1, T2)} == before  # the others untouched
    assert c.context.partition_assignments["t"] == {
        0: (1, 2, 3),
        1: (2, 3, 1),
        2: (3, 1, 2),
        3: (1, 2, 3),
        4: (2, 3, 1),
    }
    # ... LeaderAndIsr (is_new) for the new partitions only, to their replicas ...
    assert sender.receivers(LeaderAndIsrRequest) == {1, 2, 3}
    (req,) = sender.requests(LeaderAndIsrRequest, 3)
    assert (req.controller_epoch, req.broker_epoch) == (1, epochs[3])
    assert req.partition_states == [
        LeaderAndIsrPartitionState("t", 3, 1, 1, 0, [1, 2, 3], 0, [1, 2, 3], is_new=True),
        LeaderAndIsrPartitionState("t", 4, 1, 2, 0, [2, 3, 1], 0, [2, 3, 1], is_new=True),
    ]
    # ... then UpdateMetadata with them to every broker.
    kinds = [type(s.request).__name__ for s in sender.sent if s.broker_id == 2]
    assert kinds == ["LeaderAndIsrRequest", "UpdateMetadataRequest"]
    assert sender.receivers(UpdateMetadataRequest) == {1, 2, 3}
    assert set(sender.update_metadata(1)) == {T3, T4}


async def test_added_partition_with_dead_replicas(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    zk.create_topic("t", {0: [1, 2]})
    await c.wait_for_idle()
    zk.add_partitions("t", {1: [2, 3], 2: [3, 4]})
    await c.wait_for_idle()
    assert lai(zk.states[T1]) == (2, 0, (2,))
    assert lai(zk.states[T2]) == (NO_LEADER, 0, (3, 4))
    assert sender.update_metadata(1)[T2].offline_replicas == [3, 4]


async def test_partition_modification_watches_follow_the_topics(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """One watch per topic (Kafka's PartitionModificationsHandler): registered for every
    topic at failover and for each new topic, removed when a topic is deleted and when the
    controller resigns."""
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(2, 0, (2, 3)))
    c = await start(1)
    assert zk.live_watches("topic:t") == 1
    zk.create_topic("u", {0: [3]})
    await c.wait_for_idle()
    assert zk.live_watches("topic:u") == 1
    zk.request_deletion("u")
    await c.wait_for_idle()
    answer_stop_replicas(sender, 3)
    await c.wait_for_idle()
    assert "u" not in zk.topics and zk.live_watches("topic:u") == 0
    zk.create_topic("u", {0: [2]})  # re-created: watched anew
    await c.wait_for_idle()
    assert zk.live_watches("topic:u") == 1
    zk.elect_other_controller(2, fire=True)
    await c.wait_for_idle()
    assert not c.is_active
    assert zk.live_watches("topic:t") == 0 and zk.live_watches("topic:u") == 0


async def test_a_new_controller_handles_partitions_added_after_it_took_over(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    first = await start(1)
    zk.create_topic("t", {0: [1, 2], 1: [2, 3]})
    await first.wait_for_idle()
    # The controller's session expires; broker 2 becomes controller.
    first.on_zk_session_expired()
    await first.wait_for_idle()
    zk.controller = None
    second = await start(2)
    assert second.is_active and second.epoch == 2
    assert zk.live_watches("topic:t") == 1  # the first one's is gone
    sender.clear()
    zk.add_partitions("t", {2: [3, 1]})
    await second.wait_for_idle()
    await first.wait_for_idle()
    assert zk.states[T2] == LeaderAndIsr(3, 0, (3, 1), 2, 0)
    (req,) = sender.requests(LeaderAndIsrRequest, 1)
    assert req.controller_id == 2 and [s.partition for s in req.partition_states] == [2]


async def test_partitions_added_while_there_was_no_controller_are_created_at_failover(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    existing_topic(zk, {0: (1, 2), 1: (2, 1)}, p0=state(1, 0, (1, 2)))  # t-1 added meanwhile
    await start(1)
    assert lai(zk.states[T1]) == (2, 0, (2, 1))
    assert sender.leader_and_isr(1)[T1].is_new


async def test_an_assignment_change_without_new_partitions_does_nothing(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [1, 2]})
    await c.wait_for_idle()
    sender.clear()
    # Another replica list for an existing partition would be a reassignment: not this path.
    zk.add_partitions("t", {0: [3, 2]})
    await c.wait_for_idle()
    assert sender.sent == [] and c.context.partition_replicas(T0) == (1, 2)
    assert lai(zk.states[T0]) == (1, 0, (1, 2))


async def test_partitions_added_to_a_topic_being_deleted_are_taken_back(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """Kafka's restorePartitionReplicaAssignment: the controller writes the assignment back
    without them; they never get a state or a replica."""
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [2, 3]})
    await c.wait_for_idle()
    zk.request_deletion("t")  # its replicas do not answer yet
    await c.wait_for_idle()
    assert c.is_topic_queued_for_deletion("t")
    zk.add_partitions("t", {1: [3, 1]})
    await c.wait_for_idle()
    assert zk.topics["t"] == {0: (2, 3)}
    assert T1 not in zk.states and all(T1 not in sender.leader_and_isr(b) for b in (1, 2, 3))
    assert c.context.partition_assignments["t"] == {0: (2, 3)}
    answer_stop_replicas(sender, 2)
    answer_stop_replicas(sender, 3)
    await c.wait_for_idle()
    assert "t" not in zk.topics and not c.is_topic_queued_for_deletion("t")


async def test_a_deposed_controller_does_not_restore_an_assignment(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [2, 3]})
    await c.wait_for_idle()
    zk.request_deletion("t")
    await c.wait_for_idle()
    zk.elect_other_controller(3)  # unnoticed: its next write is fenced
    zk.add_partitions("t", {1: [3, 1]})
    await c.wait_for_idle()
    assert zk.fenced_writes == 1 and zk.topics["t"] == {0: (2, 3), 1: (3, 1)}
    assert not c.is_active


# --- ISR change notifications --------------------------------------------------------------------


async def test_isr_change_notification(zk: FakeZk, sender: CapturingSender, start: Starter) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [2, 3], 1: [3, 2]})
    await c.wait_for_idle()
    sender.clear()
    # Leader 2 shrank its ISR itself (§8.5) and announced it.
    zk.set_state(T0, LeaderAndIsr(2, 0, (2,), 1))
    zk.notify_isr_change([T0, TopicPartition("gone", 0)])
    await c.wait_for_idle()
    assert zk.isr_notifications == {}
    assert sender.receivers(UpdateMetadataRequest) == {1, 2, 3}
    (um,) = sender.requests(UpdateMetadataRequest, 3)
    assert [(s.partition, s.isr, s.zk_version) for s in um.partition_states] == [(0, [2], 1)]
    assert sender.requests(LeaderAndIsrRequest) == []
    assert c.context.partition_leadership[T0].zk_version == 1


# --- preferred replica election -----------------------------------------------------------------


async def test_preferred_replica_election_from_admin_znode(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3), 1: (3, 2)}, p0=state(3, 4, (3, 2)), p1=state(3, 0, (3, 2)))
    c = await start(1)
    sender.clear()
    zk.request_preferred_election([T0, T1, TopicPartition("nope", 0)])
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (2, 5, (3, 2))
    assert lai(zk.states[T1]) == (3, 0, (3, 2))  # already led by its preferred replica
    assert zk.preferred is None
    assert sender.receivers(LeaderAndIsrRequest) == {2, 3}


async def test_pending_preferred_election_runs_on_failover(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(3, 4, (3, 2)))
    zk.preferred = [T0]
    await start(1)
    assert lai(zk.states[T0]) == (2, 5, (3, 2)) and zk.preferred is None


async def test_admin_preferred_elections_and_their_errors(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(
        zk,
        {0: (2, 3), 1: (3, 2), 2: (2, 3)},
        p0=state(3, 4, (3, 2)),
        p1=state(3, 0, (3, 2)),
        p2=state(3, 1, (3,)),  # 2 not caught up: not eligible
    )
    c = await start(1)
    sender.clear()
    nope = TopicPartition("nope", 0)
    results = await c.elect_leaders([T0, T1, T2, nope], ElectionType.PREFERRED)
    assert results[T0] == 2 and lai(zk.states[T0]) == (2, 5, (3, 2))
    assert results[T1] == ApiError(
        ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
    )
    assert results[T2] == ApiError(
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        "Failed to elect leader for partition t-2 under strategy "
        "PreferredReplicaPartitionLeaderElectionStrategy",
    )
    assert lai(zk.states[T2]) == (3, 1, (3,))
    assert results[nope] == ApiError(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    )
    assert sender.receivers(LeaderAndIsrRequest) == {2, 3}


async def test_admin_unclean_election_elects_outside_the_isr(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    # t-1's leader is live: an unclean election is not needed there.
    existing_topic(zk, {0: (2, 3), 1: (3, 2)}, p0=state(2, 4, (2,)), p1=state(3, 0, (3,)))
    c = await start(1)  # unclean.leader.election.enable stays false
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (NO_LEADER, 5, (2,))
    results = await c.elect_leaders([T0, T1], ElectionType.UNCLEAN)
    assert results[T0] == 3 and lai(zk.states[T0]) == (3, 6, (3,))
    assert results[T1] == ApiError(
        ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
    )
    assert c.context.unclean_leader_elections == 1
    # No live replica at all: nothing eligible.
    zk.kill_broker(3)
    await c.wait_for_idle()
    (result,) = (await c.elect_leaders([T0], ElectionType.UNCLEAN)).values()
    assert isinstance(result, ApiError)
    assert result.code == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


async def test_admin_election_of_a_topic_being_deleted(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    zk.create_topic("t", {0: [2, 3]})
    await c.wait_for_idle()
    zk.kill_broker(3)  # the deletion waits for it
    await c.wait_for_idle()
    zk.request_deletion("t")
    await c.wait_for_idle()
    for election_type in ElectionType:
        assert await c.elect_leaders([T0], election_type) == {
            T0: ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        }


async def test_admin_election_on_a_broker_that_is_not_the_controller(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    await start(1)
    other = await start(2)
    with pytest.raises(NotControllerError):
        await other.elect_leaders([T0], ElectionType.PREFERRED)


async def test_auto_leader_rebalance(zk: FakeZk, sender: CapturingSender, start: Starter) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(
        zk,
        {0: (2, 3), 1: (3, 2), 2: (2, 3)},
        p0=state(3, 1, (3, 2)),  # 2 came back after a failure and caught up
        p1=state(3, 0, (3, 2)),
        p2=state(3, 1, (3,)),  # 2 not caught up yet: not eligible
    )
    c = await start(1, auto_leader_rebalance_enable=True)
    assert c._rebalance_timer is not None and not c._rebalance_timer.done()
    c._enqueue(AutoPreferredReplicaLeaderElection())
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (2, 2, (3, 2))
    assert lai(zk.states[T1]) == (3, 0, (3, 2))
    assert lai(zk.states[T2]) == (3, 1, (3,))
    assert c._rebalance_timer is not None and not c._rebalance_timer.done()


# --- deposed controller --------------------------------------------------------------------------


async def test_deposed_controller_resigns_on_a_fenced_write_and_sends_nothing(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(2, 0, (2, 3)))
    c = await start(1)
    sender.clear()
    # We missed the news (a long GC pause): broker 3 is controller with epoch 2.
    zk.elect_other_controller(3)
    zk.kill_broker(2)
    await c.wait_for_idle()
    assert zk.fenced_writes == 1
    assert lai(zk.states[T0]) == (2, 0, (2, 3))  # nothing written
    assert sender.sent == []  # nothing sent
    assert not c.is_active and c.controller_id == 3
    assert c.context.live_brokers == {} and sender.closes == 1
    assert zk.live_watches("brokers") == 0 and zk.live_watches("topics") == 0
    # Later changes are none of its business.
    zk.create_topic("u", {0: [3]})
    await c.wait_for_idle()
    assert sender.sent == [] and TopicPartition("u", 0) not in zk.states
    with pytest.raises(NotControllerError):
        await c.controlled_shutdown(3, 1)


async def test_shutdown_stops_processing_and_keeps_the_controller_znode(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    await c.shutdown()
    assert not c.is_active and zk.controller == 1  # the session's end deletes it
    sender.clear()
    zk.create_topic("t", {0: [2]})
    assert sender.sent == [] and T0 not in zk.states


# --- request batch ---------------------------------------------------------------------------------


def test_batch_merges_per_broker_and_skips_dead_brokers() -> None:
    ctx = ControllerContext()
    ctx.add_live_brokers([BrokerInfo(1, "a", 1, epoch=11), BrokerInfo(2, "b", 2, epoch=22)])
    ctx.set_assignment("t", {0: (1, 2, 3)})
    sender = CapturingSender()
    for b in ctx.live_brokers.values():
        sender.add_broker(b)
    batch = ControllerBrokerRequestBatch(9, ctx, sender)
    first = LeaderAndIsr(1, 0, (1, 2), 4, 0)
    second = LeaderAndIsr(2, 1, (2,), 4, 1)
    ctx.partition_leadership[T0] = first
    batch.add_leader_and_isr_request_for_brokers([1, 2, 3], T0, first, (1, 2, 3))
    ctx.partition_leadership[T0] = second
    batch.add_leader_and_isr_request_for_brokers([1, 2, 3], T0, second, (1, 2, 3))
    batch.add_stop_replica_request_for_brokers([3], T0, False)
    batch.send_requests_to_brokers(7)
    assert batch.is_empty()
    assert [(s.broker_id, type(s.request).__name__) for s in sender.sent] == [
        (1, "LeaderAndIsrRequest"),
        (2, "LeaderAndIsrRequest"),
        (1, "UpdateMetadataRequest"),
        (2, "UpdateMetadataRequest"),
    ]  # nothing for broker 3, which is not live
    (req,) = sender.requests(LeaderAndIsrRequest, 2)
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (9, 7, 22)
    assert [s.leader for s in req.partition_states] == [2]
    assert req.live_leaders == [BrokerNode(2, "b", 2)]
    (um,) = sender.requests(UpdateMetadataRequest, 1)
    assert um.partition_states == [
        UpdateMetadataPartitionState("t", 0, 4, 2, 1, [2], 1, [1, 2, 3], [3])
    ]
    assert um.broker_epoch == 11


# --- channel manager over real sockets -------------------------------------------------------------


def um_request(n: int) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(1, n, 5, [], [])


async def test_channel_manager_sends_in_order_and_hands_responses_to_the_callback() -> None:
    received: list[int] = []

    async def handler(_header: Any, request: Any) -> Any:
        received.append(request.controller_epoch)
        if isinstance(request, StopReplicaRequest):
            return StopReplicaResponse(0, [PartitionError("t", 0, 0)])
        return UpdateMetadataResponse(0)

    server = SocketServer(handler, "127.0.0.1", 0)
    await server.start()
    manager = ControllerChannelManager(1)
    try:
        manager.add_broker(BrokerInfo(2, "127.0.0.1", server.port, epoch=5))
        responses: asyncio.Queue[object] = asyncio.Queue()
        for n in range(1, 6):
            manager.send(2, um_request(n))
        manager.send(2, StopReplicaRequest(1, 6, 5, []), responses.put_nowait)
        response = await asyncio.wait_for(responses.get(), 10)
        assert response == StopReplicaResponse(0, [PartitionError("t", 0, 0)])
        assert received == [1, 2, 3, 4, 5, 6]
        manager.send(9, um_request(7))  # no channel to broker 9: dropped
    finally:
        await manager.close()
        await server.stop()
    assert manager.broker_ids == set()


async def test_channel_manager_retries_until_the_broker_listens() -> None:
    port = pick_free_port()
    attempts = 0
    refused_thrice = asyncio.Event()

    def connect(broker: BrokerInfo) -> BrokerConnection:
        nonlocal attempts
        attempts += 1
        if attempts > 3:
            refused_thrice.set()
        return BrokerConnection(broker.host, broker.port)

    manager = ControllerChannelManager(
        1, retry_backoff_ms=10, max_retry_backoff_ms=50, connection_factory=connect
    )
    got: asyncio.Queue[int] = asyncio.Queue()

    async def handler(_header: Any, request: Any) -> Any:
        got.put_nowait(request.controller_epoch)
        return UpdateMetadataResponse(0)

    server = SocketServer(handler, "127.0.0.1", port)
    try:
        manager.add_broker(BrokerInfo(2, "127.0.0.1", port, epoch=5))
        manager.send(2, um_request(1))
        manager.send(2, um_request(2))
        await asyncio.wait_for(refused_thrice.wait(), 10)
        assert got.empty() and manager.queue_size(2) == 1  # the first is being retried
        await server.start()
        assert [await asyncio.wait_for(got.get(), 10) for _ in range(2)] == [1, 2]
    finally:
        await manager.close()
        await server.stop()


async def test_channel_manager_delivers_request_level_errors_and_drops_removed_brokers() -> None:
    async def handler(_header: Any, _request: Any) -> Any:
        raise StaleControllerEpochError("old controller")

    server = SocketServer(handler, "127.0.0.1", 0)
    await server.start()
    manager = ControllerChannelManager(1)
    try:
        manager.add_broker(BrokerInfo(2, "127.0.0.1", server.port, epoch=5))
        answers: asyncio.Queue[object] = asyncio.Queue()
        manager.send(2, um_request(1), answers.put_nowait)
        answer = await asyncio.wait_for(answers.get(), 10)
        assert isinstance(answer, StaleControllerEpochError)
        manager.remove_broker(2)
        manager.send(2, um_request(2), answers.put_nowait)
        assert manager.queue_size(2) == 0
    finally:
        await manager.close()
        await server.stop()


# --- scale: thousands of partitions ----------------------------------------------------------


def count_state_creations(zk: FakeZk) -> list[int]:
    """The size of each create_partition_states call (one ZooKeeper multi each), as made."""
    calls: list[int] = []
    create = zk.create_partition_states

    async def counting(states: Mapping[TopicPartition, LeaderAndIsr], version: int) -> Any:
        calls.append(len(states))
        return await create(states, version)

    zk.create_partition_states = counting  # type: ignore[method-assign]
    return calls


async def test_big_topic_state_znodes_are_created_and_sent_chunk_by_chunk(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3)
    c = await start(1)
    sender.clear()
    calls = count_state_creations(zk)
    zk.create_topic("big", {p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(2500)})
    await c.wait_for_idle()
    # One multi per chunk of 1000 (one multi for all would exceed jute.maxbuffer at scale).
    assert calls == [1000, 1000, 500]
    assert len([tp for tp in zk.states if tp.topic == "big"]) == 2500
    # Each chunk went out as soon as it was written: one LeaderAndIsr, then one
    # UpdateMetadata, per chunk and broker, in order.
    kinds = [type(s.request).__name__ for s in sender.sent if s.broker_id == 2]
    assert kinds == ["LeaderAndIsrRequest", "UpdateMetadataRequest"] * 3
    sizes = [len(r.partition_states) for r in sender.requests(LeaderAndIsrRequest, 2)]
    assert sizes == [1000, 1000, 500]
    assert len(sender.update_metadata(3)) == 2500


async def test_a_chunk_holding_an_existing_state_is_created_one_by_one_alone(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    c = await start(1)
    calls = count_state_creations(zk)
    # An earlier controller created partition 1500's state before it failed over.
    earlier = TopicPartition("big", 1500)
    zk.set_state(earlier, state(2, 0, (2, 1)))
    zk.create_topic("big", {p: [1, 2] for p in range(2100)})
    await c.wait_for_idle()
    assert calls == [1000, 1000] + [1] * 1000 + [100]
    assert zk.states[earlier] == LeaderAndIsr(2, 0, (2, 1), 1, 0)
    assert c.context.partition_leadership[earlier].leader == 2
    assert all(zk.states[TopicPartition("big", p)].leader == 1 for p in range(2100) if p != 1500)


async def test_brokers_stopping_together_move_each_partition_once(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """2 and 3 ask at once (a whole cluster stopping): while 2's request is processed, 3's
    waits, so 2's partitions go to 4, not to 3 only to move again on 3's turn."""
    epochs = brokers(zk, 1, 2, 3, 4)
    existing_topic(
        zk, {0: (2, 3, 4), 1: (2, 3, 4)}, p0=state(2, 0, (2, 3, 4)), p1=state(2, 0, (2, 3, 4))
    )
    c = await start(1)
    sender.clear()
    first, second = await asyncio.gather(
        c.controlled_shutdown(2, epochs[2]), c.controlled_shutdown(3, epochs[3])
    )
    assert first == second == []
    assert lai(zk.states[T0]) == (4, 2, (4,))
    assert lai(zk.states[T1]) == (4, 2, (4,))
    leaders = [
        (s.partition, s.leader)
        for r in sender.requests(LeaderAndIsrRequest)
        for s in r.partition_states
    ]
    assert (0, 3) not in leaders and (1, 3) not in leaders
    assert c.context.leaving_next_broker_ids == set()


async def test_controlled_shutdown_skips_partitions_no_other_live_replica_can_lead(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    epochs = brokers(zk, 1, 2)  # broker 3 is down
    existing_topic(
        zk,
        {0: (2, 3), 1: (2, 1), 2: (2, 3)},
        p0=state(2, 0, (2,)),
        p1=state(2, 0, (2, 1)),
        p2=state(2, 0, (2,)),
    )
    c = await start(1)
    written: list[TopicPartition] = []
    update = zk.update_partition_states

    async def recording(
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]], fence: int
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        written.extend(updates)
        return await update(updates, fence)

    zk.update_partition_states = recording  # type: ignore[method-assign]
    remaining = await c.controlled_shutdown(2, epochs[2])
    # t-1 moves to 1; t-0 and t-2 stay with 2, whose only other replica (3) is down: their
    # elections are not even tried (the last live broker of a cluster leads everything).
    assert remaining == [T0, T2]
    assert lai(zk.states[T1]) == (1, 1, (1,))
    assert lai(zk.states[T0]) == (2, 0, (2,))
    assert written == [T1]


async def test_elections_start_from_the_controller_s_states_and_reread_those_changed_since(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """The first round of an election writes over the states the controller last read or
    wrote, without reading them again; a state changed since (here a leader's ISR shrink
    the controller has not heard of) fails its conditional write and is read again, and the
    election is decided on what ZooKeeper has."""
    epochs = brokers(zk, 1, 2, 3)
    existing_topic(
        zk, {0: (2, 1, 3), 1: (2, 3, 1)}, p0=state(2, 0, (2, 1, 3)), p1=state(2, 0, (2, 3, 1))
    )
    c = await start(1)
    reads = record_state_reads(zk)
    # Broker 2, leading t-1, shrank its ISR to (2, 1): 3 may no longer lead it.
    zk.set_state(T1, replace(zk.states[T1], isr=(2, 1)))
    remaining = await c.controlled_shutdown(2, epochs[2])
    assert remaining == []
    assert reads == [[T1]]
    assert lai(zk.states[T0]) == (1, 1, (1, 3))
    assert lai(zk.states[T1]) == (1, 1, (1,))


# --- partition reassignment (KIP-455) --------------------------------------------------------------


async def moving_cluster(zk: FakeZk, start: Starter) -> KafkaController:
    """Brokers 1-5, topic `t` with partition 0 on (1, 2, 3) led by 1, all in sync."""
    brokers(zk, 1, 2, 3, 4, 5)
    existing_topic(zk, {0: (1, 2, 3)}, p0=state(1, 5, (1, 2, 3)))
    return await start(1)


async def test_reassignment_adds_then_removes_after_the_targets_join_the_isr(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    sender.clear()
    assert await c.alter_partition_reassignments({T0: (2, 3, 4)}) == {T0: (ErrorCode.NONE, None)}
    await c.wait_for_idle()
    # RS = TRS + ORS in ZooKeeper, as Kafka writes it, and in memory.
    moving = ReplicaAssignment((2, 3, 4, 1), adding=(4,), removing=(1,))
    assert zk.topics["t"] == {0: (2, 3, 4, 1)} and zk.reassigning == {T0: moving}
    assert await c.list_partition_reassignments(None) == {T0: moving}
    # Leader epoch + 1 to every replica of RS; the new one creates its log.
    assert lai(zk.states[T0]) == (1, 6, (1, 2, 3))
    for b in (1, 2, 3, 4):
        s = sender.leader_and_isr(b)[T0]
        assert (s.leader, s.leader_epoch, s.replicas, s.is_new) == (1, 6, [2, 3, 4, 1], b == 4)
        # Kafka's LeaderAndIsr v3: the replicas being added and removed go with it.
        assert (s.adding_replicas, s.removing_replicas) == ([4], [1])
    assert sender.stop_replicas(1) == []
    # Not done while 4 is not in the ISR.
    zk.set_state(T0, state(1, 6, (1, 2, 3)))
    await c.wait_for_idle()
    assert zk.reassigning == {T0: moving}
    sender.clear()
    # The leader adds 4 to the ISR: the move completes, and leadership leaves broker 1.
    zk.set_state(T0, state(1, 6, (1, 2, 3, 4)))
    await c.wait_for_idle()
    assert zk.topics["t"] == {0: (2, 3, 4)} and zk.reassigning == {}
    assert lai(zk.states[T0]) == (2, 8, (2, 3, 4))  # elected 2, then 1 left the ISR
    assert sender.leader_and_isr(4)[T0].replicas == [2, 3, 4]
    assert sender.leader_and_isr(4)[T0].adding_replicas == []
    assert any(p.delete_partition for p in sender.stop_replicas(1))
    assert sender.update_metadata(5)[T0].replicas == [2, 3, 4]
    assert await c.list_partition_reassignments(None) == {}
    assert zk.live_watches(f"state:{T0}") == 0


async def test_reassignment_keeping_the_leader_bumps_its_epoch(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    await c.alter_partition_reassignments({T0: (1, 2)})  # shrink: nothing to add
    await c.wait_for_idle()
    # Every target replica is already in the ISR: done at once.
    assert zk.topics["t"] == {0: (1, 2)} and zk.reassigning == {}
    assert lai(zk.states[T0]) == (1, 7, (1, 2))
    assert any(p.delete_partition for p in sender.stop_replicas(3))


async def test_reassignment_refusals_change_nothing(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    sender.clear()
    results = await c.alter_partition_reassignments(
        {
            T0: (2, 2, 3),
            TopicPartition("t", 7): (1, 2),
            TopicPartition("nope", 0): (1, 2),
        }
    )
    assert results[T0][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert "Duplicate replica ids" in (results[T0][1] or "")
    assert results[TopicPartition("t", 7)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert results[TopicPartition("nope", 0)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for target, words in (((1, 2, 9), "not alive"), ((), "Empty"), ((1, -1), "Invalid broker")):
        (code, message) = (await c.alter_partition_reassignments({T0: target}))[T0]
        assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and words in (message or "")
    # Cancelling a partition that is not moving.
    assert (await c.alter_partition_reassignments({T0: None}))[T0][0] == (
        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    )
    await c.wait_for_idle()
    assert zk.topics["t"] == {0: (1, 2, 3)} and zk.reassigning == {}
    assert lai(zk.states[T0]) == (1, 5, (1, 2, 3)) and sender.sent == []


async def test_cancelling_a_reassignment_reverts_to_the_original_replicas(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    await c.alter_partition_reassignments({T0: (2, 3, 4)})
    await c.wait_for_idle()
    sender.clear()
    assert (await c.alter_partition_reassignments({T0: None}))[T0] == (ErrorCode.NONE, None)
    await c.wait_for_idle()
    # The original replicas, in the order RS holds them (Kafka's `originReplicas`: the
    # znode keeps no other order), so the leader stays but the preferred replica may change.
    assert zk.topics["t"] == {0: (2, 3, 1)} and zk.reassigning == {}
    assert any(p.delete_partition for p in sender.stop_replicas(4))
    assert zk.states[T0].leader == 1 and 4 not in zk.states[T0].isr
    assert await c.list_partition_reassignments(None) == {}


async def test_a_new_target_replaces_the_one_being_moved_to(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    await c.alter_partition_reassignments({T0: (1, 2, 4)})
    await c.wait_for_idle()
    sender.clear()
    await c.alter_partition_reassignments({T0: (1, 2, 5)})
    await c.wait_for_idle()
    # From the original replicas to the new target; 4, no longer wanted, is deleted.
    assert zk.reassigning == {T0: ReplicaAssignment((1, 2, 5, 3), adding=(5,), removing=(3,))}
    assert any(p.delete_partition for p in sender.stop_replicas(4))
    assert sender.leader_and_isr(5)[T0].is_new


async def test_a_new_controller_resumes_a_reassignment(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2, 3, 4)
    existing_topic(zk, {0: (2, 3, 4, 1)}, p0=state(1, 6, (1, 2, 3)))
    zk.reassigning[T0] = ReplicaAssignment((2, 3, 4, 1), adding=(4,), removing=(1,))
    c = await start(2)
    assert await c.list_partition_reassignments([T0]) == {T0: zk.reassigning[T0]}
    # Resumed: the replicas get the full set again (with a new leader epoch).
    assert sender.leader_and_isr(4)[T0].replicas == [2, 3, 4, 1]
    zk.set_state(T0, state(1, 7, (1, 2, 3, 4), controller_epoch=1))
    await c.wait_for_idle()
    assert zk.topics["t"] == {0: (2, 3, 4)} and zk.reassigning == {}
    assert zk.states[T0].leader == 2 and 1 not in zk.states[T0].isr


async def test_reassignment_through_the_admin_znode(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    zk.request_reassignment({T0: (2, 3, 4), TopicPartition("t", 9): (1, 2)})
    await c.wait_for_idle()
    # The partition that cannot move leaves the znode; the other moves.
    assert zk.reassign == {T0: (2, 3, 4)}
    assert zk.reassigning[T0].adding == (4,)
    zk.set_state(T0, state(1, 6, (1, 2, 3, 4)))
    await c.wait_for_idle()
    assert zk.reassign is None and zk.topics["t"] == {0: (2, 3, 4)}
    # The API takes precedence over the znode for the same partition.
    zk.request_reassignment({T0: (2, 3, 5)})
    await c.wait_for_idle()
    await c.alter_partition_reassignments({T0: (2, 3, 4, 1)})
    await c.wait_for_idle()
    assert zk.reassign is None


async def test_reassignment_api_on_a_non_controller(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    brokers(zk, 1, 2)
    zk.elect_other_controller(2)
    c = await start(1)
    with pytest.raises(NotControllerError):
        await c.alter_partition_reassignments({T0: (1, 2)})
    with pytest.raises(NotControllerError):
        await c.list_partition_reassignments(None)


async def test_deleting_a_topic_waits_for_its_reassignment(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    c = await moving_cluster(zk, start)
    await c.alter_partition_reassignments({T0: (2, 3, 4)})
    await c.wait_for_idle()
    sender.clear()
    zk.request_deletion("t")
    await c.wait_for_idle()
    assert not any(p.delete_partition for b in (1, 2, 3, 4) for p in sender.stop_replicas(b))
    zk.set_state(T0, state(1, 6, (1, 2, 3, 4)))
    await c.wait_for_idle()
    # The move finished, then the deletion started.
    assert all(any(p.delete_partition for p in sender.stop_replicas(b)) for b in (2, 3, 4))


def test_controller_log_lines_name_a_hundred_partitions_and_count_the_others() -> None:
    tps = [TopicPartition("t", p) for p in range(250)]
    assert format_partitions(tps[:2]) == "t-0,t-1" and format_partitions([]) == "-"
    line = format_partitions(tps)
    assert line.startswith("t-0,t-1,") and line.endswith(",t-99 (and 150 more)")
    formatted: list[int] = []

    def fmt(p: int) -> str:
        formatted.append(p)
        return f"<{p}>"

    # Only the items shown are formatted (an election of 100,000 partitions logs 100).
    assert format_items(range(250), fmt=fmt).endswith("<99> (and 150 more)")
    assert formatted == list(range(100))


async def test_an_election_that_fails_on_the_controller_s_state_is_decided_again_on_zookeeper_s(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """The controller's own state says the preferred replica is not in the ISR; its leader
    has since added it back (written to ZooKeeper, not yet notified). Failing the election
    writes nothing, so no conditional write could find that out: the state is read again."""
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(3, 1, (3,)))
    c = await start(1)
    zk.set_state(T0, replace(zk.states[T0], isr=(3, 2)))  # the leader's ISR expansion
    results = await c.elect_leaders([T0], ElectionType.PREFERRED)
    assert results[T0] == 2 and lai(zk.states[T0]) == (2, 2, (3, 2))


async def test_a_dead_broker_a_leader_just_added_back_to_the_isr_is_removed_from_it(
    zk: FakeZk, sender: CapturingSender, start: Starter
) -> None:
    """The controller's own state says broker 3 is not in the ISR; its leader has since
    added it back (not yet notified). Then 3 dies: it must still leave the ISR, or acks=all
    writes would wait for it."""
    brokers(zk, 1, 2, 3)
    existing_topic(zk, {0: (2, 3)}, p0=state(2, 1, (2,)))
    c = await start(1)
    zk.set_state(T0, replace(zk.states[T0], isr=(2, 3)))
    zk.kill_broker(3)
    await c.wait_for_idle()
    assert lai(zk.states[T0]) == (2, 2, (2,))
