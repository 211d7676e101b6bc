"""The controller's cache of cluster state: Kafka's `ControllerContext`.

Filled from ZooKeeper when a broker becomes controller (design §8.2), kept current by the
controller's events, cleared when it resigns. Only the controller's event task touches it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.rules.reassignment import ReplicaAssignment
from minikafka.zk.codecs import BrokerInfo


@dataclass(frozen=True, slots=True)
class PartitionAndReplica:
    """One replica of one partition: Kafka's `PartitionAndReplica`."""

    tp: TopicPartition
    replica: int


class ReplicaDeletionState(Enum):
    """The replica states of Kafka's `ReplicaStateMachine` that topic deletion tracks.

    Replicas of a topic queued for deletion without an entry have not been asked yet.
    """

    STARTED = "ReplicaDeletionStarted"  # StopReplica(delete_partition=True) sent
    SUCCESSFUL = "ReplicaDeletionSuccessful"  # the broker answered without error
    INELIGIBLE = "ReplicaDeletionIneligible"  # broker dead or the deletion failed


def _sorted_tps(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(tps, key=lambda tp: (tp.topic, tp.partition))


T = TypeVar("T")

# Partitions a controller log line names; the others are counted. At 100,000 partitions a
# line naming all was 1 to 2 MB, written (and formatted) at every failover.
LOGGED_PARTITIONS = 100


def format_items(
    items: Iterable[T], limit: int = LOGGED_PARTITIONS, fmt: Callable[[T], str] = str
) -> str:
    """Items for a log line, `a,b`, at most `limit` of them (only those formatted) and how
    many more; `-` for none."""
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < limit:
            shown.append(fmt(item))
        else:
            more += 1
    text = ",".join(shown) or "-"
    return f"{text} (and {more} more)" if more else text


def format_partitions(tps: Iterable[TopicPartition], limit: int = LOGGED_PARTITIONS) -> str:
    """Partitions for the controller's log lines: `t-0,t-1`, or `-` for none; at most
    `limit` named, the others counted."""
    return format_items(tps, limit)


class ControllerContext:
    """Live brokers, assignments, leadership and topic deletion progress, by Kafka's names."""

    def __init__(self) -> None:
        # Kept across resignations: the epoch this broker last won (0: never).
        self.epoch = 0
        self.epoch_zk_version = -1
        self.unclean_leader_elections = 0  # Kafka's UncleanLeaderElectionsPerSec, as a count
        self.reset()

    def reset(self) -> None:
        """Forget the cluster (on resignation); the epoch stays for `KafkaController.epoch`."""
        # Registered brokers, shutting-down ones included, with their epochs (czxid).
        self.live_brokers: dict[int, BrokerInfo] = {}
        self.shutting_down_broker_ids: set[int] = set()
        # While a controlled shutdown is processed: the brokers whose ControlledShutdown
        # waits behind it (a preference of its elections only, see controlled_shutdown.py).
        self.leaving_next_broker_ids: set[int] = set()
        self.all_topics: set[str] = set()
        # Each partition's replicas: the full set RS while a reassignment moves it.
        self.partition_assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        # The adding and removing replicas of partitions a reassignment is moving (KIP-455).
        self.reassignment_states: dict[TopicPartition, ReplicaAssignment] = {}
        # Kafka's partitionsBeingReassigned: reassignments not finished yet (a cancelled one
        # included, until its original replicas are all back in the ISR).
        self.partitions_being_reassigned: set[TopicPartition] = set()
        # Kafka's topic ids (KIP-516), from `/brokers/topics/<t>`.
        self.topic_ids: dict[str, str] = {}
        self.partition_leadership: dict[TopicPartition, LeaderAndIsr] = {}
        # The states this controller wrote while processing the current event (cleared at
        # each event): a replica of a dead broker left out of one of them cannot be back in
        # its ISR yet (a leader adds only a replica that fetches).
        self.written_in_event: set[TopicPartition] = set()
        self.topics_to_be_deleted: set[str] = set()
        self.topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()
        self.replica_deletion_states: dict[PartitionAndReplica, ReplicaDeletionState] = {}

    # --- brokers ---------------------------------------------------------------------------

    @property
    def live_broker_ids(self) -> set[int]:
        """Brokers that may lead or join an ISR: registered and not shutting down (Kafka's
        `liveBrokerIds`)."""
        return set(self.live_brokers) - self.shutting_down_broker_ids

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        """Brokers the controller still sends requests to."""
        return set(self.live_brokers)

    def broker_epoch(self, broker_id: int) -> int:
        info = self.live_brokers.get(broker_id)
        return -1 if info is None else info.epoch

    def is_replica_online(self, broker_id: int, include_shutting_down: bool = False) -> bool:
        if include_shutting_down:
            return broker_id in self.live_brokers
        return broker_id in self.live_brokers and broker_id not in self.shutting_down_broker_ids

    def add_live_brokers(self, brokers: Iterable[BrokerInfo]) -> None:
        for broker in brokers:
            self.live_brokers[broker.id] = broker

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self.live_brokers.pop(broker_id, None)

    # --- topics and partitions -------------------------------------------------------------

    def set_assignment(
        self, topic: str, assignment: Mapping[int, Sequence[int] | ReplicaAssignment]
    ) -> None:
        self.all_topics.add(topic)
        self.partition_assignments[topic] = {}
        for p, replicas in assignment.items():
            full = (
                replicas
                if isinstance(replicas, ReplicaAssignment)
                else ReplicaAssignment.of(replicas)
            )
            self.update_full_replica_assignment(TopicPartition(topic, p), full)

    def full_replica_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """The replicas with a reassignment's adding and removing ones (Kafka's
        `partitionFullReplicaAssignment`)."""
        state = self.reassignment_states.get(tp)
        return state if state is not None else ReplicaAssignment.of(self.partition_replicas(tp))

    def full_topic_assignment(self, topic: str) -> dict[int, ReplicaAssignment]:
        """A topic's partitions as `/brokers/topics/<t>` holds them."""
        return {
            tp.partition: self.full_replica_assignment(tp)
            for tp in self.partitions_for_topic(topic)
        }

    def update_full_replica_assignment(self, tp: TopicPartition, full: ReplicaAssignment) -> None:
        self.partition_assignments.setdefault(tp.topic, {})[tp.partition] = full.replicas
        if full.is_being_reassigned:
            self.reassignment_states[tp] = full
        else:
            self.reassignment_states.pop(tp, None)

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic entirely (Kafka's `removeTopic`)."""
        self.all_topics.discard(topic)
        self.topic_ids.pop(topic, None)
        for p in self.partition_assignments.pop(topic, {}):
            tp = TopicPartition(topic, p)
            self.partition_leadership.pop(tp, None)
            self.reassignment_states.pop(tp, None)
            self.partitions_being_reassigned.discard(tp)
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)
        for r in [r for r in self.replica_deletion_states if r.tp.topic == topic]:
            del self.replica_deletion_states[r]

    def has_partition(self, tp: TopicPartition) -> bool:
        return tp.partition in self.partition_assignments.get(tp.topic, {})

    def partition_replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        """Assigned replicas, preferred first; () for an unknown partition."""
        return self.partition_assignments.get(tp.topic, {}).get(tp.partition, ())

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.partition_assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartition]:
        return [
            tp for t in sorted(self.partition_assignments) for tp in self.partitions_for_topic(t)
        ]

    def offline_partition_count(self) -> int:
        """Kafka's OfflinePartitionsCount: partitions without a live leader, those of topics
        queued for deletion left out."""
        live = self.live_or_shutting_down_broker_ids
        return sum(
            1
            for tp, leadership in self.partition_leadership.items()
            if leadership.leader not in live and tp.topic not in self.topics_to_be_deleted
        )

    def preferred_replica_imbalance_count(self) -> int:
        """Kafka's PreferredReplicaImbalanceCount: partitions whose leader is not their
        preferred (first assigned) replica, topics queued for deletion left out."""
        return sum(
            1
            for tp, leadership in self.partition_leadership.items()
            if tp.topic not in self.topics_to_be_deleted
            and self.partition_replicas(tp)[:1] != (leadership.leader,)
        )

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.partition_replicas(tp)]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        ids = set(broker_ids)
        return [
            PartitionAndReplica(tp, r)
            for tp in self.all_partitions()
            for r in self.partition_replicas(tp)
            if r in ids
        ]

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return [
            PartitionAndReplica(tp, r)
            for tp in self.partitions_for_topic(topic)
            for r in self.partition_replicas(tp)
        ]

    def offline_replicas(self, tp: TopicPartition) -> list[int]:
        """Assigned replicas that are not online (shutting-down brokers count as offline, as in
        Kafka's UpdateMetadata)."""
        return [r for r in self.partition_replicas(tp) if not self.is_replica_online(r)]

    def sorted_partitions(self, tps: Iterable[TopicPartition]) -> list[TopicPartition]:
        return _sorted_tps(tps)

    # --- topic deletion ----------------------------------------------------------------------

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def replica_deletion_state(self, replica: PartitionAndReplica) -> ReplicaDeletionState | None:
        return self.replica_deletion_states.get(replica)

    def are_all_replicas_in_state(self, topic: str, state: ReplicaDeletionState) -> bool:
        return all(
            self.replica_deletion_states.get(r) is state for r in self.replicas_for_topic(topic)
        )

    def is_any_replica_in_state(self, topic: str, state: ReplicaDeletionState) -> bool:
        return any(
            self.replica_deletion_states.get(r) is state for r in self.replicas_for_topic(topic)
        )

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return self.is_any_replica_in_state(topic, ReplicaDeletionState.STARTED)

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return (
            topic in self.topics_to_be_deleted
            and not self.is_topic_deletion_in_progress(topic)
            and topic not in self.topics_ineligible_for_deletion
        )
