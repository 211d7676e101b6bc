"""Replica assignment for new topics and partitions (design §10), pure.

The seeds' rule: sort the brokers, and partition i's replica j goes to broker
`(i + j + start_index) mod n`. Consecutive partitions start one broker further on,
so first replicas (preferred leaders) are spread evenly. Kafka's
`AdminUtils.assignReplicasToBrokersRackUnaware` also picks a random start index
(reproducible here with a seed) and shifts followers on larger clusters; the shift
is left out. With `broker.rack` on every broker, Kafka's rack-aware placement instead
(`assign_replicas_rack_aware`, below), whose examples and properties it is tested against.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

from minikafka.protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    KafkaError,
    UnknownTopicOrPartitionError,
)


def assign_replicas(
    broker_ids: Collection[int],
    num_partitions: int,
    replication_factor: int,
    *,
    start_partition: int = 0,
    start_index: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Replica lists for partitions `start_partition .. start_partition + num_partitions - 1`.

    `start_partition` > 0 adds partitions to an existing topic: the rule uses the
    partition id, so new partitions continue the existing rotation.
    """
    if num_partitions < 1:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if start_partition < 0:
        raise InvalidPartitionsError(f"Start partition must not be negative: {start_partition}.")
    if replication_factor < 1:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    brokers = sorted(set(broker_ids))
    n = len(brokers)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {n}."
        )
    return {
        p: tuple(brokers[(p + j + start_index) % n] for j in range(replication_factor))
        for p in range(start_partition, start_partition + num_partitions)
    }


def random_start_index(n_brokers: int, seed: int | None) -> int:
    """Kafka's random first broker, in `0 .. n_brokers - 1`; a seed makes it reproducible.

    0 when there are no brokers, so that `assign_replicas` reports the real error.
    """
    if n_brokers < 1:
        return 0
    return random.Random(seed).randrange(n_brokers)


def validate_manual_assignment(
    assignment: Mapping[int, Sequence[int]], live_or_known_brokers: Collection[int]
) -> None:
    """Reject a user-supplied assignment Kafka would reject (`INVALID_REPLICA_ASSIGNMENT`)."""
    if not assignment:
        raise InvalidReplicaAssignmentError(
            "Replica assignment must contain at least one partition."
        )
    if set(assignment) != set(range(len(assignment))):
        raise InvalidReplicaAssignmentError(
            f"Partitions should be a consecutive 0-based integer sequence, got {sorted(assignment)}."
        )
    replication_factor = len(assignment[0])
    for partition in sorted(assignment):
        replicas = assignment[partition]
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Replica assignment for partition {partition} is empty."
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"Duplicate replica assignment for partition {partition}: {list(replicas)}."
            )
        if len(replicas) != replication_factor:
            raise InvalidReplicaAssignmentError(
                f"Inconsistent replication factor between partitions: partition 0 has"
                f" {replication_factor} while partition {partition} has {len(replicas)}."
            )
        unknown = sorted(set(replicas) - set(live_or_known_brokers))
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"Unknown broker(s) in replica assignment for partition {partition}: {unknown}."
            )


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in ids)


def new_partitions_assignment(
    topic: str,
    existing: Mapping[int, Sequence[int]],
    broker_ids: Collection[int],
    total_count: int,
    new_assignments: Sequence[Sequence[int]] | None = None,
    *,
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, tuple[int, ...]]:
    """The replicas of the partitions that take `topic` from `existing` to `total_count`
    partitions, or Kafka's error for the request: its `ZkAdminManager.createPartitions`
    checks, then `AdminZkClient.createNewPartitionsAssignment`.

    `broker_ids` are the registered brokers, `racks` their `broker.rack`s. `new_assignments`
    lists the replicas of each new partition in order (partition `len(existing)` first);
    without it the new partitions continue the topic's rotation: `assign_replicas_to_brokers`
    from the first broker whose id is at least partition 0's first replica (its index in
    the brokers sorted by id, the start index and replica shift both, as in Kafka), counting
    partitions from `len(existing)`.
    """
    if not existing:
        raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
    old = len(existing)
    increment = total_count - old
    if increment < 0:
        raise InvalidPartitionsError(
            f"Topic currently has {old} partitions, which is higher than the requested "
            f"{total_count}."
        )
    if increment == 0:
        raise InvalidPartitionsError(f"Topic already has {old} partitions.")
    brokers = sorted(set(broker_ids))
    if new_assignments is not None:
        unknown = sorted({b for replicas in new_assignments for b in replicas} - set(brokers))
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"Unknown broker(s) in replica assignment: {_ids(unknown)}."
            )
        if len(new_assignments) != increment:
            raise InvalidReplicaAssignmentError(
                f"Increasing the number of partitions by {increment} but "
                f"{len(new_assignments)} assignments provided."
            )
    partition0 = existing.get(0)
    if not partition0:
        # Kafka's AdminOperationException, answered as UNKNOWN_SERVER_ERROR.
        raise KafkaError(
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
            f"missing. Assignment: {dict(existing)}"
        )
    replication_factor = len(partition0)
    if new_assignments is None:
        start_index = next((i for i, b in enumerate(brokers) if b >= partition0[0]), 0)
        return assign_replicas_to_brokers(
            {b: (racks or {}).get(b) for b in brokers},
            increment,
            replication_factor,
            start_partition=old,
            fixed_start_index=start_index,
        )
    proposed = {old + i: tuple(replicas) for i, replicas in enumerate(new_assignments)}
    for partition, replicas in proposed.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {partition}."
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                "Duplicate brokers not allowed in replica assignment: "
                f"{_ids(replicas)} for partition id {partition}."
            )
    bad = {p: len(r) for p, r in proposed.items() if len(r) != replication_factor}
    if bad:
        raise InvalidReplicaAssignmentError(
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{replication_factor} while partitions [{_ids(bad)}] have replication factors "
            f"[{_ids(bad.values())}], respectively."
        )
    return proposed


