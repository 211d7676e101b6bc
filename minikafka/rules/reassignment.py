"""Partition reassignment (KIP-455), the pure parts: Kafka's `ReplicaAssignment` and the
rules the controller applies to a reassignment before and while it runs.

A partition being moved from its original replicas ORS to target replicas TRS is assigned
the full set RS = TRS + ORS (target first, duplicates dropped), with
adding = RS - ORS and removing = RS - TRS. Every replica of RS fetches while the move
runs; once all of TRS is in the ISR the leader moves into TRS if it must, the removing
replicas go offline and are deleted, and the assignment becomes TRS. The controller keeps
these three lists in `/brokers/topics/<t>` (`adding_replicas`, `removing_replicas`), so a
new controller resumes the move where the old one left it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from minikafka.common import TopicPartition
from minikafka.rules.election import ElectionResult


def _distinct(replicas: Sequence[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(replicas))


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas (RS), and those being added and removed by a reassignment."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @staticmethod
    def of(replicas: Sequence[int]) -> ReplicaAssignment:
        return ReplicaAssignment(tuple(replicas))

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """TRS: where the partition is going (RS itself when nothing moves)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """ORS: where the partition was before the reassignment."""
        return tuple(r for r in self.replicas if r not in self.adding)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """Kafka's `reassignTo`: a move from the original replicas to `target`. A partition
        already moving starts again from its origin, so a new target replaces the old one,
        and the origin as target cancels the move."""
        origin = self.origin_replicas
        full = _distinct([*target, *origin])
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )


@dataclass(frozen=True, slots=True)
class InvalidReassignment:
    """Why a target replica list is refused (Kafka's INVALID_REPLICA_ASSIGNMENT)."""

    message: str


def validate_target_replicas(
    current: ReplicaAssignment, target: Sequence[int], live_broker_ids: Collection[int]
) -> InvalidReassignment | None:
    """Kafka's `KafkaController.validateReplicas`: a non-empty list of distinct,
    non-negative broker ids, the replicas it adds all on live brokers."""
    if not target:
        return InvalidReassignment("Empty replica list specified in partition reassignment.")
    if len(set(target)) != len(target):
        return InvalidReassignment(
            f"Duplicate replica ids in partition reassignment replica list: {_scala_list(target)}"
        )
    if any(r < 0 for r in target):
        return InvalidReassignment(f"Invalid broker id in replica list: {_scala_list(target)}")
    adding = current.reassign_to(target).adding
    if not set(adding) <= set(live_broker_ids):
        live = ", ".join(str(b) for b in sorted(live_broker_ids))
        return InvalidReassignment(
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{_scala_list(adding)}, live broker list: Set({live})"
        )
    return None


def is_reassignment_complete(assignment: ReplicaAssignment, isr: Collection[int]) -> bool:
    """Kafka's `isReassignmentComplete`: every target replica is in the ISR."""
    return set(assignment.target_replicas) <= set(isr)


def reassign_partition_leader_election(
    target: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> ElectionResult | None:
    """Kafka's `reassignPartitionLeaderElection`: the first target replica that is live and
    in the ISR leads; the ISR is unchanged (the removed replicas leave it next)."""
    for replica in target:
        if replica in live and replica in isr:
            return ElectionResult(replica, tuple(isr))
    return None


def drain_plan(
    assignments: Mapping[TopicPartition, Sequence[int]], broker: int, brokers: Collection[int]
) -> dict[TopicPartition, tuple[int, ...]]:
    """Targets that move every replica off `broker` (to retire it): each of its replicas
    is replaced, in its place in the list, by the other broker holding the fewest replicas
    so far that is not a replica of the partition already (the lowest id on a tie), so the
    load spreads evenly. ValueError naming a partition with more replicas than there are
    other brokers."""
    others = sorted(b for b in brokers if b != broker)
    load = Counter({b: 0 for b in others})
    for replicas in assignments.values():
        load.update(r for r in replicas if r in load)
    plan: dict[TopicPartition, tuple[int, ...]] = {}
    for tp in sorted(assignments, key=lambda tp: (tp.topic, tp.partition)):
        replicas = tuple(assignments[tp])
        if broker not in replicas:
            continue
        candidates = [b for b in others if b not in replicas]
        if not candidates:
            raise ValueError(
                f"partition {tp} has {len(replicas)} replicas and there are only "
                f"{len(others)} other brokers to hold them"
            )
        pick = min(candidates, key=lambda b: (load[b], b))
        load[pick] += 1
        plan[tp] = tuple(pick if r == broker else r for r in replicas)
    return plan


def _scala_list(replicas: Sequence[int]) -> str:
    """A list as Kafka's messages print a Scala Seq."""
    return f"List({', '.join(str(r) for r in replicas)})"


__all__ = [
    "InvalidReassignment",
    "ReplicaAssignment",
    "drain_plan",
    "is_reassignment_complete",
    "reassign_partition_leader_election",
    "validate_target_replicas",
]
