"""Leader election strategies (design §8.4), as pure functions.

Kafka's `PartitionLeaderElectionAlgorithms` plus the ISR each caller in its
`PartitionStateMachine` writes alongside the new leader. No I/O: the controller
reads the state znode, calls one of these, and writes the result conditionally
on the znode's version (leader epoch + 1). `None` means no replica may lead:
the caller writes leader = -1 and the partition stays offline.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import IntEnum

from minikafka.common import NO_LEADER


class ElectionType(IntEnum):
    """What an admin's ElectLeaders asks for (KIP-460): Kafka's `ElectionType`, by its
    wire values."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """The elected leader and the ISR to write with it; `unclean` if the leader was not in the ISR."""

    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_partition_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    unclean_leader_election_enable: bool,
) -> ElectionResult | None:
    """The leader died (or the partition never had one): Kafka's `offlinePartitionLeaderElection`.

    Prefer the first live ISR member in assignment order, since only ISR members are
    guaranteed to hold every committed record; the ISR loses its dead members. With
    `unclean.leader.election.enable` availability beats durability: any live replica
    may lead, alone in its ISR, and records it lacks are lost.
    """
    for replica in assignment:
        if replica in live and replica in isr:
            return ElectionResult(replica, tuple(r for r in isr if r in live))
    if unclean_leader_election_enable:
        for replica in assignment:
            if replica in live:
                return ElectionResult(replica, (replica,), unclean=True)
    return None


def preferred_replica_election(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> ElectionResult | None:
    """Move leadership back to the first assigned replica: Kafka's `preferredReplicaPartitionLeaderElection`.

    Assignment spreads first replicas evenly, so this restores balanced leadership.
    Only safe if that replica is live and caught up (in the ISR); the ISR is unchanged.
    """
    if assignment and assignment[0] in live and assignment[0] in isr:
        return ElectionResult(assignment[0], tuple(isr))
    return None


def controlled_shutdown_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
    leaving_next: Collection[int] = (),
) -> ElectionResult | None:
    """Move leadership off brokers that are shutting down: Kafka's `controlledShutdownPartitionLeaderElection`.

    The new leader is the first live ISR member that is staying; the leaving brokers
    drop out of the ISR so that acks=all writes stop waiting for them.

    `leaving_next`: brokers whose own controlled shutdown is already asked for. One of them
    leads only if no other member can (Kafka takes the first in assignment order), so that
    stopping several brokers at once moves a partition once, not once per broker.
    """
    candidates = [r for r in assignment if r in live and r in isr and r not in shutting_down]
    staying = [r for r in candidates if r not in leaving_next]
    chosen = staying or candidates
    if not chosen:
        return None
    return ElectionResult(chosen[0], tuple(r for r in isr if r not in shutting_down))


def new_partition_election(
    assignment: Sequence[int], live: Collection[int]
) -> ElectionResult | None:
    """Elect the first leader of a new partition: Kafka's `NewPartition -> OnlinePartition` transition.

    Every replica's log is empty, so every live replica is in sync and any may lead;
    the first live one in assignment order does (the preferred replica when it is up).
    """
    live_replicas = tuple(r for r in assignment if r in live)
    if not live_replicas:
        return None
    return ElectionResult(live_replicas[0], live_replicas)


def election_needed(
    election_type: ElectionType, assignment: Sequence[int], leader: int, live: Collection[int]
) -> bool:
    """Whether an admin's election of this type would change anything: Kafka's
    `processReplicaLeaderElection` splits electable partitions from those whose leader is
    already valid (ELECTION_NOT_NEEDED). A preferred election is needed while the preferred
    replica does not lead; an unclean one only while no live broker leads, so that it never
    replaces a working leader."""
    if election_type is ElectionType.PREFERRED:
        return not assignment or leader != assignment[0]
    return leader == NO_LEADER or leader not in live
