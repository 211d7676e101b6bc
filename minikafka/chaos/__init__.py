"""Chaos runs: the history a workload records and the checker that judges it.

`history` is the event model (plain dataclasses, JSON round-trip); `checker.check` counts
acknowledged, in-doubt, lost, unseen, duplicate and moved values, divergence, epoch
violations, ISR changes and unavailability per fault, as Jepsen and Kafka's system tests do.
"""

from minikafka.chaos.checker import CheckResult, check
from minikafka.chaos.history import (
    ConsumerRead,
    ControllerObservation,
    DrainedPartition,
    FaultWindow,
    History,
    IsrObservation,
    LeaderObservation,
    Outcome,
    ProduceAttempt,
    ReplicaLog,
)

__all__ = [
    "CheckResult",
    "ConsumerRead",
    "ControllerObservation",
    "DrainedPartition",
    "FaultWindow",
    "History",
    "IsrObservation",
    "LeaderObservation",
    "Outcome",
    "ProduceAttempt",
    "ReplicaLog",
    "check",
]
