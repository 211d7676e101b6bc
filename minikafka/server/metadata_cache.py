"""The broker's copy of cluster metadata, fed only by the controller's UpdateMetadata.

Every broker answers Metadata requests from here, so clients see the same picture whichever
broker they ask (eventually: each broker applies updates when they arrive).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from minikafka.common import NO_LEADER, TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.messages import (
    BrokerNode,
    MetadataPartition,
    MetadataTopic,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MetadataChange:
    """One UpdateMetadata as a difference: what a listener (the dashboard's event
    timeline) needs to tell what happened. `changed` holds (old state or None, new state)
    for every partition the update carried whose state differs."""

    old_controller: int
    new_controller: int
    controller_epoch: int
    old_brokers: list[int]
    new_brokers: list[int]
    changed: list[tuple[UpdateMetadataPartitionState | None, UpdateMetadataPartitionState]]
    deleted_topics: list[str]
    first_update: bool


class MetadataCache:
    def __init__(self, local_broker_id: int) -> None:
        self.local_broker_id = local_broker_id
        self.controller_id = -1
        self.live_brokers: dict[int, BrokerNode] = {}
        self._partitions: dict[str, dict[int, UpdateMetadataPartitionState]] = {}
        # Topic ids (KIP-516) both ways: Fetch v13+ and Metadata v10+ name topics by id.
        self._topic_ids: dict[str, str] = {}
        self._topic_names: dict[str, str] = {}
        self._changed = asyncio.Event()
        self._generation = 0
        self._listeners: list[Callable[[MetadataChange], None]] = []
        # Each topic's partitions as Metadata answers them, built on the first request
        # after the topic or the live brokers changed (the generation they were built at):
        # at 30,000 partitions, building them for every request took a third of the time a
        # broker spent answering Metadata. The lists are shared: never mutated.
        self._answered: dict[str, tuple[int, list[MetadataPartition]]] = {}
        self._topic_changed_at: dict[str, int] = {}
        self._brokers_changed_at = 0

    def add_listener(self, listener: Callable[[MetadataChange], None]) -> None:
        """Call `listener` with the difference of every update from now on (on the loop)."""
        self._listeners.append(listener)

    def update(self, req: UpdateMetadataRequest) -> list[TopicPartition]:
        """Apply an UpdateMetadata; returns the partitions of deleted topics."""
        change = self._change(req) if self._listeners else None
        self.controller_id = req.controller_id
        live_brokers = {b.node_id: b for b in req.live_brokers}
        generation = self._generation + 1
        if live_brokers.keys() != self.live_brokers.keys():
            self._brokers_changed_at = generation  # a leader's liveness is in every answer
        self.live_brokers = live_brokers
        deleted: list[TopicPartition] = []
        for topic in req.deleted_topics:
            for p in self._partitions.pop(topic, {}):
                deleted.append(TopicPartition(topic, p))
            self._topic_names.pop(self._topic_ids.pop(topic, ""), None)
            self._answered.pop(topic, None)
            self._topic_changed_at.pop(topic, None)
        for st in req.partition_states:
            self._partitions.setdefault(st.topic, {})[st.partition] = st
            self._topic_changed_at[st.topic] = generation
        for topic, topic_id in req.topic_ids.items():
            old = self._topic_ids.get(topic)
            if old != topic_id:
                # A topic deleted and created again under its name has a new id.
                self._topic_names.pop(old or "", None)
                self._topic_ids[topic] = topic_id
                self._topic_names[topic_id] = topic
        self._generation = generation
        # Wake everyone waiting for a change (CreateTopics / DeleteTopics completion).
        self._changed.set()
        self._changed = asyncio.Event()
        if change is not None:
            for listener in self._listeners:
                # A listener (the dashboard) must never fail an UpdateMetadata.
                try:
                    listener(change)
                except Exception:
                    log.exception("metadata listener %r failed", listener)
        return deleted

    def _change(self, req: UpdateMetadataRequest) -> MetadataChange:
        changed = []
        for st in req.partition_states:
            old = self._partitions.get(st.topic, {}).get(st.partition)
            if old != st:
                changed.append((old, st))
        return MetadataChange(
            self.controller_id,
            req.controller_id,
            req.controller_epoch,
            sorted(self.live_brokers),
            sorted(b.node_id for b in req.live_brokers),
            changed,
            [t for t in req.deleted_topics if t in self._partitions],
            self._generation == 0,
        )

    @property
    def initialized(self) -> bool:
        """Whether an UpdateMetadata has arrived since start."""
        return self._generation > 0

    async def wait_for_change(self, timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()
            return True
        except TimeoutError:
            return False

    def alive_brokers_on(self, listener: str) -> list[BrokerNode]:
        """Live brokers with their address on `listener`, sorted by id (Kafka's
        getAliveBrokerNodes(listenerName)): a broker without that listener is left out. A
        broker described without endpoints has just the one listener (host/port)."""
        nodes = []
        for b in sorted(self.live_brokers.values(), key=lambda b: b.node_id):
            if not b.endpoints:
                nodes.append(b)
                continue
            ep = next((e for e in b.endpoints if e.listener == listener), None)
            if ep is not None:
                nodes.append(BrokerNode(b.node_id, ep.host, ep.port, b.rack))
        return nodes

    def topics(self) -> list[str]:
        return sorted(self._partitions)

    def contains_topic(self, topic: str) -> bool:
        return topic in self._partitions

    def topic_count(self) -> int:
        return len(self._partitions)

    def topic_id(self, topic: str) -> str | None:
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: str) -> str | None:
        """The topic with this id; None for an id no topic here has (UNKNOWN_TOPIC_ID)."""
        return self._topic_names.get(topic_id)

    def partition_state(self, tp: TopicPartition) -> UpdateMetadataPartitionState | None:
        return self._partitions.get(tp.topic, {}).get(tp.partition)

    def all_partition_states(self) -> list[UpdateMetadataPartitionState]:
        return [st for parts in self._partitions.values() for st in parts.values()]

    def partition_count(self, topic: str) -> int:
        return len(self._partitions.get(topic, {}))

    def all_partitions_have_leaders(self, topic: str, expected_partitions: int) -> bool:
        parts = self._partitions.get(topic)
        if parts is None or len(parts) < expected_partitions:
            return False
        return all(
            st.leader != NO_LEADER and st.leader in self.live_brokers for st in parts.values()
        )

    def get_topic_metadata(self, topics: Iterable[str] | None) -> list[MetadataTopic]:
        names = self.topics() if topics is None else list(topics)
        out: list[MetadataTopic] = []
        for name in names:
            parts = self._partitions.get(name)
            if parts is None:
                out.append(MetadataTopic(int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name, []))
                continue
            out.append(
                MetadataTopic(
                    int(ErrorCode.NONE), name, self._answer(name, parts), self._topic_ids.get(name)
                )
            )
        return out

    def _answer(
        self, name: str, parts: dict[int, UpdateMetadataPartitionState]
    ) -> list[MetadataPartition]:
        """The topic's partitions as Metadata answers them (cached, see `_answered`)."""
        built_at = max(self._topic_changed_at.get(name, 0), self._brokers_changed_at)
        cached = self._answered.get(name)
        if cached is not None and cached[0] >= built_at:
            return cached[1]
        answer = [self._partition_metadata(st) for _, st in sorted(parts.items())]
        self._answered[name] = (self._generation, answer)
        return answer

    def _partition_metadata(self, st: UpdateMetadataPartitionState) -> MetadataPartition:
        leader_alive = st.leader != NO_LEADER and st.leader in self.live_brokers
        error = ErrorCode.NONE if leader_alive else ErrorCode.LEADER_NOT_AVAILABLE
        return MetadataPartition(
            int(error),
            st.partition,
            st.leader if leader_alive else NO_LEADER,
            st.leader_epoch,
            list(st.replicas),
            list(st.isr),
            list(st.offline_replicas),
        )