# --- rack-aware placement (broker.rack) --------------------------------------------------


def rack_alternated_brokers(broker_racks: Mapping[int, str]) -> list[int]:
    """Kafka's `AdminUtils.getRackAlternatedBrokerList`: the brokers taken one rack at a
    time, racks in name order, each rack's brokers in id order; e.g. racks {0: r1, 1: r3,
    2: r3, 3: r2, 4: r2, 5: r1} give [0, 3, 1, 5, 4, 2]."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(broker_racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    out: list[int] = []
    depth = 0
    while len(out) < len(broker_racks):
        out += [brokers[depth] for brokers in queues if depth < len(brokers)]
        depth += 1
    return out


def _replica_index(first: int, second_replica_shift: int, replica: int, n: int) -> int:
    """Kafka's `AdminUtils.replicaIndex`: the followers' positions, never the leader's."""
    return (first + 1 + (second_replica_shift + replica) % (n - 1)) % n


def assign_replicas_rack_aware(
    broker_racks: Mapping[int, str],
    num_partitions: int,
    replication_factor: int,
    *,
    start_partition: int = 0,
    start_index: int = 0,
    replica_shift: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Kafka's `AdminUtils.assignReplicasToBrokersRackAware`, for brokers that all have a
    rack: leaders walk the rack-alternated broker list from `start_index`, so consecutive
    partitions lead on different racks; each follower is the next broker (from a shift that
    grows once per round of the list) on a rack without a replica of the partition yet, and
    not holding one, until every rack (then every broker) has one. So with a replication
    factor no larger than the number of racks, a partition's replicas are on different racks.
    Kafka draws `start_index` and `replica_shift` at random (`random_start_index`); given,
    the assignment is reproducible."""
    if num_partitions < 1:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor < 1:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    brokers = rack_alternated_brokers(broker_racks)
    n = len(brokers)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {n}."
        )
    num_racks = len(set(broker_racks.values()))
    out: dict[int, tuple[int, ...]] = {}
    shift = replica_shift
    for partition in range(max(0, start_partition), max(0, start_partition) + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        leader = brokers[first]
        replicas = [leader]
        racks = {broker_racks[leader]}
        k = 0
        while len(replicas) < replication_factor:
            broker = brokers[_replica_index(first, shift * num_racks, k, n)]
            rack = broker_racks[broker]
            k += 1
            # Skip a rack that has a replica while another has none, and a broker that has
            # one while another has none.
            if (rack not in racks or len(racks) == num_racks) and (
                broker not in replicas or len(replicas) == n
            ):
                replicas.append(broker)
                racks.add(rack)
        out[partition] = tuple(replicas)
    return out


class AdminOperationError(KafkaError):
    """Kafka's AdminOperationException: not an ApiException, so the request's answer is
    UNKNOWN_SERVER_ERROR (with no message: Kafka's `ApiError.fromThrowable`)."""


MIXED_RACKS: Final = "Not all brokers have rack information for replica rack aware assignment."


def assign_replicas_to_brokers(
    broker_racks: Mapping[int, str | None],
    num_partitions: int,
    replication_factor: int,
    *,
    start_partition: int = 0,
    fixed_start_index: int | None = None,
    seed: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Kafka's `AdminUtils.assignReplicasToBrokers`: brokers without racks get the
    rack-unaware placement (`assign_replicas`), brokers that all have one the rack-aware
    placement, and a mix of the two is refused (`AdminOperationError`). A
    `fixed_start_index` (adding partitions) is both the start index and the replica shift,
    as in Kafka; without it both are drawn at random (`seed` makes them reproducible)."""
    if num_partitions < 1:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor < 1:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    n = len(broker_racks)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {n}."
        )
    racks = {b: r for b, r in broker_racks.items() if r is not None}
    if not racks:
        start = fixed_start_index if fixed_start_index is not None else random_start_index(n, seed)
        return assign_replicas(
            broker_racks,
            num_partitions,
            replication_factor,
            start_partition=start_partition,
            start_index=start,
        )
    if len(racks) < n:
        raise AdminOperationError(MIXED_RACKS)
    if fixed_start_index is not None:
        start = shift = fixed_start_index
    else:
        rng = random.Random(seed)
        start, shift = rng.randrange(n), rng.randrange(n)
    return assign_replicas_rack_aware(
        racks,
        num_partitions,
        replication_factor,
        start_partition=start_partition,
        start_index=start,
        replica_shift=shift,
    )
