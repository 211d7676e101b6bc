"""What the controller's event task handles: Kafka's `ControllerEvent`s.

ZooKeeper watches, timers, responses and API calls do not act: they put one of these on the
controller's queue (`event_manager.py`), and `KafkaController` handles it on its one task.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.rules.election import ElectionType
from minikafka.rules.reassignment import ReplicaAssignment


class ControllerEvent:
    """Something the controller's event task must handle (Kafka's `ControllerEvent`)."""

    def __repr__(self) -> str:
        return type(self).__name__

    def fail(self, error: Exception) -> None:
        """The event was not processed, or failed: answer whoever waits for it (Kafka's
        `preempt`). Only API calls wait; events from watches and timers have nobody."""


class Startup(ControllerEvent):
    """Watch `/controller` and try to become controller."""


class Reelect(ControllerEvent):
    """`/controller` was deleted: resign if we were controller, then run the election."""


class ControllerChange(ControllerEvent):
    """`/controller` was created or changed: resign if it no longer names us."""


class RegisterBrokerAndReelect(ControllerEvent):
    """A new ZooKeeper session (the broker registered itself again): re-run the election."""


class Expire(ControllerEvent):
    """The ZooKeeper session expired: `/controller`, if ours, is gone; resign."""


class BrokerChange(ControllerEvent):
    """Children of `/brokers/ids` changed."""


class TopicChange(ControllerEvent):
    """Children of `/brokers/topics` changed."""


class TopicDeletion(ControllerEvent):
    """Children of `/admin/delete_topics` changed."""


@dataclass(repr=False)
class PartitionModifications(ControllerEvent):
    """`/brokers/topics/<topic>` (its assignment) changed: Kafka's PartitionModifications,
    from its PartitionModificationsHandler. Partitions added by an admin get created."""

    topic: str

    def __repr__(self) -> str:
        return f"PartitionModifications({self.topic})"


class IsrChangeNotification(ControllerEvent):
    """Children of `/isr_change_notification` changed."""


class PreferredReplicaLeaderElection(ControllerEvent):
    """`/admin/preferred_replica_election` was created."""


class UncleanLeaderElectionEnable(ControllerEvent):
    """`unclean.leader.election.enable` became true (a topic's, or the brokers' dynamic
    default): Kafka's UncleanLeaderElectionEnable and TopicUncleanLeaderElectionEnable, which
    try the offline partitions again."""


class ZkPartitionReassignment(ControllerEvent):
    """`/admin/reassign_partitions` was created."""


@dataclass(repr=False)
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed (its leader wrote a new ISR):
    Kafka's PartitionReassignmentIsrChange."""

    tp: TopicPartition

    def __repr__(self) -> str:
        return f"PartitionReassignmentIsrChange({self.tp})"


@dataclass(repr=False)
class ApiPartitionReassignment(ControllerEvent):
    """AlterPartitionReassignments: target replicas per partition (None cancels); `result`
    gets an error code and message per partition."""

    reassignments: dict[TopicPartition, tuple[int, ...] | None]
    result: asyncio.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def fail(self, error: Exception) -> None:
        if not self.result.done():
            self.result.set_exception(error)


@dataclass(repr=False)
class ListPartitionReassignments(ControllerEvent):
    """ListPartitionReassignments: the named partitions (None: all) that are moving."""

    partitions: list[TopicPartition] | None
    result: asyncio.Future[dict[TopicPartition, ReplicaAssignment]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def fail(self, error: Exception) -> None:
        if not self.result.done():
            self.result.set_exception(error)


class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The leader-imbalance timer fired."""


@dataclass(repr=False)
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    """A broker answered StopReplica(delete_partition=True) for a topic being deleted."""

    broker_id: int
    partitions: list[TopicPartition]
    response: object  # StopReplicaResponse, or the error the request failed with
    controller_epoch: int  # of the controller that sent the request


@dataclass(repr=False)
class ControlledShutdown(ControllerEvent):
    """A broker asks to have leadership moved off it; `result` gets the partitions it
    still leads, or the error."""

    broker_id: int
    broker_epoch: int
    result: asyncio.Future[list[TopicPartition]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def fail(self, error: Exception) -> None:
        if not self.result.done():
            self.result.set_exception(error)


@dataclass(frozen=True, slots=True)
class ApiError:
    """A partition's error in an API's answer: Kafka's `ApiError`."""

    code: ErrorCode
    message: str | None = None


@dataclass(repr=False)
class ReplicaLeaderElection(ControllerEvent):
    """An admin's ElectLeaders (Kafka's ReplicaLeaderElection triggered by the admin client):
    `result` gets, for each partition asked, the leader elected or why none was."""

    partitions: frozenset[TopicPartition]
    election_type: ElectionType
    result: asyncio.Future[dict[TopicPartition, int | ApiError]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def __repr__(self) -> str:
        return (
            f"ReplicaLeaderElection({self.election_type.name}, {len(self.partitions)} partitions)"
        )

    def fail(self, error: Exception) -> None:
        if not self.result.done():
            self.result.set_exception(error)


__all__ = [
    "ApiError",
    "ApiPartitionReassignment",
    "AutoPreferredReplicaLeaderElection",
    "BrokerChange",
    "ControlledShutdown",
    "ControllerChange",
    "ControllerEvent",
    "Expire",
    "IsrChangeNotification",
    "ListPartitionReassignments",
    "PartitionModifications",
    "PartitionReassignmentIsrChange",
    "PreferredReplicaLeaderElection",
    "Reelect",
    "RegisterBrokerAndReelect",
    "ReplicaLeaderElection",
    "Startup",
    "TopicChange",
    "TopicDeletion",
    "TopicDeletionStopReplicaResponseReceived",
    "UncleanLeaderElectionEnable",
    "ZkPartitionReassignment",
]
