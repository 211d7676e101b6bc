"""Chaos runs: the history a workload records and the checker that judges it.

`history` is the event model (plain dataclasses, JSON round-trip); `checker.check` counts
acknowledged, in-doubt, lost, unseen, duplicate and moved values, divergence, epoch
violations, ISR changes and unavailability per fault, as Jepsen and Kafka's system tests do,
and, for the group workload, records a consumer group committed past without delivering.
"""

from minikafka.chaos.checker import CheckResult, check
from minikafka.chaos.history import (
    AssignmentChange,
    ConsumerRead,
    ControllerObservation,
    DrainedPartition,
    FaultWindow,
    GroupAssignment,
    GroupCommit,
    GroupOffsetRead,
    GroupRead,
    History,
    IsrObservation,
    LeaderObservation,
    MoveOutcome,
    Outcome,
    PartitionMove,
    ProduceAttempt,
    ProducerMode,
    ReplicaLog,
)

__all__ = [
    "AssignmentChange",
    "CheckResult",
    "ConsumerRead",
    "ControllerObservation",
    "DrainedPartition",
    "FaultWindow",
    "GroupAssignment",
    "GroupCommit",
    "GroupOffsetRead",
    "GroupRead",
    "History",
    "IsrObservation",
    "LeaderObservation",
    "MoveOutcome",
    "Outcome",
    "PartitionMove",
    "ProduceAttempt",
    "ProducerMode",
    "ReplicaLog",
    "check",
]
